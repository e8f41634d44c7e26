package lint

import (
	"fmt"
	"testing"
)

// TestRefusesNull: a validation refuses null when, with the variable null,
// its condition is false or null or fails, and it evaluates without error
// for a non-null value; a condition that references anything but the
// variable, or calls a function tfcapi-lint does not evaluate, is never
// reported (reference: tfcapi-lint CLI, input/user-variable-null-default).
func TestRefusesNull(t *testing.T) {
	for _, tc := range []struct {
		typ, cond string
		want      bool
	}{
		// Certainly refused.
		{"string", "var.x != null", true},
		{"string", "!(var.x == null)", true},
		{"string", "length(var.x) > 0", true},
		{"list(string)", "length(var.x) > 0", true},
		{"string", `can(regex("^a", var.x))`, true},
		{"string", `try(length(var.x) > 0, false)`, true},
		{"string", `contains(["a", "b"], var.x)`, true},
		{"string", `startswith(var.x, "vpc-")`, true},
		{"string", `endswith(var.x, ".")`, true},
		{"string", `strcontains(var.x, ":")`, true},
		{"number", "var.x > 0", true},
		{"number", "var.x >= 1 && var.x <= 10", true},
		{"bool", "var.x", true},
		{"object({ name = string })", `var.x.name != ""`, true},
		{"object({ name = string, zones = optional(list(string), []) })", `length(var.x.zones) > 0`, true},
		{"list(string)", `alltrue([for z in var.x : z != ""])`, true},
		{"map(string)", `length(keys(var.x)) > 0`, true},
		{"string", `coalesce(var.x, "") != ""`, true},
		{"", "var.x != null", true},
		{"", `length(var.x) > 0`, true},
		{"string", `lower(var.x) == var.x`, true},
		{"string", `var.x == ""`, true},
		// Null is accepted.
		{"string", "var.x == null || length(var.x) > 0", false},
		{"string", `var.x == null ? true : can(regex("^a", var.x))`, false},
		{"string", `var.x != ""`, false},
		{"string", `var.x == null || var.x != ""`, false},
		{"list(string)", `alltrue([for z in coalesce(var.x, []) : endswith(z, "a")])`, false},
		{"list(string)", `length(coalesce(var.x, [])) <= 3`, false},
		{"string", `tostring(var.x) == null || true`, false},
		{"string", `startswith(coalesce(var.x, "vpc-default"), "vpc-")`, false},
		{"string", `coalesce(var.x, "", "a") == "a"`, false},
		{"number", `try(var.x > 0, true)`, false},
		{"list(string)", `anytrue([var.x == null, false])`, false},
		// Not knowable: not reported.
		{"string", `provider::aws::arn_parse(var.x).service == "iam"`, false},
		{"string", `cidrhost(var.x, 1) != ""`, false},
		{"number", `var.y > 0 && var.x > 0`, false},
		{"number", `local.enabled || var.x > 0`, false},
		{"string", `false`, false},
		// The condition fails whatever the value: not because of null.
		{"string", `var.x != null && tonumber("abc") > 0`, false},
		{"number", `length(var.x) > 0`, false},
	} {
		src := "variable \"x\" {\n"
		if tc.typ != "" {
			src += "  type = " + tc.typ + "\n"
		}
		src += fmt.Sprintf("  default = null\n  validation {\n    condition     = %s\n    error_message = \"x\"\n  }\n}\n", tc.cond)
		root, _, err := loadModule(mapSource{"v.tf": []byte(src)})
		if err != nil {
			t.Fatalf("%s: %v", tc.cond, err)
		}
		if got := root.variable("x").refusesNull(); got != tc.want {
			t.Errorf("type %q, condition %s: refusesNull = %v, want %v", tc.typ, tc.cond, got, tc.want)
		}
	}
}

// TestRefusesNullJSON: a JSON syntax validation is evaluated the same way
// (reference: tfcapi-lint CLI, input/user-variable-null-default).
func TestRefusesNullJSON(t *testing.T) {
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{`${var.x != null}`, true},
		{`${length(var.x) > 0}`, true},
		{`${var.x == null || length(var.x) > 0}`, false},
	} {
		src := fmt.Sprintf(`{"variable": {"x": {"type": "string", "default": null, "validation": {"condition": %q, "error_message": "x"}}}}`, tc.cond)
		root, _, err := loadModule(mapSource{"v.tf.json": []byte(src)})
		if err != nil {
			t.Fatalf("%s: %v", tc.cond, err)
		}
		if got := root.variable("x").refusesNull(); got != tc.want {
			t.Errorf("%s: refusesNull = %v, want %v", tc.cond, got, tc.want)
		}
	}
}
