# Contract outputs of the cluster role, v1alpha1.

# Stable for the life of the object: derived from the object's identity and
# the user variables only.
output "control_plane_endpoint" {
  value = local.endpoint
}

output "failure_domains" {
  value = [for name in var.failure_domain_names : { name = name, control_plane = true }]
}

output "health" {
  value = { state = "running", healthy = true, message = null, reasons = [] }
}

# Handed to machine and pool modules as captf_cluster_outputs. Integers and
# strings only: the inputs hash accepts no fractional number.
output "exports" {
  value = {
    backend_id = "noop-backend/${var.captf_cluster.namespace}/${var.captf_cluster.name}"
    network_id = "noop-network/${var.captf_cluster.namespace}/${var.captf_cluster.name}"
    endpoint   = local.endpoint
  }
}
