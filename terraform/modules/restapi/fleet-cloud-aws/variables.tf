variable "name" {
  description = "Cloud name in fleetd, for example \"prod-us-east-1\"."
  type        = string
}

variable "environment" {
  description = "fleetd environment the cloud belongs to (prod, dev, ...). Changing it replaces the cloud."
  type        = string
}

variable "region" {
  description = "AWS region of the SageMaker HyperPod clusters, for example \"us-east-1\". Changing it replaces the cloud."
  type        = string
}

variable "account_id" {
  description = "AWS account id (12 digits) the HyperPod clusters run in. Defaults to the account of the aws provider."
  type        = string
  default     = null

  validation {
    condition     = var.account_id == null || can(regex("^[0-9]{12}$", var.account_id))
    error_message = "account_id must be 12 digits."
  }
}

variable "control_plane_role_name" {
  description = "Name of the control-plane role; defaults to the name fleetd suggests."
  type        = string
  default     = null
}

variable "cluster_role_name" {
  description = "Name of the cluster (node) role; defaults to the name fleetd suggests."
  type        = string
  default     = null
}

variable "tags" {
  description = "Extra tags for both roles. fleetd's own tags (fleet.io/cloud-id, fleet.io/environment) always win."
  type        = map(string)
  default     = {}
}

variable "iam_propagation_delay" {
  description = "Wait between creating the roles and asking fleetd to assume them (IAM is eventually consistent)."
  type        = string
  default     = "15s"
}
