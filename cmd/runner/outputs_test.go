package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
)

// dropOutput removes `output "<name>" { ... }` (a top-level block whose
// closing brace is alone on its line) from the fixture's module.
func (f *fixture) dropOutput(file, name string) {
	f.t.Helper()
	p := filepath.Join(f.dir, "module", file)
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	re := regexp.MustCompile(`(?ms)^output "` + regexp.QuoteMeta(name) + `" \{.*?^\}\n`)
	out := re.ReplaceAll(b, nil)
	if len(out) == len(b) {
		f.t.Fatalf("%s has no output %q", file, name)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// TestUndeclaredContractOutput runs real OpenTofu on a machine module that
// lacks a contract output. Module Contract, "Null semantics": an absent
// output is OutputsValid=False/OutputsMissing, a hard error the manager
// reports from the result document, not a failed run: the generated root
// leaves the output out, so the apply records its state (and a destroy can
// still destroy), and the result lists the output.
func TestUndeclaredContractOutput(t *testing.T) {
	f := newFixture(t, contract.RoleMachine)
	f.bootstrap = "#cloud-config\n"
	f.dropOutput("outputs.tf", contract.OutputInterruptible)
	f.render(`{}`)

	t.Run("apply succeeds and the result lists the undeclared output", func(t *testing.T) {
		out := f.run("apply")
		f.mustSucceed(out, "init,validate,apply")
		if out.doc.Module == nil || !slices.Equal(out.doc.Module.UndeclaredOutputs, []string{contract.OutputInterruptible}) {
			t.Fatalf("module %+v, want interruptible undeclared; result %s", out.doc.Module, out.raw)
		}
		root, err := os.ReadFile(filepath.Join(f.dir, "work", "root", runner.MainFile))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(root), "module.role.interruptible") || !strings.Contains(string(root), "module.role.provider_id") {
			t.Errorf("the generated root still re-exports the undeclared output, or lost a declared one: %s", root)
		}
		st := f.state()
		if _, ok := st.Outputs[contract.OutputInterruptible]; ok {
			t.Errorf("state has an interruptible output")
		}
		if _, ok := st.Outputs[contract.OutputProviderID]; !ok {
			t.Errorf("state lacks the declared provider_id output: %v", st.Outputs)
		}
	})

	t.Run("refresh and destroy run too, and report it again", func(t *testing.T) {
		for _, op := range []struct{ op, steps string }{{"refresh", "init,refresh"}, {"destroy", "init,destroy"}} {
			out := f.run(op.op)
			f.mustSucceed(out, op.steps)
			if out.doc.Module == nil || !slices.Equal(out.doc.Module.UndeclaredOutputs, []string{contract.OutputInterruptible}) {
				t.Errorf("%s: module %+v; result %s", op.op, out.doc.Module, out.raw)
			}
		}
		if st := f.state(); st.ManagedResources != 0 {
			t.Errorf("%d resources left after destroy", st.ManagedResources)
		}
	})
}
