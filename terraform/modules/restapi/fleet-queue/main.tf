# Queues of one environment and, optionally, fleet-wide priority classes.

resource "restapi_object" "priority_class" {
  for_each     = var.priority_classes
  path         = "/v1/priority-classes"
  id_attribute = "id"
  data = jsonencode({
    name    = each.key
    value   = each.value.value
    preempt = each.value.preempt
  })
  force_new = ["name"]
}

resource "restapi_object" "queue" {
  for_each     = var.queues
  path         = "/v1/queues"
  id_attribute = "id"
  # Optional fields left null are not sent.
  data = jsonencode({ for k, v in {
    name                   = each.key
    environment            = var.environment
    cohort                 = each.value.cohort
    weight                 = each.value.weight
    nominal_quota          = each.value.nominal_quota
    borrowing_limit        = each.value.borrowing_limit
    lending_limit          = each.value.lending_limit
    default_priority_class = each.value.default_priority_class
    queueing_strategy      = each.value.queueing_strategy
  } : k => v if v != null })
  force_new  = ["name", "environment"]
  depends_on = [restapi_object.priority_class]
}
