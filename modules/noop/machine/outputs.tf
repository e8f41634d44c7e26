# Contract outputs of the machine role, v1alpha1.

# Stable per Machine. With no Node behind it, nothing expects a nodeRef; a
# real module emits the CCM's or kubelet's format (Contract - Machine Role).
output "provider_id" {
  value = "noop:///${var.captf_object.namespace}/${var.machine_name}"
}

output "addresses" {
  value = [{ type = "InternalIP", address = "10.0.0.1" }]
}

output "failure_domain" {
  value = var.failure_domain
}

output "interruptible" {
  value = false
}

output "health" {
  value = {
    state   = try(local.reported_health.state, "running")
    healthy = try(local.reported_health.healthy, true)
    message = try(local.reported_health.message, null)
    reasons = try(local.reported_health.reasons, [])
  }
}
