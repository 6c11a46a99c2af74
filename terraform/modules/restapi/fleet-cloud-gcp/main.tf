# Registers one GKE cloud with fleetd in a single apply:
#   phase 1: POST /v1/clouds -> pending_iam, with the exact IAM documents in iam.required;
#   two service accounts, the custom role, its conditional binding (this cloud's clusters
#   only: their names start with iam.required.cluster_name_prefix) and the impersonation
#   binding for fleetd's own service account are created from those documents;
#   phase 2: POST /v1/clouds/{id}/iam -> fleetd impersonates the control-plane account and
#   checks both accounts' cloud-id label, then locks the pair: the cloud is active.
#
# IAM service accounts have no labels field: fleetd's labels travel in the description
# ("...; labels: fleet-io-cloud-id=<id>,fleet-io-environment=<env>"), which it checks.

resource "restapi_object" "cloud" {
  path         = "/v1/clouds"
  id_attribute = "id"
  data = jsonencode({
    name        = var.name
    environment = var.environment
    provider    = "gke"
    region      = var.region
    account     = { project = var.project }
  })
  force_new = ["environment", "provider", "region", "account"]
}

locals {
  cloud    = jsondecode(restapi_object.cloud.api_response)
  required = local.cloud.iam.required
  cp_sa    = local.required.control_plane_service_account
  node_sa  = local.required.cluster_service_account
  role     = local.required.custom_role
  # Fixed shapes: [0] the custom role with its condition, [1] the node role;
  # service-account bindings: [0] fleetd -> token creator on cp, [1] cp -> viewer on node SA.
  role_binding  = local.required.project_bindings[0]
  node_binding  = local.required.project_bindings[1]
  impersonation = local.required.service_account_bindings[0]
  node_viewer   = local.required.service_account_bindings[1]
}

resource "google_service_account" "control_plane" {
  project      = var.project
  account_id   = local.cp_sa.account_id
  display_name = local.cp_sa.display_name
  description  = local.cp_sa.description
}

resource "google_service_account" "cluster" {
  project      = var.project
  account_id   = local.node_sa.account_id
  display_name = local.node_sa.display_name
  description  = local.node_sa.description
}

resource "google_project_iam_custom_role" "control_plane" {
  project     = var.project
  role_id     = local.role.roleId
  title       = local.role.role.title
  description = local.role.role.description
  permissions = local.role.role.includedPermissions
  stage       = local.role.role.stage
}

resource "google_project_iam_member" "control_plane" {
  project = var.project
  role    = google_project_iam_custom_role.control_plane.id
  member  = "serviceAccount:${google_service_account.control_plane.email}"

  condition {
    title       = local.role_binding.condition.title
    description = local.role_binding.condition.description
    expression  = local.role_binding.condition.expression
  }
}

resource "google_project_iam_member" "cluster_nodes" {
  project = var.project
  role    = local.node_binding.role
  member  = "serviceAccount:${google_service_account.cluster.email}"
}

resource "google_service_account_iam_member" "fleetd_impersonates" {
  service_account_id = google_service_account.control_plane.name
  role               = local.impersonation.role
  member             = local.impersonation.members[0]
}

resource "google_service_account_iam_member" "control_plane_reads_node_sa" {
  service_account_id = google_service_account.cluster.name
  role               = local.node_viewer.role
  member             = "serviceAccount:${google_service_account.control_plane.email}"
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
    control_plane_role = google_service_account.control_plane.email
    cluster_role       = google_service_account.cluster.email
  })
  depends_on = [
    google_project_iam_member.control_plane,
    google_project_iam_member.cluster_nodes,
    google_service_account_iam_member.fleetd_impersonates,
    google_service_account_iam_member.control_plane_reads_node_sa,
  ]
}
