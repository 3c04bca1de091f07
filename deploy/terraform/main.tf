data "aws_partition" "current" {}
data "aws_region" "current" {}
data "aws_caller_identity" "current" {}

locals {
  partition  = data.aws_partition.current.partition
  region     = data.aws_region.current.name
  account_id = data.aws_caller_identity.current.account_id
  dns_suffix = data.aws_partition.current.dns_suffix

  queue_name = var.queue_name != "" ? var.queue_name : var.cluster_name

  node_role_name = var.node_iam_role_name != "" ? var.node_iam_role_name : substr("dovetail-node-${var.cluster_name}", 0, 64)
  node_role_arn  = var.create_node_iam_role ? aws_iam_role.node[0].arn : var.node_iam_role_arn
  # The last path element of the role's ARN is its name (roles may have paths).
  node_role_ref = var.create_node_iam_role ? aws_iam_role.node[0].name : element(split("/", var.node_iam_role_arn), length(split("/", var.node_iam_role_arn)) - 1)

  # The controller's policies: docs/iam's generated documents (copied into
  # ./iam, checked by the module's test), filled with templatefile.
  policy_params = {
    AWS_PARTITION      = local.partition
    AWS_REGION         = local.region
    AWS_ACCOUNT_ID     = local.account_id
    CLUSTER_NAME       = var.cluster_name
    NODE_ROLE_NAME     = local.node_role_ref
    INTERRUPTION_QUEUE = local.queue_name
  }
  # Plus, with enable_reboot_for_repair, the RebootForRepair gate's
  # ec2:RebootInstances (iam/gate-RebootForRepair.json).
  controller_policies = merge({
    for f in fileset("${path.module}/iam", "controller-*.json") :
    trimsuffix(trimprefix(f, "controller-"), ".json") => templatefile("${path.module}/iam/${f}", local.policy_params)
    }, var.enable_reboot_for_repair ? {
    RebootForRepair = templatefile("${path.module}/iam/gate-RebootForRepair.json", local.policy_params)
  } : {})

  # The four rules the controller's interruption handler parses.
  event_rules = { for r in jsondecode(file("${path.module}/iam/event-rules.json")) : r.name => r }

  oidc_issuer = var.enable_irsa ? replace(var.irsa_oidc_provider_arn, "/^arn:[^:]+:iam::[0-9]+:oidc-provider\\//", "") : ""
}

# ---- The controller's role -------------------------------------------------

data "aws_iam_policy_document" "controller_trust" {
  dynamic "statement" {
    for_each = var.enable_pod_identity ? [1] : []
    content {
      sid     = "EKSPodIdentity"
      effect  = "Allow"
      actions = ["sts:AssumeRole", "sts:TagSession"]
      principals {
        type        = "Service"
        identifiers = ["pods.eks.amazonaws.com"]
      }
    }
  }

  dynamic "statement" {
    for_each = var.enable_irsa ? [1] : []
    content {
      sid     = "IRSA"
      effect  = "Allow"
      actions = ["sts:AssumeRoleWithWebIdentity"]
      principals {
        type        = "Federated"
        identifiers = [var.irsa_oidc_provider_arn]
      }
      condition {
        test     = "StringEquals"
        variable = "${local.oidc_issuer}:sub"
        values   = ["system:serviceaccount:${var.namespace}:${var.service_account}"]
      }
      condition {
        test     = "StringEquals"
        variable = "${local.oidc_issuer}:aud"
        values   = ["sts.amazonaws.com"]
      }
    }
  }
}

resource "aws_iam_role" "controller" {
  name_prefix        = var.controller_role_name_prefix
  description        = "dovetail controller of EKS cluster ${var.cluster_name}"
  assume_role_policy = data.aws_iam_policy_document.controller_trust.json
  tags               = var.tags

  lifecycle {
    precondition {
      condition     = var.enable_pod_identity || var.enable_irsa
      error_message = "Enable enable_pod_identity, enable_irsa or both: the controller's role must trust something."
    }
    precondition {
      condition     = !var.enable_irsa || var.irsa_oidc_provider_arn != ""
      error_message = "enable_irsa needs irsa_oidc_provider_arn."
    }
  }
}

resource "aws_iam_policy" "controller" {
  for_each    = local.controller_policies
  name        = "dovetail-${each.key}-${var.cluster_name}"
  description = "dovetail controller: ${each.key} (cluster ${var.cluster_name})"
  policy      = each.value
  tags        = var.tags
}

