terraform {
  required_version = ">= 1.5"

  required_providers {
    restapi = {
      source  = "Mastercard/restapi"
      version = ">= 1.19.1, < 2.0"
    }
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 7.0"
    }
  }
}

provider "restapi" {
  uri                   = var.fleetd_url
  id_attribute          = "id"
  create_returns_object = true
  write_returns_object  = true
  headers = {
    Authorization = "Bearer ${var.fleetd_token}"
    Content-Type  = "application/json"
  }
}

provider "google" {}
