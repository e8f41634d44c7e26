# Contract outputs of the machinepool role, v1alpha1.

output "provider_id" {
  value = "noop-group:///${var.captf_object.namespace}/${var.captf_object.name}"
}

output "provider_id_list" {
  value = sort(local.raw_ids)
}

output "replicas" {
  value = local.desired
}

output "instances" {
  value = [for id in sort(local.raw_ids) : { provider_id = id, state = "running" }]
}

# A group with zero members also reports running/healthy.
output "health" {
  value = { state = "running", healthy = true, message = null, reasons = [] }
}
