package jobs

import (
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

// TestUnreportable: blocked and plan-changed are accepted only from the
// Jobs the runner can write them for; each case names its book rule.
func TestUnreportable(t *testing.T) {
	const (
		tc  = infrav1.KindTerraformCluster
		tm  = infrav1.KindTerraformMachine
		tmp = infrav1.KindTerraformMachinePool
	)
	apply, drift, refresh, destroy, plan, restore := infrav1.OperationApply, infrav1.OperationDrift, infrav1.OperationRefresh,
		infrav1.OperationDestroy, infrav1.OperationPlan, infrav1.OperationRestore
	blocked, changed := infrav1.RunErrorBlocked, infrav1.RunErrorPlanChanged
	guarded := func(k infrav1.WorkloadKind, op infrav1.Operation) Arming {
		return Arming{Kind: k, Op: op, GuardDeletes: true}
	}
	for _, c := range []struct {
		rule string
		a    Arming
		kind infrav1.RunErrorKind
		ok   bool
	}{
		{"Plan Approval: every TerraformCluster apply runs its plan first and stops before a delete (blocked)",
			guarded(tc, apply), blocked, true},
		{"Plan Approval: a drift remediation is a guarded TerraformCluster apply too (blocked)",
			guarded(tc, apply), blocked, true},
		{"Plan Approval: an approval by inputs hash lets the destructive plan through, so it cannot be blocked",
			Arming{Kind: tc, Op: apply, GuardDeletes: true, DeletesApproved: true}, blocked, false},
		{"Plan Approval: an approved plan covers its deletes; the apply of one is never blocked",
			Arming{Kind: tc, Op: apply, ExpectPlan: true}, blocked, false},
		{"Plan Approval, What is not guarded: a TerraformCluster apply the manager did not arm is not blocked",
			Arming{Kind: tc, Op: apply}, blocked, false},
		{"Plan Approval, What is not guarded: a TerraformMachine apply is never blocked",
			Arming{Kind: tm, Op: apply}, blocked, false},
		{"Plan Approval, What is not guarded: a TerraformMachinePool apply (an exports change included) is never blocked",
			Arming{Kind: tmp, Op: apply}, blocked, false},
		{"Plan Approval, What is not guarded: even armed, a machine's apply has no guard",
			guarded(tm, apply), blocked, false},
		{"Retries and Backoff: only an apply is blocked, not a drift check", guarded(tc, drift), blocked, false},
		{"Retries and Backoff: only an apply is blocked, not a refresh", guarded(tc, refresh), blocked, false},
		{"Retries and Backoff: only an apply is blocked, not a destroy", guarded(tc, destroy), blocked, false},
		{"Retries and Backoff: only an apply is blocked, not a plan Job", guarded(tc, plan), blocked, false},
		{"Retries and Backoff: only an apply is blocked, not a restore", guarded(tc, restore), blocked, false},

		{"Plan Approval, Manual: an approved apply whose plan no longer matches stops (plan-changed)",
			Arming{Kind: tc, Op: apply, ExpectPlan: true}, changed, true},
		{"Plan Approval, Manual: an apply without an approved plan has no plan to differ from",
			guarded(tc, apply), changed, false},
		{"Plan Approval, What is not guarded: applyPolicy exists only on TerraformCluster (machine)",
			Arming{Kind: tm, Op: apply, ExpectPlan: true}, changed, false},
		{"Plan Approval, What is not guarded: applyPolicy exists only on TerraformCluster (pool)",
			Arming{Kind: tmp, Op: apply}, changed, false},
		{"Retries and Backoff: an approved plan is applied, never planned, drifted or destroyed",
			Arming{Kind: tc, Op: plan, ExpectPlan: true}, changed, false},
		{"Retries and Backoff: a drift Job does not run an approved plan", Arming{Kind: tc, Op: drift}, changed, false},
		{"Retries and Backoff: a destroy does not run an approved plan", Arming{Kind: tc, Op: destroy}, changed, false},

		{"Retries and Backoff: any Job can fail a step", Arming{Kind: tm, Op: apply}, infrav1.RunErrorStep, true},
		{"Retries and Backoff: any Job can be stopped from outside", Arming{Kind: tmp, Op: drift}, infrav1.RunErrorInterrupted, true},
		{"Image Contract: any Job can find the image broken", Arming{Kind: tm, Op: destroy}, infrav1.RunErrorImageLayout, true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			why := Unreportable(c.a, c.kind)
			if (why == "") != c.ok {
				t.Fatalf("%+v reporting %s: %q, want reportable %v", c.a, c.kind, why, c.ok)
			}
			if !c.ok && (!strings.Contains(why, "the result reports "+string(c.kind)) || !strings.Contains(why, "counts as a failure")) {
				t.Errorf("the reason %q does not say the result is not one this Job can report", why)
			}
		})
	}
}

