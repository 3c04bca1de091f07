output "controller_role_arn" {
  description = "ARN of the controller's IAM role."
  value       = aws_iam_role.controller.arn
}

output "controller_role_name" {
  description = "Name of the controller's IAM role."
  value       = aws_iam_role.controller.name
}

output "controller_policy_arns" {
  description = "The controller's managed policies, by part (NodeLifecycle, IAMIntegration, EKSIntegration, Interruption, ResourceDiscovery)."
  value       = { for k, p in aws_iam_policy.controller : k => p.arn }
}

output "node_iam_role_name" {
  description = "Name of the node role: put it in EC2NodeClass spec.role."
  value       = local.node_role_ref
}

output "node_iam_role_arn" {
  description = "ARN of the node role."
  value       = local.node_role_arn
}

output "instance_profile_name" {
  description = "The node instance profile (create_instance_profile), for EC2NodeClass spec.instanceProfile."
  value       = var.create_instance_profile ? aws_iam_instance_profile.node[0].name : null
}

output "node_access_entry_arn" {
  description = "ARN of the nodes' EKS access entry."
  value       = var.create_access_entry ? aws_eks_access_entry.node[0].access_entry_arn : null
}

output "queue_name" {
  description = "The interruption queue's NAME: the chart's settings.interruptionQueue."
  value       = var.enable_interruption_handling ? aws_sqs_queue.interruption[0].name : null
}

output "queue_arn" {
  description = "ARN of the interruption queue."
  value       = var.enable_interruption_handling ? aws_sqs_queue.interruption[0].arn : null
}

output "queue_url" {
  description = "URL of the interruption queue."
  value       = var.enable_interruption_handling ? aws_sqs_queue.interruption[0].url : null
}

output "event_rules" {
  description = "The EventBridge rules feeding the queue, by kind."
  value       = { for k, r in aws_cloudwatch_event_rule.interruption : k => r.arn }
}

output "namespace" {
  description = "Namespace to install the chart in."
  value       = var.namespace
}

output "service_account" {
  description = "The controller's ServiceAccount."
  value       = var.service_account
}

output "helm_values" {
  description = "Values for `helm install dovetail charts/dovetail -f <(tofu output -json helm_values)`."
  value = {
    settings = {
      clusterName       = var.cluster_name
      interruptionQueue = var.enable_interruption_handling ? aws_sqs_queue.interruption[0].name : ""
    }
    serviceAccount = {
      name        = var.service_account
      annotations = var.enable_irsa ? { "eks.amazonaws.com/role-arn" = aws_iam_role.controller.arn } : {}
    }
  }
}
