terraform {
  required_version = ">= 1.11"

  required_providers {
    fleet = {
      source  = "fleetd/fleet"
      version = ">= 0.1.0"
    }
  }
}
