# Registers one HyperPod cloud with fleetd in a single apply, with terraform-provider-fleet:
#   phase 1: fleet_cloud -> pending_iam, with the exact IAM documents in iam_required (typed);
#   the two roles are created from those documents, unchanged;
#   phase 2: fleet_cloud_iam -> fleetd assumes the control-plane role with the external id,
#   checks both roles' tags and locks the pair: the cloud is active.  fleet_cloud_iam keeps
#   retrying a failed verification (IAM is eventually consistent) for the provider's
#   iam_verification_timeout, then fails the apply with one error per failed check.

data "aws_caller_identity" "current" {}

locals {
  account_id = coalesce(var.account_id, data.aws_caller_identity.current.account_id)
}

resource "fleet_cloud" "this" {
  name          = var.name
  environment   = var.environment
  provider_type = "hyperpod"
  region        = var.region
  account       = { account_id = local.account_id }
}

locals {
  cp      = fleet_cloud.this.iam_required.control_plane_role
  cluster = fleet_cloud.this.iam_required.cluster_role
}

resource "aws_iam_role" "control_plane" {
  name                 = coalesce(var.control_plane_role_name, local.cp.suggested_name)
  path                 = local.cp.path
  description          = local.cp.description
  max_session_duration = local.cp.max_session_duration
  assume_role_policy   = local.cp.assume_role_policy
  tags                 = merge(var.tags, local.cp.tags)
}

# fleetd returns exactly one inline policy for the control-plane role.
resource "aws_iam_role_policy" "control_plane" {
  name   = local.cp.inline_policies[0].name
  role   = aws_iam_role.control_plane.id
  policy = local.cp.inline_policies[0].policy
}

resource "aws_iam_role" "cluster" {
  name                 = coalesce(var.cluster_role_name, local.cluster.suggested_name)
  path                 = local.cluster.path
  description          = local.cluster.description
  max_session_duration = local.cluster.max_session_duration
  assume_role_policy   = local.cluster.assume_role_policy
  tags                 = merge(var.tags, local.cluster.tags)
}

# fleetd returns exactly one managed policy for the cluster role (the HyperPod instance policy).
resource "aws_iam_role_policy_attachment" "cluster" {
  role       = aws_iam_role.cluster.name
  policy_arn = local.cluster.managed_policy_arns[0]
}

# Phase 2. A changed pair goes through the audited rotation; the pair has no delete of its
# own: it ends with the cloud.
resource "fleet_cloud_iam" "this" {
  cloud_id           = fleet_cloud.this.id
  control_plane_role = aws_iam_role.control_plane.arn
  cluster_role       = aws_iam_role.cluster.arn
  depends_on         = [aws_iam_role_policy.control_plane, aws_iam_role_policy_attachment.cluster]
}
