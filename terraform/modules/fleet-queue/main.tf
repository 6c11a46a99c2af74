# Queues of one environment and, optionally, fleet-wide priority classes, with
# terraform-provider-fleet (typed attributes, plan-time validation, drift shown per field).

resource "fleet_priority_class" "this" {
  for_each = var.priority_classes
  name     = each.key
  value    = each.value.value
  preempt  = each.value.preempt
}

resource "fleet_queue" "this" {
  for_each               = var.queues
  name                   = each.key
  environment            = var.environment
  cohort                 = each.value.cohort
  weight                 = each.value.weight
  nominal_quota          = each.value.nominal_quota
  borrowing_limit        = each.value.borrowing_limit
  lending_limit          = each.value.lending_limit
  default_priority_class = each.value.default_priority_class
  queueing_strategy      = each.value.queueing_strategy
  depends_on             = [fleet_priority_class.this]
}
