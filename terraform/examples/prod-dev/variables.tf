variable "fleetd_url" {
  description = "Base URL of fleetd, for example https://fleetd.internal.example.com."
  type        = string
}

variable "fleetd_token" {
  description = "fleetd admin API token (fleetd token create --role admin --env prod,dev)."
  type        = string
  sensitive   = true
}

variable "projects" {
  description = "GCP project per environment: each environment gets its own project."
  type        = map(string)
  default = {
    prod = "acme-ml-prod"
    dev  = "acme-ml-dev"
  }
}

variable "regions" {
  description = "Regions every environment runs in."
  type        = list(string)
  default     = ["us-central1", "europe-west4"]
}

variable "clusters" {
  description = <<-EOT
    Member GKE clusters to register, by a free key: the cloud they belong to
    ("<env>/<region>") and the GKE cluster name (it must start with the cloud's
    cluster_name_prefix output).
  EOT
  type = map(object({
    cloud    = string
    gke_name = string
  }))
  default = {}
}

variable "cluster_tokens" {
  description = "Bearer token of fleetd's Kubernetes service account, per key of var.clusters (ephemeral: never in plan or state)."
  type        = map(string)
  default     = {}
  sensitive   = true
  ephemeral   = true
}
