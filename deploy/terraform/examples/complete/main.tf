# An example root module: dovetail's AWS side for an existing EKS cluster,
# with EKS Pod Identity. Then `helm install` with the helm_values output
# (see ../../README.md).

terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "Region of the cluster."
  type        = string
  default     = "us-east-1"
}

variable "cluster_name" {
  description = "Name of the existing EKS cluster."
  type        = string
}

module "dovetail" {
  source = "../.."

  cluster_name        = var.cluster_name
  namespace           = "kube-system"
  service_account     = "dovetail"
  enable_pod_identity = true

  node_iam_role_additional_policies = [
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
  ]

  tags = {
    "karpenter.sh/discovery" = var.cluster_name
  }
}

output "helm_values" {
  description = "Pass to helm: tofu output -json helm_values > values.json; helm install ... -f values.json"
  value       = module.dovetail.helm_values
}

output "node_iam_role_name" {
  description = "EC2NodeClass spec.role."
  value       = module.dovetail.node_iam_role_name
}
