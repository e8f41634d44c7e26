# Contract inputs of the machine role, v1alpha1 (book: Contract - Common and
# Contract - Machine Role).

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

# The cluster module's exports. The controller always sets it; the default
# follows the contract skeleton.
variable "captf_cluster_outputs" {
  type    = any
  default = null
}

variable "captf_tags" {
  type = map(string)
}

variable "machine_name" {
  type = string
}

# Base64 of the bootstrap Secret's value.
variable "bootstrap_data" {
  type      = string
  sensitive = true
}

variable "bootstrap_format" {
  type = string
}

variable "failure_domain" {
  type    = string
  default = null
}

variable "kubernetes_version" {
  type    = string
  default = null
}

variable "control_plane" {
  type = bool
}

# The secret_suffix of a state in the object's namespace whose output
# machine_health, when there is one, is reported as this machine's health:
# a way to make the stand-in instance unhealthy or terminated on demand, for
# trying machine remediation. It is read at every refresh and drift check.
variable "health_source" {
  type    = string
  default = null
}

# The address (http://host:port) of a server that answers the Kubernetes
# API's read of one Secret, tfstate-default-hold in the object's namespace,
# when it chooses to: every plan of this machine reads that state first, so
# the run waits there, the state lock held, until the server answers. A
# test holds a run at a moment it controls this way, to land a fault while
# an apply or destroy is in progress. Unset, nothing is read.
variable "hold_endpoint" {
  type    = string
  default = null
}
