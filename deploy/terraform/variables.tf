variable "cluster_name" {
  description = "Name of the EKS cluster dovetail manages (at most 100 characters)."
  type        = string

  validation {
    condition     = can(regex("^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", var.cluster_name))
    error_message = "cluster_name must be 1-100 letters, digits, '-' or '_', starting with a letter or digit (EKS cluster name rules)."
  }
}

variable "namespace" {
  description = "Namespace the chart is installed in (the ServiceAccount's namespace)."
  type        = string
  default     = "kube-system"
}

variable "service_account" {
  description = "Name of the controller's ServiceAccount (the chart's full name: the release name, \"dovetail\" by default)."
  type        = string
  default     = "dovetail"
}

variable "enable_pod_identity" {
  description = "Trust EKS Pod Identity (pods.eks.amazonaws.com) and create the Pod Identity association for the ServiceAccount. Needs the eks-pod-identity-agent add-on."
  type        = bool
  default     = true
}

variable "enable_irsa" {
  description = "Also trust IAM Roles for Service Accounts through the cluster's OIDC provider (irsa_oidc_provider_arn); the chart then needs serviceAccount.annotations.\"eks.amazonaws.com/role-arn\" (output helm_values has it)."
  type        = bool
  default     = false
}

variable "irsa_oidc_provider_arn" {
  description = "ARN of the cluster's IAM OIDC provider (arn:aws:iam::<account>:oidc-provider/oidc.eks.<region>.amazonaws.com/id/<id>); required with enable_irsa."
  type        = string
  default     = ""
}

variable "controller_role_name_prefix" {
  description = "Name prefix of the controller's IAM role (IAM adds a unique suffix, so long cluster names fit)."
  type        = string
  default     = "dovetail-controller-"
}

variable "create_node_iam_role" {
  description = "Create the IAM role nodes run as; false uses node_iam_role_arn."
  type        = bool
  default     = true
}

variable "node_iam_role_name" {
  description = "Name of the node role to create (default dovetail-node-<cluster>, cut to IAM's 64 characters)."
  type        = string
  default     = ""
}

variable "node_iam_role_arn" {
  description = "ARN of an existing node role (with create_node_iam_role = false), for example the peer's KarpenterNodeRole-<cluster> when moving over."
  type        = string
  default     = ""
}

variable "node_iam_role_additional_policies" {
  description = "More managed policy ARNs for the node role (e.g. AmazonSSMManagedInstanceCore)."
  type        = list(string)
  default     = []
}

variable "cluster_ip_family" {
  description = "ipv4 or ipv6: which CNI policy the node role gets."
  type        = string
  default     = "ipv4"

  validation {
    condition     = contains(["ipv4", "ipv6"], var.cluster_ip_family)
    error_message = "cluster_ip_family must be ipv4 or ipv6."
  }
}

variable "create_access_entry" {
  description = "Create the EKS access entry (type EC2_LINUX) that lets nodes with the node role join."
  type        = bool
  default     = true
}

variable "create_instance_profile" {
  description = "Create an instance profile for the node role. Not needed when EC2NodeClasses set spec.role (dovetail manages one profile per class); needed for spec.instanceProfile."
  type        = bool
  default     = false
}

variable "enable_interruption_handling" {
  description = "Create the interruption SQS queue, its policy and the four EventBridge rules."
  type        = bool
  default     = true
}

variable "enable_reboot_for_repair" {
  description = "Attach ec2:RebootInstances on the cluster's instances, for the controller's AWS feature gate RebootForRepair (set it with the gate)."
  type        = bool
  default     = false
}

variable "queue_name" {
  description = "Name of the interruption queue (default the cluster name; SQS allows 80 characters, so longer cluster names need one)."
  type        = string
  default     = ""
}

variable "queue_kms_master_key_id" {
  description = "KMS key for the queue; empty uses SQS-managed encryption."
  type        = string
  default     = ""
}

variable "tags" {
  description = "Tags on every resource the module creates."
  type        = map(string)
  default     = {}
}
