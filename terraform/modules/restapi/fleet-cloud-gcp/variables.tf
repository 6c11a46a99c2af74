variable "name" {
  description = "Cloud name in fleetd, for example \"prod-us-central1\"."
  type        = string
}

variable "environment" {
  description = "fleetd environment the cloud belongs to. Changing it replaces the cloud."
  type        = string
}

variable "region" {
  description = "GCP region of the GKE clusters, for example \"us-central1\". Changing it replaces the cloud."
  type        = string
}

variable "project" {
  description = "GCP project id the GKE clusters and both service accounts live in."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project must be a GCP project id (6-30 lowercase letters, digits or hyphens)."
  }
}
