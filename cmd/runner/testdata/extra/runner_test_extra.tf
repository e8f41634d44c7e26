# Test-only additions to a no-op module, copied next to its files by the
# runner's tests. Nothing here needs a provider download or the network.

# generation replaces terraform_data.generation whenever it changes: the
# destructive-plan guard's test case.
variable "generation" {
  type    = string
  default = "1"
}

resource "terraform_data" "generation" {
  triggers_replace = [var.generation]
}

# probe is forwarded from a root variable that only has a default, so a
# leaked TF_VAR_probe would change it.
variable "probe" {
  type    = string
  default = "unset"
}

resource "terraform_data" "probe" {
  input = var.probe
}

# slow_seconds > 0 adds a resource whose creation sleeps that long: the
# SIGTERM test stops an apply in the middle of it.
variable "slow_seconds" {
  type    = number
  default = 0
}

resource "terraform_data" "slow" {
  count = var.slow_seconds > 0 ? 1 : 0
  input = var.generation

  provisioner "local-exec" {
    command = "sleep ${var.slow_seconds}"
  }
}

# fail_with, when set, fails the plan with a precondition whose message
# carries the value: the failure summary must not.
variable "fail_with" {
  type    = string
  default = ""
}

resource "terraform_data" "checked" {
  lifecycle {
    precondition {
      condition     = var.fail_with == ""
      error_message = "refusing to run with ${var.fail_with}"
    }
  }
}
