output "queue_ids" {
  description = "fleetd queue ids by name."
  value       = { for k, q in fleet_queue.this : k => q.id }
}

output "priority_class_ids" {
  description = "fleetd priority class ids by name."
  value       = { for k, p in fleet_priority_class.this : k => p.id }
}
