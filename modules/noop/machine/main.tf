# No-op machine module: implements the v1alpha1 machine role with no cloud.

# The stand-in for an instance. user_data decodes bootstrap_data the way a
# module feeding a plain user-data argument would, which proves the
# controller's base64 encoding round-trips (the value stays sensitive).
resource "terraform_data" "instance" {
  input = {
    cluster            = var.captf_cluster
    object             = var.captf_object
    machine_name       = var.machine_name
    tags               = var.captf_tags
    backend_id         = try(var.captf_cluster_outputs.backend_id, null)
    user_data          = base64decode(var.bootstrap_data)
    bootstrap_format   = var.bootstrap_format
    failure_domain     = var.failure_domain
    kubernetes_version = var.kubernetes_version
    control_plane      = var.control_plane
  }
}

# The health the test harness (or an operator trying remediation) reports
# for this machine; nothing when health_source is unset.
data "terraform_remote_state" "health" {
  count   = var.health_source == null ? 0 : 1
  backend = "kubernetes"
  config = {
    secret_suffix     = var.health_source
    namespace         = var.captf_object.namespace
    in_cluster_config = true
  }
  defaults = {
    machine_health = null
  }
}

# The hold (hold_endpoint): a state read through that server, with the
# pod's in-cluster credentials, before anything is planned.
data "terraform_remote_state" "hold" {
  count   = var.hold_endpoint == null ? 0 : 1
  backend = "kubernetes"
  config = {
    secret_suffix     = "hold"
    namespace         = var.captf_object.namespace
    in_cluster_config = true
    host              = var.hold_endpoint
  }
}

locals {
  reported_health = var.health_source == null ? null : data.terraform_remote_state.health[0].outputs.machine_health
}
