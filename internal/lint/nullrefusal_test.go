package lint

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// nullCases are validation conditions of a variable x declared with
// default = null; runtime is what OpenTofu's plan does with them when x is
// not set ("" when the case says nothing about it).
var nullCases = []struct {
	typ, cond string
	refuses   bool
	runtime   string
}{
	// Certainly refused.
	{"string", "var.x != null", true, "refused"},
	{"string", "!(var.x == null)", true, "refused"},
	{"string", "length(var.x) > 0", true, "refused"},
	{"list(string)", "length(var.x) > 0", true, "refused"},
	{"string", `can(regex("^a", var.x))`, true, "refused"},
	{"string", `try(length(var.x) > 0, false)`, true, "refused"},
	{"string", `contains(["a", "b"], var.x)`, true, "refused"},
	{"string", `startswith(var.x, "vpc-")`, true, "refused"},
	{"string", `endswith(var.x, ".")`, true, "refused"},
	{"string", `strcontains(var.x, ":")`, true, "refused"},
	{"number", "var.x > 0", true, "refused"},
	{"number", "var.x >= 1 && var.x <= 10", true, "refused"},
	{"bool", "var.x", true, "refused"},
	{"object({ name = string })", `var.x.name != ""`, true, "refused"},
	{"object({ name = string, zones = optional(list(string), []) })", `length(var.x.zones) > 0`, true, "refused"},
	{"list(string)", `alltrue([for z in var.x : z != ""])`, true, "refused"},
	{"map(string)", `length(keys(var.x)) > 0`, true, "refused"},
	{"string", `coalesce(var.x, "") != ""`, true, "refused"},
	{"", "var.x != null", true, "refused"},
	{"", `length(var.x) > 0`, true, "refused"},
	{"string", `lower(var.x) == var.x`, true, "refused"},
	{"string", `var.x == ""`, true, "refused"},
	// Null is accepted.
	{"string", "var.x == null || length(var.x) > 0", false, "accepted"},
	{"string", `var.x == null ? true : can(regex("^a", var.x))`, false, "accepted"},
	{"string", `var.x != ""`, false, "accepted"},
	{"string", `var.x == null || var.x != ""`, false, "accepted"},
	{"list(string)", `alltrue([for z in coalesce(var.x, []) : endswith(z, "a")])`, false, "accepted"},
	{"list(string)", `length(coalesce(var.x, [])) <= 3`, false, "accepted"},
	{"string", `tostring(var.x) == null || true`, false, "accepted"},
	{"string", `startswith(coalesce(var.x, "vpc-default"), "vpc-")`, false, "accepted"},
	{"string", `coalesce(var.x, "", "a") == "a"`, false, "accepted"},
	{"number", `try(var.x > 0, true)`, false, "accepted"},
	{"list(string)", `anytrue([var.x == null, false])`, false, "accepted"},
	// Not knowable: not reported.
	{"string", `provider::aws::arn_parse(var.x).service == "iam"`, false, ""},
	{"string", `cidrhost(var.x, 1) != ""`, false, ""},
	{"number", `var.y > 0 && var.x > 0`, false, ""},
	{"number", `local.enabled || var.x > 0`, false, ""},
	{"string", `false`, false, ""},
	// The condition fails whatever the value: not because of null.
	{"string", `var.x != null && tonumber("abc") > 0`, false, ""},
	{"number", `length(var.x) > 0`, false, ""},
}

// TestRefusesNull: a validation refuses null when, with the variable null,
// its condition is false or null or fails, and it evaluates without error
// for a non-null value; a condition that references anything but the
// variable, or calls a function tfcapi-lint does not evaluate, is never
// reported (reference: tfcapi-lint CLI, input/user-variable-null-default).
func TestRefusesNull(t *testing.T) {
	for _, tc := range nullCases {
		root, _, err := loadModule(mapSource{"v.tf": []byte(nullCaseModule(tc.typ, tc.cond))})
		if err != nil {
			t.Fatalf("%s: %v", tc.cond, err)
		}
		if got := root.variable("x").refusesNull(); got != tc.refuses {
			t.Errorf("type %q, condition %s: refusesNull = %v, want %v", tc.typ, tc.cond, got, tc.refuses)
		}
	}
}

func nullCaseModule(typ, cond string) string {
	src := "variable \"x\" {\n"
	if typ != "" {
		src += "  type = " + typ + "\n"
	}
	return src + fmt.Sprintf("  default = null\n  validation {\n    condition     = %s\n    error_message = \"x\"\n  }\n}\n", cond)
}

// TestRefusesNullAgreesWithTheRuntimes plans each case that names a
// runtime outcome with the pinned OpenTofu and Terraform, x unset: what
// tfcapi-lint says is refused, both refuse; what it says is accepted,
// OpenTofu accepts (Terraform 1.5 evaluates both sides of || and may
// refuse it) (reference: tfcapi-lint CLI, input/user-variable-null-default).
func TestRefusesNullAgreesWithTheRuntimes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tofu plan and terraform plan")
	}
	for _, runtime := range []string{"tofu", "terraform"} {
		bin, err := tools.Path(runtime)
		if err != nil {
			t.Logf("%s: %v", runtime, err)
			continue
		}
		home := t.TempDir()
		for _, tc := range nullCases {
			if tc.runtime == "" || (runtime == "terraform" && tc.runtime == "accepted") {
				continue
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.tf"), nullCaseModule(tc.typ, tc.cond))
			cmd := exec.Command(bin, "plan", "-input=false", "-no-color")
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + home, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			got := "accepted"
			switch {
			case errors.As(err, &exit):
				got = "refused"
			case err != nil:
				t.Fatalf("%s plan: %v", runtime, err)
			}
			if got != tc.runtime {
				t.Errorf("type %q, condition %s: %s plan %s x = null, the case says %s\n%s", tc.typ, tc.cond, runtime, got, tc.runtime, out)
			}
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
