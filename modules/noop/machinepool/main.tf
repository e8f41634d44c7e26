# No-op machinepool module: implements the v1alpha1 machinepool role with no
# cloud. The group has exactly var.replicas members, all running.

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

locals {
  # Unsorted; provider_id_list wraps sort() directly in its own output
  # expression.
  raw_ids = [for i in range(var.replicas) : "noop:///${var.captf_object.namespace}/${var.captf_object.name}/${i}"]
}
