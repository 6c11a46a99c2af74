output "clouds" {
  description = "Cloud id, state and GKE cluster name prefix per environment/region."
  value = {
    for k, c in module.cloud : k => {
      id                   = c.cloud_id
      state                = c.state
      cluster_name_prefix  = c.cluster_name_prefix
      node_service_account = c.cluster_service_account
    }
  }
}

output "queues" {
  value = merge(module.prod_queues.queue_ids, module.dev_queues.queue_ids)
}