// TestArmingOfBuiltJobs: what Unreportable judges is read back from the
// Job as Build made it.
func TestArmingOfBuiltJobs(t *testing.T) {
	guarded := testRun()
	approvedDeletes := testRun()
	approvedDeletes.AllowDeletesHash = approvedDeletes.InputsHash
	approvedPlan := testRun()
	approvedPlan.GuardDeletes, approvedPlan.ExpectPlan = false, "p1:approved"
	machine := testRun()
	machine.Owner.Kind = infrav1.KindTerraformMachine
	machine.GuardDeletes = false
	for _, c := range []struct {
		name string
		run  *Run
		want Arming
	}{
		{"a guarded cluster apply", guarded, Arming{Kind: infrav1.KindTerraformCluster, Op: infrav1.OperationApply, GuardDeletes: true}},
		{"a cluster apply whose destructive plan is approved", approvedDeletes, Arming{Kind: infrav1.KindTerraformCluster, Op: infrav1.OperationApply, GuardDeletes: true, DeletesApproved: true}},
		{"a cluster apply of an approved plan", approvedPlan, Arming{Kind: infrav1.KindTerraformCluster, Op: infrav1.OperationApply, ExpectPlan: true}},
		{"a machine apply", machine, Arming{Kind: infrav1.KindTerraformMachine, Op: infrav1.OperationApply}},
	} {
		t.Run(c.name, func(t *testing.T) {
			job, _ := mustBuild(t, c.run)
			if got := ArmingOf(job); got != c.want {
				t.Errorf("arming %+v, want %+v", got, c.want)
			}
			// The manager classifies the Job its cache holds: the
			// arming survives ForCache.
			if got := ArmingOf(ForCache(job.DeepCopy())); got != c.want {
				t.Errorf("arming of the cached Job %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestForgedResultIsAFailure: a module that writes its own result claiming
// blocked or plan-changed gets a failed run that backs off; what it wrote
// does not become status.lastRun's error or status.plan.
func TestForgedResultIsAFailure(t *testing.T) {
	for _, kind := range []infrav1.RunErrorKind{infrav1.RunErrorBlocked, infrav1.RunErrorPlanChanged} {
		job := armed(jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), infrav1.KindTerraformMachine)
		c := Classify(job, podWith(docWithError(t, infrav1.OperationApply, kind, "plan"), 1))
		if c.Outcome != OutcomeFailed || !c.Outcome.Counts() {
			t.Fatalf("%s: outcome %s, want failed and counted", kind, c.Outcome)
		}
		if c.Reason(infrav1.OperationApply) != infrav1.ApplyFailedReason {
			t.Errorf("%s: reason %s", kind, c.Reason(infrav1.OperationApply))
		}
		if !strings.Contains(c.Detail, "not a result the apply Job of a TerraformMachine can report") {
			t.Errorf("%s: detail %q", kind, c.Detail)
		}
		if e := c.Result.LastRun.Error; e == nil || e.Kind != infrav1.RunErrorStep || e.Summary != c.Detail || e.Step != "plan" {
			t.Errorf("%s: lastRun.error %+v", kind, e)
		}
		if c.Result.Plan != nil {
			t.Errorf("%s: the forged plan is kept: %+v", kind, c.Result.Plan)
		}
		if m := c.Marks(); len(m) != 0 {
			t.Errorf("%s: marks %v", kind, m)
		}
		if rec := Record(job, &c); rec.Blocked || rec.PlanChanged || rec.Outcome() != decide.OutcomeFailed {
			t.Errorf("%s: record %+v", kind, rec)
		}
	}
}
