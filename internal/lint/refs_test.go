package lint

import (
	"testing"
)

// TestValidationIsNotAUse: a reference in a variable's validation, its own
// or another variable's, condition or error_message, is not a use of the
// variable; a reference anywhere else outside module calls is, in both
// syntaxes (reference: tfcapi-lint CLI, "What counts as a use").
func TestValidationIsNotAUse(t *testing.T) {
	for _, tc := range []struct {
		rule string
		file string
		src  string
		want bool
	}{
		{"own validation condition", "v.tf", `
variable "x" {
  type = string
  validation {
    condition     = length(var.x) > 0
    error_message = "x"
  }
}`, false},
		{"own validation error_message", "v.tf", `
variable "x" {
  type = string
  validation {
    condition     = true
    error_message = "not ${var.x}"
  }
}`, false},
		{"another variable's validation", "v.tf", `
variable "y" {
  type = number
  validation {
    condition     = var.x != null || var.y > 0
    error_message = "y"
  }
}`, false},
		{"a resource", "v.tf", `
resource "terraform_data" "r" {
  input = var.x
}`, true},
		{"a local", "v.tf", `
locals {
  y = upper(var.x)
}`, true},
		{"an output", "v.tf", `
output "y" {
  value = var.x
}`, true},
		{"a resource precondition", "v.tf", `
resource "terraform_data" "r" {
  lifecycle {
    precondition {
      condition     = var.x != ""
      error_message = "x"
    }
  }
}`, true},
		{"own validation, JSON", "v.tf.json", `{
  "variable": {"x": {"type": "string", "validation": [{"condition": "${length(var.x) > 0}", "error_message": "not ${var.x}"}]}}
}`, false},
		{"a single validation object, JSON", "v.tf.json", `{
  "variable": [{"x": {"validation": {"condition": "${var.x != \"\"}", "error_message": "x"}}}]
}`, false},
		{"a resource, JSON", "v.tf.json", `{
  "resource": {"terraform_data": {"r": {"input": "${var.x}"}}}
}`, true},
	} {
		root, _, err := loadModule(mapSource{tc.file: []byte(tc.src)})
		if err != nil {
			t.Fatalf("%s: %v", tc.rule, err)
		}
		if got := root.uses("x"); got != tc.want {
			t.Errorf("%s: uses(x) = %v, want %v", tc.rule, got, tc.want)
		}
	}
}
