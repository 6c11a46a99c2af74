variable "name" {
  description = "Cloud name in fleetd, for example \"prod-eastus\"."
  type        = string
}

variable "environment" {
  description = "fleetd environment the cloud belongs to. Changing it replaces the cloud."
  type        = string
}

variable "region" {
  description = "Azure region of the AKS clusters, for example \"eastus\". Changing it replaces the cloud."
  type        = string
}

variable "subscription_id" {
  description = "Azure subscription id."
  type        = string
}

variable "tenant_id" {
  description = "Entra tenant id of the subscription."
  type        = string
}

variable "resource_group" {
  description = "Existing resource group of this cloud: its AKS clusters and both managed identities. Give each cloud its own."
  type        = string
}

variable "tags" {
  description = "Extra tags for both identities. fleetd's own tags always win."
  type        = map(string)
  default     = {}
}

variable "fleetd_principal_id" {
  description = "Object id of fleetd's service principal (FLEETD_AZURE_PRINCIPAL_ID); granted Reader on the control-plane identity so fleetd can look up its client id."
  type        = string
}
