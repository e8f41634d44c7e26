package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The no-op cluster module plus the test extras manage four resources:
// substrate, generation, probe and checked (slow has count 0).
const clusterResources = 4

// TestLifecycle runs every operation against one object, in the order an
// object lives: apply (whose module declares every contract output: none
// is reported undeclared), a guarded apply with nothing to do, refresh,
// drift without and with drift, a plan, destroy and a restore of the first
// applied state. It runs on each runtime an image may ship, OpenTofu and
// Terraform.
func TestLifecycle(t *testing.T) { onRuntimes(t, testLifecycle) }

func testLifecycle(t *testing.T, rt tools.Runtime) {
	f := newFixtureOn(t, contract.RoleCluster, rt)
	hash := f.render(`{"generation":"1"}`)

	t.Run("apply: init, validate, apply; the state Secret holds the resources", func(t *testing.T) {
		out := f.run("apply")
		f.mustSucceed(out, "init,validate,apply")
		t.Logf("%s %s: the apply Job's runner took %s (%s)", rt.Name, rt.Version, out.took.Round(time.Millisecond), stepTimes(out))
		if c := out.doc.Changes; c == nil || c.Add != clusterResources || c.Change != 0 || c.Destroy != 0 {
			t.Errorf("changes %+v, want %d added", c, clusterResources)
		}
		if out.doc.Drift != nil || out.doc.Plan != nil {
			t.Errorf("an apply reports no drift and no plan: %s", out.raw)
		}
		st := f.state()
		if st.ManagedResources != clusterResources {
			t.Errorf("state has %d managed resources", st.ManagedResources)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "work", "cli.tfrc")); err != nil {
			t.Errorf("no cli.tfrc with a provider mirror: %v", err)
		}
		sec := f.stateSecret()
		if sec.Labels["captf.io/managed"] != "true" || sec.Labels["captf.io/owner-name"] != f.name {
			t.Errorf("state Secret lacks the backend labels: %v", sec.Labels)
		}
		if l := f.lease(); l.Spec.HolderIdentity != nil {
			t.Errorf("lock still held after a clean run: %s", *l.Spec.HolderIdentity)
		}
		// The no-op module declares every contract output: the result
		// lists none undeclared, and the root is the rendered one.
		if out.doc.Module == nil || len(out.doc.Module.UndeclaredOutputs) != 0 {
			t.Errorf("module %+v; result %s", out.doc.Module, out.raw)
		}
		if !strings.Contains(string(out.raw), `"module":{"undeclaredOutputs":[]}`) {
			t.Errorf("the result does not carry an empty undeclaredOutputs: %s", out.raw)
		}
		rendered, _ := os.ReadFile(filepath.Join(f.dir, "config", runner.MainFile))
		root, _ := os.ReadFile(filepath.Join(f.dir, "work", "root", runner.MainFile))
		if len(rendered) == 0 || string(rendered) != string(root) {
			t.Errorf("the generated root differs from the rendered one")
		}
	})
	applied := f.stateSecret().Data[state.DataKey]
	appliedSerial := f.state().Serial

	t.Run("a guarded apply whose plan is empty skips its apply step", func(t *testing.T) {
		out := f.run("apply", "--guard-deletes", "--inputs-hash="+hash)
		f.mustSucceed(out, "init,validate,plan")
		if out.doc.Changes != nil || out.doc.Plan != nil {
			t.Errorf("an apply that applied nothing reports %s", out.raw)
		}
		if f.state().Serial != appliedSerial {
			t.Errorf("state serial moved")
		}
	})

	t.Run("refresh: init, apply -refresh-only; the serial stays", func(t *testing.T) {
		out := f.run("refresh")
		f.mustSucceed(out, "init,refresh")
		if out.doc.Changes != nil {
			t.Errorf("a refresh reports changes: %s", out.raw)
		}
		if st := f.state(); st.Serial != appliedSerial || st.ManagedResources != clusterResources {
			t.Errorf("state serial %d resources %d after refresh", st.Serial, st.ManagedResources)
		}
	})

	t.Run("drift without drift: detected false, zero counts, no show", func(t *testing.T) {
		out := f.run("drift")
		f.mustSucceed(out, "init,refresh,plan")
		d := out.doc.Drift
		if d == nil || d.Detected || d.Add+d.Change+d.Destroy != 0 || len(d.Resources) != 0 {
			t.Errorf("drift %+v", d)
		}
	})

	t.Run("drift after the state changed out of band: detected, with counts and addresses", func(t *testing.T) {
		f.tamper("probe", "edited-by-hand")
		out := f.run("drift")
		f.mustSucceed(out, "init,refresh,plan,show")
		d := out.doc.Drift
		if d == nil || !d.Detected || d.Change != 1 || d.Add != 0 || d.Destroy != 0 {
			t.Fatalf("drift %+v", d)
		}
		if strings.Join(d.Resources, ",") != "module.role.terraform_data.probe" {
			t.Errorf("drift resources %v", d.Resources)
		}
		if strings.Contains(out.log(), `"resource_changes"`) {
			t.Errorf("show -json output reached the log")
		}
	})

	t.Run("plan: the summary, the hash and the labeled resources; nothing applied", func(t *testing.T) {
		before := f.stateSecret().ResourceVersion
		f.render(`{"generation":"2"}`)
		out := f.run("plan")
		f.mustSucceed(out, "init,validate,plan,show")
		p := out.doc.Plan
		if p == nil {
			t.Fatalf("no plan in %s", out.raw)
		}
		if p.Add != 1 || p.Change != 1 || p.Destroy != 1 {
			t.Errorf("plan counts %d/%d/%d, want 1/1/1", p.Add, p.Change, p.Destroy)
		}
		want := "module.role.terraform_data.generation (replace),module.role.terraform_data.probe (update)"
		if got := strings.Join(p.Resources, ","); got != want {
			t.Errorf("plan resources %s, want %s", got, want)
		}
		if !strings.HasPrefix(p.Hash, "p1:") || len(p.Hash) != 67 {
			t.Errorf("plan hash %q", p.Hash)
		}
		if f.stateSecret().ResourceVersion != before {
			t.Errorf("a plan Job changed the state")
		}
	})

	t.Run("destroy: init, destroy; the state keeps no resource", func(t *testing.T) {
		out := f.run("destroy")
		f.mustSucceed(out, "init,destroy")
		if c := out.doc.Changes; c == nil || c.Destroy != clusterResources {
			t.Errorf("changes %+v, want %d destroyed", c, clusterResources)
		}
		if st := f.state(); st.ManagedResources != 0 {
			t.Errorf("%d resources left", st.ManagedResources)
		}
	})

	t.Run("restore: init, state push -force, state list; the backup is the state again", func(t *testing.T) {
		// The backup chunks as the manager mounts them: the state Secret's
		// gzip payload, here split in two to prove they are concatenated.
		restoreDir := filepath.Join(f.dir, "config", "restore")
		if err := os.MkdirAll(restoreDir, 0o755); err != nil {
			t.Fatal(err)
		}
		half := len(applied) / 2
		for i, chunk := range [][]byte{applied[:half], applied[half:]} {
			if err := os.WriteFile(filepath.Join(restoreDir, strconv.Itoa(i)), chunk, 0o440); err != nil {
				t.Fatal(err)
			}
		}
		out := f.run("restore", "--restore-chunks=2", "--restore-resources="+strconv.Itoa(clusterResources))
		f.mustSucceed(out, "init,state-push,state-list")
		if !strings.Contains(out.stdout, "module.role.terraform_data.substrate") {
			t.Errorf("state list output is not in the log")
		}
		st := f.state()
		if st.ManagedResources != clusterResources {
			t.Errorf("restored state has %d resources", st.ManagedResources)
		}
		root, _ := os.ReadFile(filepath.Join(f.dir, "work", "root", runner.MainFile))
		if strings.Contains(string(root), "module") || strings.Contains(string(root), "variable") {
			t.Errorf("a restore's root is the backend block alone, got %s", root)
		}
	})

	t.Run("a restore whose pushed state lists nothing fails at state-list", func(t *testing.T) {
		// Push an empty state (plain JSON this time) while the backup is
		// said to hold resources.
		restoreDir := filepath.Join(f.dir, "config", "restore")
		if err := os.RemoveAll(restoreDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(restoreDir, 0o755); err != nil {
			t.Fatal(err)
		}
		doc := f.stateDoc()
		doc["resources"] = []any{}
		doc["serial"] = doc["serial"].(float64) + 1
		writeJSON(t, filepath.Join(restoreDir, "0"), doc)
		out := f.run("restore", "--restore-chunks=1", "--restore-resources=3")
		if out.code != 1 || out.doc.Error == nil || out.doc.Error.Kind != infrav1.RunErrorStep || *out.doc.Error.Step != runner.StepStateList {
			t.Fatalf("exit %d result %s", out.code, out.raw)
		}
	})

	t.Run("events: every step, the plan summary and the resource counts, on the object and related to the Job", func(t *testing.T) {
		evs := f.events()
		reasons := map[string]int{}
		for _, e := range evs {
			reasons[e.Reason]++
			if e.Regarding.Kind != "TerraformCluster" || string(e.Regarding.UID) != f.uid || e.Related == nil || e.Related.Kind != "Job" {
				t.Errorf("event %s regarding %+v related %+v", e.Reason, e.Regarding, e.Related)
			}
			if e.ReportingController != runner.ReportingController {
				t.Errorf("reporting controller %q", e.ReportingController)
			}
		}
		for _, r := range []string{infrav1.RunStartedEvent, infrav1.StepStartedEvent, infrav1.StepSucceededEvent,
			infrav1.PlanSummaryEvent, infrav1.ResourcesChangedEvent, infrav1.RunFinishedEvent, infrav1.StepFailedEvent} {
			if reasons[r] == 0 {
				t.Errorf("no %s event among %v", r, reasons)
			}
		}
		if reasons[infrav1.RunStartedEvent] != 9 || reasons[infrav1.RunFinishedEvent] != 9 {
			t.Errorf("want one RunStarted and RunFinished per run (9 runs): %v", reasons)
		}
	})
}
