# No-op cluster module: implements the v1alpha1 cluster role with no cloud.
# It creates nothing but a terraform_data stand-in for the cluster-wide
# substrate, so it needs no provider, no credentials and no network.

locals {
  # The endpoint this module would create: used only when the input is null
  # (no user or control-plane-provider endpoint).
  created_endpoint = {
    host = coalesce(var.endpoint_host, "${var.captf_cluster.name}.${var.captf_cluster.namespace}.noop.invalid")
    port = var.endpoint_port
  }
  endpoint = var.control_plane_endpoint != null ? var.control_plane_endpoint : local.created_endpoint
}

# The stand-in for the network and load balancer. Tagged like every resource
# a real module creates (captf_tags).
resource "terraform_data" "substrate" {
  triggers_replace = var.replace_token
  input = {
    cluster                   = var.captf_cluster
    object                    = var.captf_object
    tags                      = merge(var.extra_tags, var.captf_tags)
    endpoint                  = local.endpoint
    kubernetes_version        = var.kubernetes_version
    control_plane_initialized = var.control_plane_initialized
    cluster_network           = var.cluster_network
  }
}

# The hold (hold_endpoint): a state read through that server, with the
# pod's in-cluster credentials, before anything is planned.
data "terraform_remote_state" "hold" {
  count   = var.hold_endpoint == null ? 0 : 1
  backend = "kubernetes"
  config = {
    secret_suffix     = "hold"
    namespace         = var.captf_cluster.namespace
    in_cluster_config = true
    host              = var.hold_endpoint
  }
}
