terraform {
  required_version = ">= 1.11"

  required_providers {
    fleet = {
      source  = "fleetd/fleet"
      version = ">= 0.1.0"
    }
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 7.0"
    }
  }
}

provider "fleet" {
  url   = var.fleetd_url
  token = var.fleetd_token
}

provider "google" {}
