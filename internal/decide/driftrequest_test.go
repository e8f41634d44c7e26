package decide

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestDriftCheckRequestedIsDueNow: captf.io/drift-check-requested newer than
// the last check makes the drift check due now, for every kind, where the
// interval alone would wait another 25 minutes.
func TestDriftCheckRequestedIsDueNow(t *testing.T) {
	for _, kind := range v1alpha1.WorkloadKinds() {
		t.Run(string(kind), func(t *testing.T) {
			o := steady(kind)
			if d := mustDecide(t, o); d.Op != OpNone {
				t.Fatalf("without a request: %s (%s), want a wait", d.Op, d.Reason)
			}
			o.DriftCheckRequested = ago(time.Second)
			d := mustDecide(t, o)
			if d.Op != OpDrift || d.Reason != ReasonDriftDue {
				t.Fatalf("requested: %s (%s), want drift (%s)", d.Op, d.Reason, ReasonDriftDue)
			}
			if d.DriftRequestAnswered {
				t.Error("the request is answered by the Job it starts, not before")
			}
		})
	}
}

// TestDriftCheckRequestedKeepsEveryOtherRule: the request moves the check's
// time only: nothing runs before an apply succeeded, while a Job is active
// (it runs after), while paused or deleting, or while the drift Job backs
// off after a failure.
func TestDriftCheckRequestedKeepsEveryOtherRule(t *testing.T) {
	requested := func(mut func(*Observation)) Observation {
		o := steady(v1alpha1.KindTerraformCluster)
		o.DriftCheckRequested = ago(time.Second)
		mut(&o)
		return o
	}
	for name, tc := range map[string]struct {
		o    Observation
		want Reason
	}{
		"not applied yet": {requested(func(o *Observation) {
			o.EverApplied, o.Provisioned, o.LastApply, o.LastRefresh, o.LastDriftCheck = false, false, time.Time{}, time.Time{}, time.Time{}
			o.State, o.StateInputsHash, o.Jobs = StateNotFound, "", nil
		}), ReasonNoState},
		"Job active": {requested(func(o *Observation) { o.ActiveJob = &ActiveJob{Name: "refresh-1", Op: OpRefresh} }), ReasonJobRunning},
		"paused":     {requested(func(o *Observation) { o.Paused = true }), ReasonPaused},
		"deleting":   {requested(func(o *Observation) { o.Deleting = true }), ReasonDeleting},
		"backing off": {requested(func(o *Observation) {
			o.Jobs = append(o.Jobs, JobRecord{Name: "drift-f", Op: OpDrift, Attempt: 1, Finished: ago(2 * time.Second), InputsHash: hashA})
		}), ReasonDriftDue.Backoff()},
	} {
		t.Run(name, func(t *testing.T) {
			d := mustDecide(t, tc.o)
			if d.Op == OpDrift {
				t.Fatalf("drift started (%s)", d.Reason)
			}
			if d.Reason != tc.want {
				t.Errorf("reason %s, want %s", d.Reason, tc.want)
			}
			if d.DriftRequestAnswered {
				t.Error("the request is answered although no check ran")
			}
		})
	}
}

// TestDriftCheckRequestAnsweredByANewerCheck: a request no newer than the
// last drift check (the check ran after it was asked for) starts nothing
// and is answered.
func TestDriftCheckRequestAnsweredByANewerCheck(t *testing.T) {
	o := steady(v1alpha1.KindTerraformMachinePool)
	o.DriftCheckRequested = o.LastDriftCheck.Add(-time.Minute)
	d := mustDecide(t, o)
	if d.Op == OpDrift {
		t.Fatalf("drift started for a request an earlier check answered")
	}
	if !d.DriftRequestAnswered {
		t.Error("a request older than the last check is not answered")
	}
	// A check the reconcile bookkeeps in this very pass counts too.
	o.DriftCheckRequested = ago(time.Minute)
	o.Jobs = append(o.Jobs, JobRecord{Name: "drift-2", Op: OpDrift, Attempt: 1, Finished: ago(time.Second), Succeeded: true, InputsHash: hashA})
	if d := mustDecide(t, o); d.Op == OpDrift || !d.DriftRequestAnswered {
		t.Errorf("a request the Job just bookkept answers: %s, answered %v", d.Op, d.DriftRequestAnswered)
	}
}

// TestDriftCheckRequestedWhileDriftIsDisabled: intervalSeconds 0 turns drift
// checks off entirely (book: Drift), a request included: no check starts and
// the request is answered, so it does not linger.
func TestDriftCheckRequestedWhileDriftIsDisabled(t *testing.T) {
	for _, kind := range []v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster, v1alpha1.KindTerraformMachine} {
		t.Run(string(kind), func(t *testing.T) {
			o := steady(kind)
			o.Drift.IntervalSeconds = ptr.To[int32](0)
			o.DriftCheckRequested = ago(time.Second)
			d := mustDecide(t, o)
			if d.Op == OpDrift {
				t.Fatal("a drift check started with drift checks off")
			}
			if !d.DriftRequestAnswered {
				t.Error("the request is not answered with drift checks off")
			}
		})
	}
}
