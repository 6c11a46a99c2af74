variable "environment" {
  description = "fleetd environment of the queues."
  type        = string
}

variable "queues" {
  description = <<-EOT
    Queues of the environment, by name. Quotas are maps of flavor (for example
    "nvidia-h100-80gb") to accelerator count. nominal_quota is the floor the queue is
    guaranteed; unused quota is lent inside the cohort within the lending and borrowing limits.
  EOT
  type = map(object({
    cohort                 = optional(string)
    weight                 = optional(number, 1)
    nominal_quota          = map(number)
    borrowing_limit        = optional(map(number), {})
    lending_limit          = optional(map(number), {})
    default_priority_class = optional(string)
    queueing_strategy      = optional(string, "best_effort_fifo")
  }))
  default = {}

  validation {
    condition     = alltrue([for q in values(var.queues) : contains(["best_effort_fifo", "strict_fifo"], q.queueing_strategy)])
    error_message = "queueing_strategy must be best_effort_fifo or strict_fifo."
  }
}

variable "priority_classes" {
  description = "Priority classes by name (fleet-wide): value (higher wins) and whether it may preempt."
  type = map(object({
    value   = number
    preempt = optional(bool, false)
  }))
  default = {}
}
