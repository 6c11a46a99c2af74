# Registers one HyperPod cloud with fleetd in a single apply:
#   phase 1: POST /v1/clouds -> pending_iam, with the exact IAM documents in iam.required;
#   the two roles are created from those documents, unchanged;
#   phase 2: POST /v1/clouds/{id}/iam -> fleetd assumes the control-plane role with the
#   external id, checks both roles' tags, and locks the pair: the cloud is active.

data "aws_caller_identity" "current" {}

locals {
  account_id = coalesce(var.account_id, data.aws_caller_identity.current.account_id)
}

resource "restapi_object" "cloud" {
  path         = "/v1/clouds"
  id_attribute = "id"
  data = jsonencode({
    name        = var.name
    environment = var.environment
    provider    = "hyperpod"
    region      = var.region
    account     = { account_id = local.account_id }
  })
  # fleetd answers 409 naming the field when any of these change: replace instead.
  force_new = ["environment", "provider", "region", "account"]
}

locals {
  cloud    = jsondecode(restapi_object.cloud.api_response)
  required = local.cloud.iam.required
  cp       = local.required.control_plane_role
  cluster  = local.required.cluster_role
}

resource "aws_iam_role" "control_plane" {
  name                 = coalesce(var.control_plane_role_name, local.cp.suggested_name)
  path                 = local.cp.path
  description          = local.cp.description
  max_session_duration = local.cp.max_session_duration
  assume_role_policy   = jsonencode(local.cp.assume_role_policy)
  tags                 = merge(var.tags, local.cp.tags)
}

# fleetd returns exactly one inline policy for the control-plane role.
resource "aws_iam_role_policy" "control_plane" {
  name   = local.cp.inline_policies[0].name
  role   = aws_iam_role.control_plane.id
  policy = jsonencode(local.cp.inline_policies[0].policy)
}

resource "aws_iam_role" "cluster" {
  name                 = coalesce(var.cluster_role_name, local.cluster.suggested_name)
  path                 = local.cluster.path
  description          = local.cluster.description
  max_session_duration = local.cluster.max_session_duration
  assume_role_policy   = jsonencode(local.cluster.assume_role_policy)
  tags                 = merge(var.tags, local.cluster.tags)
}

# fleetd returns exactly one managed policy for the cluster role (the HyperPod instance policy).
resource "aws_iam_role_policy_attachment" "cluster" {
  role       = aws_iam_role.cluster.name
  policy_arn = local.cluster.managed_policy_arns[0]
}

resource "time_sleep" "iam_propagation" {
  create_duration = var.iam_propagation_delay
  triggers = {
    control_plane = aws_iam_role.control_plane.arn
    cluster       = aws_iam_role.cluster.arn
  }
  depends_on = [aws_iam_role_policy.control_plane, aws_iam_role_policy_attachment.cluster]
}

# Phase 2. The object's id is the cloud id (the answer is the cloud). A changed pair goes
# through the audited rotation; the pair has no delete of its own: it ends with the cloud.
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
    control_plane_role = time_sleep.iam_propagation.triggers["control_plane"]
    cluster_role       = time_sleep.iam_propagation.triggers["cluster"]
  })
}
