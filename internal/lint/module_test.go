package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func repoRoot(t testing.TB) string {
	t.Helper()
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNoopModulesLintCleanStrict is make lint-modules inside make test: the
// three no-op modules lint with no finding under --strict.
func TestNoopModulesLintCleanStrict(t *testing.T) {
	for _, role := range contract.Roles() {
		dir := filepath.Join(repoRoot(t), "modules", "noop", string(role))
		code, out, stderr := run("module", dir, "--role", string(role), "--strict")
		if code != ExitOK || out != "0 error(s), 0 warning(s), 0 info\n" {
			t.Errorf("%s: exit %d\n%s%s", role, code, out, stderr)
		}
	}
}

// TestModuleExitCodes: an unparsable module is exit 2, a bad command line
// exit 3 (reference: tfcapi-lint CLI, "Exit codes").
func TestModuleExitCodes(t *testing.T) {
	unparsable := t.TempDir()
	writeBase(t, unparsable, contract.RoleMachine)
	writeFile(t, filepath.Join(unparsable, "broken.tf"), "variable \"x\" {\n  type = \n")
	badJSON := t.TempDir()
	writeBase(t, badJSON, contract.RoleMachine)
	writeFile(t, filepath.Join(badJSON, "broken.tf.json"), "{\"variable\": [1, 2")
	missingNested := t.TempDir()
	writeBase(t, missingNested, contract.RoleMachine)
	writeFile(t, filepath.Join(missingNested, "net.tf"), "module \"net\" {\n  source = \"./net\"\n}\n")
	clean := t.TempDir()
	writeBase(t, clean, contract.RoleCluster)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unparsable native", []string{"module", unparsable, "--role", "machine"}, ExitUnparsable, "broken.tf:"},
		{"unparsable JSON", []string{"module", badJSON, "--role", "machine"}, ExitUnparsable, "broken.tf.json:"},
		{"missing nested module", []string{"module", missingNested, "--role", "machine"}, ExitUnparsable, `module "net"`},
		{"missing directory", []string{"module", filepath.Join(clean, "nope"), "--role", "cluster"}, ExitUnparsable, "nope"},
		{"no role", []string{"module", clean}, ExitUsage, "--role is required"},
		{"bad role", []string{"module", clean, "--role", "worker"}, ExitUsage, "worker"},
		{"bad contract", []string{"module", clean, "--role", "cluster", "--contract", "v1beta1"}, ExitUsage, "v1beta1"},
		{"unknown allowed check", []string{"module", clean, "--role", "cluster", "--allow-warning", "input/nope"}, ExitUsage, "input/nope"},
		{"unknown flag", []string{"module", clean, "--role", "cluster", "--bogus"}, ExitUsage, "bogus"},
		{"two dirs", []string{"module", clean, clean, "--role", "cluster"}, ExitUsage, "one module directory"},
		{"bad format", []string{"module", clean, "--role", "cluster", "--format", "xml"}, ExitUsage, "xml"},
		{"unknown command", []string{"lint", clean}, ExitUsage, "unknown command"},
		{"no command", nil, ExitUsage, "Usage"},
		{"clean", []string{"module", clean, "--role", "cluster", "--strict"}, ExitOK, ""},
	} {
		code, _, stderr := run(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, code, stderr, tc.code, tc.stderr)
		}
	}
}

// TestAllowWarning: --allow-warning downgrades a warning to info (repeatable
// and comma-separated), never an error (book: tfcapi-lint "Strict mode and
// allowed warnings").
func TestAllowWarning(t *testing.T) {
	dir := t.TempDir()
	writeBase(t, dir, contract.RoleMachine)
	// A warning (input/user-variable-default), another (output/reserved) and
	// an error (input/reserved).
	writeFile(t, filepath.Join(dir, "extra.tf"), "variable \"size\" {\n  type = string\n}\n\noutput \"captf_x\" {\n  value = 1\n}\n\nvariable \"captf_y\" {\n  type    = string\n  default = \"\"\n}\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, ExitFindings, "1 error(s), 2 warning(s), 0 info"},
		{[]string{"--allow-warning", "input/user-variable-default"}, ExitFindings, "1 error(s), 1 warning(s), 1 info"},
		{[]string{"--allow-warning", "input/user-variable-default,output/reserved"}, ExitFindings, "1 error(s), 0 warning(s), 2 info"},
		{[]string{"--allow-warning", "input/user-variable-default", "--allow-warning", "output/reserved", "--allow-warning", "input/reserved"}, ExitFindings, "1 error(s), 0 warning(s), 2 info"},
	} {
		code, out, _ := run(append([]string{"module", dir, "--role", "machine", "--strict"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d\n%s\nwant %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
	// Without the error, allowing every warning passes --strict.
	writeFile(t, filepath.Join(dir, "extra.tf"), "variable \"size\" {\n  type = string\n}\n")
	if code, out, _ := run("module", dir, "--role", "machine", "--strict", "--allow-warning", "input/user-variable-default"); code != ExitOK {
		t.Errorf("allowed warning under --strict: exit %d\n%s", code, out)
	}
	if code, out, _ := run("module", dir, "--role", "machine", "--strict"); code != ExitFindings {
		t.Errorf("warning under --strict: exit %d\n%s", code, out)
	}
}

// TestFindingsSorted: findings are sorted by file, line, ID and message
// (reference: tfcapi-lint CLI, "JSON report").
func TestFindingsSorted(t *testing.T) {
	dir := t.TempDir()
	writeBase(t, dir, contract.RoleMachine)
	writeFile(t, filepath.Join(dir, "b.tf"), "variable \"zz\" {\n  type = string\n}\n\nvariable \"aa\" {\n  type = string\n}\n")
	writeFile(t, filepath.Join(dir, "a.tf"), "output \"captf_b\" {\n  value = 1\n}\n\noutput \"captf_a\" {\n  value = 1\n}\n")
	if err := os.Remove(filepath.Join(dir, "versions.tf")); err != nil {
		t.Fatal(err)
	}
	r, err := LintModule(dir, ModuleOptions{Role: contract.RoleMachine, Contract: contract.Version})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.ID))
	}
	want := []string{":0 module/version", "a.tf:1 output/reserved", "a.tf:5 output/reserved", "b.tf:1 input/user-variable-default", "b.tf:5 input/user-variable-default"}
	if !slices.Equal(got, want) {
		t.Errorf("findings in order %q, want %q", got, want)
	}
	if r.Summary != (Summary{Error: 0, Warning: 4, Info: 1}) {
		t.Errorf("summary %+v", r.Summary)
	}
}
