# Registers one AKS cloud with fleetd in a single apply:
#   phase 1: POST /v1/clouds -> pending_iam, with the exact IAM documents in iam.required;
#   two user-assigned managed identities, the control-plane identity's federated credential
#   (fleetd signs in as it with its own Entra token), the two role definitions and their
#   assignments are created from those documents;
#   phase 2: POST /v1/clouds/{id}/iam -> fleetd obtains a token as the control-plane
#   identity and checks both identities' tags, then locks the pair: the cloud is active.
#
# Role definition [0] is scoped to the cloud's resource group; [1] holds only the compute
# SKU and usage reads, which Azure serves at subscription level.

resource "restapi_object" "cloud" {
  path         = "/v1/clouds"
  id_attribute = "id"
  data = jsonencode({
    name        = var.name
    environment = var.environment
    provider    = "aks"
    region      = var.region
    account = {
      subscription_id = var.subscription_id
      tenant_id       = var.tenant_id
      resource_group  = var.resource_group
    }
  })
  force_new = ["environment", "provider", "region", "account"]
}

locals {
  cloud       = jsondecode(restapi_object.cloud.api_response)
  required    = local.cloud.iam.required
  cp          = local.required.control_plane_identity
  node        = local.required.cluster_identity
  federation  = local.cp.federated_identity_credentials[0]
  definitions = local.required.role_definitions
  assignments = local.required.role_assignments
}

resource "azurerm_user_assigned_identity" "control_plane" {
  name                = local.cp.name
  resource_group_name = var.resource_group
  location            = local.cp.location
  tags                = merge(var.tags, local.cp.tags)
}

resource "azurerm_user_assigned_identity" "cluster" {
  name                = local.node.name
  resource_group_name = var.resource_group
  location            = local.node.location
  tags                = merge(var.tags, local.node.tags)
}

resource "azurerm_federated_identity_credential" "fleetd" {
  name                = local.federation.name
  resource_group_name = var.resource_group
  parent_id           = azurerm_user_assigned_identity.control_plane.id
  issuer              = local.federation.issuer
  subject             = local.federation.subject
  audience            = local.federation.audiences
}

resource "azurerm_role_definition" "control_plane" {
  name              = local.definitions[0].Name
  scope             = local.definitions[0].AssignableScopes[0]
  description       = local.definitions[0].Description
  assignable_scopes = local.definitions[0].AssignableScopes

  permissions {
    actions          = local.definitions[0].Actions
    not_actions      = local.definitions[0].NotActions
    data_actions     = local.definitions[0].DataActions
    not_data_actions = local.definitions[0].NotDataActions
  }
}

resource "azurerm_role_definition" "capacity_reader" {
  name              = local.definitions[1].Name
  scope             = local.definitions[1].AssignableScopes[0]
  description       = local.definitions[1].Description
  assignable_scopes = local.definitions[1].AssignableScopes

  permissions {
    actions          = local.definitions[1].Actions
    not_actions      = local.definitions[1].NotActions
    data_actions     = local.definitions[1].DataActions
    not_data_actions = local.definitions[1].NotDataActions
  }
}

resource "azurerm_role_assignment" "control_plane" {
  scope              = local.assignments[0].scope
  role_definition_id = azurerm_role_definition.control_plane.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.control_plane.principal_id
  principal_type     = local.assignments[0].principal_type
}

resource "azurerm_role_assignment" "capacity_reader" {
  scope              = local.assignments[1].scope
  role_definition_id = azurerm_role_definition.capacity_reader.role_definition_resource_id
  principal_id       = azurerm_user_assigned_identity.control_plane.principal_id
  principal_type     = local.assignments[1].principal_type
}

# fleetd reads the control-plane identity's client id (and nothing else) to sign in as it.
resource "azurerm_role_assignment" "fleetd_reader" {
  scope                = azurerm_user_assigned_identity.control_plane.id
  role_definition_name = local.assignments[2].role_definition_name
  principal_id         = var.fleetd_principal_id
  principal_type       = local.assignments[2].principal_type
}

# Phase 2 (see fleet-cloud-aws for the shape of this object).
resource "restapi_object" "iam" {
  path                      = "/v1/clouds/${restapi_object.cloud.id}/iam"
  create_path               = "/v1/clouds/${restapi_object.cloud.id}/iam"
  create_method             = "POST"
  read_path                 = "/v1/clouds/{id}"
  update_path               = "/v1/clouds/{id}/iam/rotate"
  update_method             = "POST"
  destroy_path              = "/v1/clouds/{id}"
  destroy_method            = "GET"
  id_attribute              = "id"
  ignore_all_server_changes = true
  data = jsonencode({
    control_plane_role = azurerm_user_assigned_identity.control_plane.id
    cluster_role       = azurerm_user_assigned_identity.cluster.id
  })
  depends_on = [
    azurerm_federated_identity_credential.fleetd,
    azurerm_role_assignment.control_plane,
    azurerm_role_assignment.capacity_reader,
    azurerm_role_assignment.fleetd_reader,
  ]
}
