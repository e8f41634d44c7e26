terraform {
  # terraform_data needs Terraform 1.4; every OpenTofu release (1.6+) has it.
  required_version = ">= 1.5"
}
