terraform {
  required_version = ">= 1.5"

  required_providers {
    restapi = {
      source  = "Mastercard/restapi"
      version = ">= 1.19.1, < 2.0"
    }
  }
}
