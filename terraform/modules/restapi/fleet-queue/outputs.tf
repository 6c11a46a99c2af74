output "queue_ids" {
  description = "fleetd queue ids by name."
  value       = { for k, q in restapi_object.queue : k => q.id }
}

output "priority_class_ids" {
  description = "fleetd priority class ids by name."
  value       = { for k, p in restapi_object.priority_class : k => p.id }
}
