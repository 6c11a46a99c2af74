variable "cloud_id" {
  description = "fleetd cloud the cluster belongs to (an active cloud: output cloud_id of a fleet-cloud-* module)."
  type        = string
}

variable "name" {
  description = "Cluster name in fleetd."
  type        = string
}

variable "api_server" {
  description = "Kubernetes API URL; must be https."
  type        = string

  validation {
    condition     = startswith(var.api_server, "https://")
    error_message = "api_server must be an https URL."
  }
}

variable "ca_cert" {
  description = "PEM CA certificate of the Kubernetes API."
  type        = string
}

variable "token" {
  description = "Bearer token fleetd uses on the cluster. Ephemeral: never in plan or state; encrypted at rest by fleetd, never returned."
  type        = string
  sensitive   = true
  ephemeral   = true
}

variable "token_version" {
  description = "Raise to send token again (rotation): a write-only value is not compared between runs."
  type        = number
  default     = 1
}

variable "provider_cluster_id" {
  description = "The provider's id of the cluster: GKE cluster path, AKS resource id or HyperPod cluster ARN."
  type        = string
}

variable "labels" {
  description = "Labels of the cluster in fleetd."
  type        = map(string)
  default     = {}
}

variable "batch_scheduler" {
  description = "Batch scheduler on the cluster: none, volcano, yunikorn, kai or kueue."
  type        = string
  default     = "none"
}

variable "kueue" {
  description = "With batch_scheduler kueue: what the member's Kueue allows (elastic_jobs) and where fleetd's LocalQueues point (cluster_queue, local_queue_prefix); null = fleetd's defaults."
  type = object({
    elastic_jobs       = optional(bool)
    cluster_queue      = optional(string)
    local_queue_prefix = optional(string)
  })
  default = null
}
