terraform {
  required_version = ">= 1.11"

  required_providers {
    fleet = {
      source  = "fleetd/fleet"
      version = ">= 0.1.0"
    }
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 3.90, < 5.0"
    }
  }
}
