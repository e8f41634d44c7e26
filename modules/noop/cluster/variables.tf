# Contract inputs of the cluster role, v1alpha1 (book: Contract - Common and
# Contract - Cluster Role), followed by this module's own user variables.

variable "captf_contract" {
  type = string
}

variable "captf_cluster" {
  type = object({
    name      = string
    namespace = string
  })
}

variable "captf_object" {
  type = object({
    kind      = string
    name      = string
    namespace = string
  })
}

# Not passed to the cluster role; declared with a default as the contract
# skeleton does, which is safe (a declaration without one fails validate).
variable "captf_cluster_outputs" {
  type    = any
  default = null
}

variable "captf_tags" {
  type = map(string)
}

variable "control_plane_endpoint" {
  type    = object({ host = string, port = number })
  default = null
}

variable "kubernetes_version" {
  type    = string
  default = null
}

variable "control_plane_initialized" {
  type = bool
}

variable "cluster_network" {
  # Every attribute is always present when cluster_network is non-null.
  type = object({
    pods            = list(string)
    services        = list(string)
    service_domain  = string
    api_server_port = number
  })
  default = null
}

# User variables (spec.variables / spec.variablesFrom); each has a default so
# the module plans when nobody sets it.

# The host of the endpoint this module "creates" when neither the user nor a
# control-plane provider supplies one. The .invalid name never resolves.
variable "endpoint_host" {
  type    = string
  default = null
}

variable "endpoint_port" {
  type    = number
  default = 6443
}

# Names of the failure domains to report, all eligible for control planes.
variable "failure_domain_names" {
  type    = list(string)
  default = []
}

# Extra tags merged into captf_tags on the stand-in resource (captf_tags
# wins on a shared key).
variable "extra_tags" {
  type    = map(string)
  default = {}
}

# Any change replaces the stand-in resource: a destructive plan on demand,
# for trying the destructive-plan guard (book: Plan Approval).
variable "replace_token" {
  type    = string
  default = null
}

# The address (http://host:port) of a server that answers the Kubernetes
# API's read of one Secret, tfstate-default-hold in the cluster's namespace,
# when it chooses to: every plan of this cluster reads that state first, so
# the run waits there, the state lock held, until the server answers. A
# test holds a run at a moment it controls this way, to land a fault while
# an apply or destroy is in progress. Unset, nothing is read.
variable "hold_endpoint" {
  type    = string
  default = null
}
