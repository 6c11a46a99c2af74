# Registers one AKS cloud with fleetd in a single apply, with terraform-provider-fleet:
#   phase 1: fleet_cloud -> pending_iam, with the exact IAM documents in iam_required (typed);
#   two user-assigned managed identities, the control-plane identity's federated credential
#   (fleetd signs in as it with its own Entra token), the two role definitions and their
#   assignments are created from those documents;
#   phase 2: fleet_cloud_iam -> fleetd obtains a token as the control-plane
#   identity and checks both identities' tags, then locks the pair: the cloud is active.
#
# Role definition [0] is scoped to the cloud's resource group; [1] holds only the compute
# SKU and usage reads, which Azure serves at subscription level.

resource "fleet_cloud" "this" {
  name          = var.name
  environment   = var.environment
  provider_type = "aks"
  region        = var.region
  account = {
    subscription_id = var.subscription_id
    tenant_id       = var.tenant_id
    resource_group  = var.resource_group
  }
}

locals {
  required    = fleet_cloud.this.iam_required
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
  name              = local.definitions[0].name
  scope             = local.definitions[0].assignable_scopes[0]
  description       = local.definitions[0].description
  assignable_scopes = local.definitions[0].assignable_scopes

  permissions {
    actions          = local.definitions[0].actions
    not_actions      = local.definitions[0].not_actions
    data_actions     = local.definitions[0].data_actions
    not_data_actions = local.definitions[0].not_data_actions
  }
}

resource "azurerm_role_definition" "capacity_reader" {
  name              = local.definitions[1].name
  scope             = local.definitions[1].assignable_scopes[0]
  description       = local.definitions[1].description
  assignable_scopes = local.definitions[1].assignable_scopes

  permissions {
    actions          = local.definitions[1].actions
    not_actions      = local.definitions[1].not_actions
    data_actions     = local.definitions[1].data_actions
    not_data_actions = local.definitions[1].not_data_actions
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

# Phase 2: verified and locked; retried while the role assignments propagate.
resource "fleet_cloud_iam" "this" {
  cloud_id           = fleet_cloud.this.id
  control_plane_role = azurerm_user_assigned_identity.control_plane.id
  cluster_role       = azurerm_user_assigned_identity.cluster.id
  depends_on = [
    azurerm_federated_identity_credential.fleetd,
    azurerm_role_assignment.control_plane,
    azurerm_role_assignment.capacity_reader,
    azurerm_role_assignment.fleetd_reader,
  ]
}