resource "aws_iam_role_policy_attachment" "controller" {
  for_each   = aws_iam_policy.controller
  role       = aws_iam_role.controller.name
  policy_arn = each.value.arn
}

resource "aws_eks_pod_identity_association" "controller" {
  count           = var.enable_pod_identity ? 1 : 0
  cluster_name    = var.cluster_name
  namespace       = var.namespace
  service_account = var.service_account
  role_arn        = aws_iam_role.controller.arn
  tags            = var.tags
}

# ---- The node role ---------------------------------------------------------

data "aws_iam_policy_document" "node_trust" {
  statement {
    effect  = "Allow"
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.${local.dns_suffix}"]
    }
  }
}

resource "aws_iam_role" "node" {
  count              = var.create_node_iam_role ? 1 : 0
  name               = local.node_role_name
  description        = "Nodes dovetail launches for EKS cluster ${var.cluster_name}"
  assume_role_policy = data.aws_iam_policy_document.node_trust.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "node" {
  for_each = var.create_node_iam_role ? toset(concat([
    "arn:${local.partition}:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:${local.partition}:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    var.cluster_ip_family == "ipv6" ? "arn:${local.partition}:iam::${local.account_id}:policy/AmazonEKS_CNI_IPv6_Policy" : "arn:${local.partition}:iam::aws:policy/AmazonEKS_CNI_Policy",
  ], var.node_iam_role_additional_policies)) : toset([])
  role       = aws_iam_role.node[0].name
  policy_arn = each.value
}

resource "aws_iam_instance_profile" "node" {
  count = var.create_instance_profile ? 1 : 0
  name  = substr("dovetail-${var.cluster_name}", 0, 128)
  role  = local.node_role_ref
  tags  = var.tags
}

resource "aws_eks_access_entry" "node" {
  count         = var.create_access_entry ? 1 : 0
  cluster_name  = var.cluster_name
  principal_arn = local.node_role_arn
  type          = "EC2_LINUX"
  tags          = var.tags
}

# ---- Interruption queue and rules ------------------------------------------

resource "aws_sqs_queue" "interruption" {
  count                             = var.enable_interruption_handling ? 1 : 0
  name                              = local.queue_name
  message_retention_seconds         = 300
  sqs_managed_sse_enabled           = var.queue_kms_master_key_id == "" ? true : null
  kms_master_key_id                 = var.queue_kms_master_key_id == "" ? null : var.queue_kms_master_key_id
  kms_data_key_reuse_period_seconds = var.queue_kms_master_key_id == "" ? null : 300
  tags                              = var.tags

  lifecycle {
    precondition {
      condition     = length(local.queue_name) <= 80
      error_message = "The queue name (default the cluster name) is longer than SQS's 80 characters: set queue_name."
    }
  }
}

# Only this account's four rules may send: aws:SourceArn names them and
# aws:SourceAccount the account, so no other account's rule can feed the queue.
data "aws_iam_policy_document" "queue" {
  count = var.enable_interruption_handling ? 1 : 0

  statement {
    sid       = "AllowEventBridgeRulesToSend"
    effect    = "Allow"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.interruption[0].arn]
    principals {
      type        = "Service"
      identifiers = ["events.${local.dns_suffix}"]
    }
    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [for r in aws_cloudwatch_event_rule.interruption : r.arn]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }

  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [aws_sqs_queue.interruption[0].arn]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sqs_queue_policy" "interruption" {
  count     = var.enable_interruption_handling ? 1 : 0
  queue_url = aws_sqs_queue.interruption[0].url
  policy    = data.aws_iam_policy_document.queue[0].json
}

resource "aws_cloudwatch_event_rule" "interruption" {
  for_each      = var.enable_interruption_handling ? local.event_rules : {}
  name          = substr("dovetail-${var.cluster_name}-${each.key}", 0, 64)
  description   = each.value.description
  event_pattern = jsonencode(each.value.eventPattern)
  tags          = var.tags
}

resource "aws_cloudwatch_event_target" "interruption" {
  for_each  = aws_cloudwatch_event_rule.interruption
  rule      = each.value.name
  target_id = "dovetail-interruption-queue"
  arn       = aws_sqs_queue.interruption[0].arn
}
