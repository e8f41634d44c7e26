# No-op machinepool module: implements the v1alpha1 machinepool role with no
# cloud. The group has var.replicas members, all running, unless
# capacity_source names the cloud's own desired capacity.

# The stand-in for the scaling group's launch configuration: a bootstrap_data
# change updates it in place, as the contract requires.
resource "terraform_data" "group" {
  input = {
    cluster            = var.captf_cluster
    object             = var.captf_object
    name               = var.machinepool_name
    tags               = var.captf_tags
    backend_id         = try(var.captf_cluster_outputs.backend_id, null)
    user_data          = var.bootstrap_data
    bootstrap_format   = var.bootstrap_format
    node_labels        = var.node_labels
    failure_domains    = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
    kubernetes_version = var.kubernetes_version
  }
}

# The desired capacity a cloud's scaling group would report after its own
# autoscaler acted: the desired_capacity output of the state capacity_source
# names, read at every refresh; nothing when capacity_source is unset.
data "terraform_remote_state" "capacity" {
  count   = var.capacity_source == null ? 0 : 1
  backend = "kubernetes"
  config = {
    secret_suffix     = var.capacity_source
    namespace         = var.captf_object.namespace
    in_cluster_config = true
  }
  defaults = {
    desired_capacity = null
  }
}

locals {
  reported_capacity = var.capacity_source == null ? null : data.terraform_remote_state.capacity[0].outputs.desired_capacity
  desired           = local.reported_capacity == null ? var.replicas : local.reported_capacity
  # Unsorted; provider_id_list wraps sort() directly in its own output
  # expression.
  raw_ids = [for i in range(local.desired) : "noop:///${var.captf_object.namespace}/${var.captf_object.name}/${i}"]
}
