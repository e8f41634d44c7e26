package main_test

import (
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestDestructivePlanGuard: a guarded apply stops before a plan that
// replaces a resource (Plan Approval, "The destructive-plan guard"), applies
// once that inputs hash is approved, and an approved plan hash that no
// longer matches stops with plan-changed.
//
// What rests on the runtime runs on OpenTofu and on Terraform: the guarded
// plan and its show -json read for the replacement, a plan hash the same
// from a plan Job to the apply that matches it, a saved plan applied. The
// decisions that are CAPTF's alone once the plan is read (another inputs
// hash does not approve, a stale plan hash stops, an approved inputs hash
// applies) run on OpenTofu only.
func TestDestructivePlanGuard(t *testing.T) { onRuntimes(t, testDestructivePlanGuard) }

func testDestructivePlanGuard(t *testing.T, rt tools.Runtime) {
	all := rt == tools.OpenTofu
	f := newFixtureOn(t, contract.RoleCluster, rt)
	f.render(`{"generation":"1"}`)
	f.mustSucceed(f.run("apply"), "init,validate,apply")

	h2 := f.render(`{"generation":"2"}`)

	t.Run("a replacement is blocked: kind blocked, nothing changes", func(t *testing.T) {
		before := f.stateSecret()
		out := f.run("apply", "--guard-deletes", "--inputs-hash="+h2)
		if out.code != runner.ExitFailure {
			t.Fatalf("exit %d, want 1\n%s", out.code, out.log())
		}
		e := out.doc.Error
		if e == nil || e.Kind != infrav1.RunErrorBlocked || e.Step != nil {
			t.Fatalf("error %+v", e)
		}
		if !strings.Contains(e.Tail, "module.role.terraform_data.generation (replace)") || !strings.Contains(e.Tail, h2) {
			t.Errorf("summary does not name the replaced resource and the hash to approve: %q", e.Tail)
		}
		if out.steps() != "init,validate,plan,show" {
			t.Errorf("steps %s", out.steps())
		}
		p := out.doc.Plan
		if p == nil || p.Add != 1 || p.Destroy != 1 || !strings.HasPrefix(p.Hash, "p1:") {
			t.Errorf("plan %+v", p)
		}
		after := f.stateSecret()
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("a blocked apply changed the state Secret")
		}
		if l := f.lease(); l.Spec.HolderIdentity != nil {
			t.Errorf("lock left held")
		}
	})

	if all {
		t.Run("approving another inputs hash does not approve this one", func(t *testing.T) {
			out := f.run("apply", "--guard-deletes", "--inputs-hash="+h2, "--allow-deletes-hash=h2:someotherhash")
			if out.doc.Error == nil || out.doc.Error.Kind != infrav1.RunErrorBlocked {
				t.Fatalf("result %s", out.raw)
			}
		})
	}

	if all {
		t.Run("the approved inputs hash applies the replacement", func(t *testing.T) {
			out := f.run("apply", "--guard-deletes", "--inputs-hash="+h2, "--allow-deletes-hash="+h2)
			f.mustSucceed(out, "init,validate,plan,show,apply")
			if c := out.doc.Changes; c == nil || c.Add != 1 || c.Destroy != 1 {
				t.Errorf("changes %+v", c)
			}
			if got := f.attribute(f.stateDoc(), "generation", "triggers_replace"); !strings.Contains(jsonString(t, got), `"2"`) {
				t.Errorf("generation not replaced: %v", got)
			}
		})
	}

	f.render(`{"generation":"3"}`)
	planned := f.run("plan")
	f.mustSucceed(planned, "init,validate,plan,show")
	approved := planned.doc.Plan.Hash

	if all {
		t.Run("an approved plan whose hash no longer matches stops with plan-changed", func(t *testing.T) {
			before := f.stateSecret()
			stale := runner.EmptyPlanHash
			out := f.run("apply", "--guard-deletes", "--expect-plan="+stale)
			e := out.doc.Error
			if out.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorPlanChanged {
				t.Fatalf("exit %d result %s", out.code, out.raw)
			}
			if out.doc.Plan == nil || out.doc.Plan.Hash != approved {
				t.Errorf("plan-changed result carries plan %+v, want hash %s", out.doc.Plan, approved)
			}
			if f.stateSecret().ResourceVersion != before.ResourceVersion {
				t.Errorf("a plan-changed apply changed the state")
			}
		})
	}

	t.Run("the approved plan hash applies, deletes included, without a destructive approval", func(t *testing.T) {
		out := f.run("apply", "--guard-deletes", "--inputs-hash=h2:unapproved", "--expect-plan="+approved)
		f.mustSucceed(out, "init,validate,plan,show,apply")
		if c := out.doc.Changes; c == nil || c.Add != 1 || c.Destroy != 1 {
			t.Errorf("changes %+v", c)
		}
	})
}
