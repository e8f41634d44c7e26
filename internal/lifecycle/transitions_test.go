package lifecycle

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// TestTransitionEvents checks the events that mark a condition's
// transition, which compare the condition before and after it is set.
func TestTransitionEvents(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	drift := func(found bool) func(f *Flow, p *Pass) {
		return func(f *Flow, p *Pass) {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}
			f.driftCheckedEvent(p, job, &jobResult{name: job.Name, op: infrav1.OperationDrift, c: &jobs.Classification{Outcome: jobs.OutcomeSucceeded, FinishedAt: time.Unix(1, 0),
				Result: jobs.Result{DriftDetected: found}}})
		}
	}
	outputs := func(status, reason string) func(f *Flow, p *Pass) {
		return func(f *Flow, p *Pass) {
			f.recordOutputs(p, contract.Verdict{Status: status, Reason: reason, Message: "m"})
		}
	}
	for _, c := range []struct {
		name   string
		before []metav1.Condition
		do     func(*Flow, *Pass)
		want   string // event reason, "" for none
	}{
		{"DriftResolved: DriftDetected True to False", []metav1.Condition{cond(infrav1.DriftDetectedCondition, metav1.ConditionTrue, infrav1.DriftRemediatingReason)}, drift(false), infrav1.DriftResolvedEvent},
		{"no DriftResolved when DriftDetected was already False", []metav1.Condition{cond(infrav1.DriftDetectedCondition, metav1.ConditionFalse, infrav1.NoDriftReason)}, drift(false), ""},
		{"DriftDetected: a drift Job found drift", nil, drift(true), infrav1.DriftDetectedEvent},
		{"OutputsInvalid: OutputsValid turns False", []metav1.Condition{cond(infrav1.OutputsValidCondition, metav1.ConditionTrue, infrav1.OutputsValidReason)}, outputs(contract.StatusFalse, "OutputsMissing"), infrav1.OutputsInvalidEvent},
		{"no OutputsInvalid while OutputsValid stays False", []metav1.Condition{cond(infrav1.OutputsValidCondition, metav1.ConditionFalse, "OutputsMissing")}, outputs(contract.StatusFalse, "OutputsMissing"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			obj.Status.Conditions = c.before
			rec := events.NewFakeRecorder(10)
			p := &Pass{Obj: obj, Kind: infrav1.KindTerraformCluster}
			snapshotConditions(p)
			c.do(&Flow{Recorder: rec, Adapter: readyAdapter{}}, p)
			got := ""
			select {
			case e := <-rec.Events:
				got = e
			default:
			}
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, " "+c.want+" ") {
				t.Fatalf("event %q, want reason %q", got, c.want)
			}
		})
	}
}

// TestConditionTransitionEvents: the events reference-facts §2 ties to a
// condition's transition are emitted once, when the pass's computed
// conditions differ from the ones it read: DeletionStarted, Paused,
// Resumed, StateLost, StateUnreadable and ConditionChanged for an owned
// condition without an event of its own.
func TestConditionTransitionEvents(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	now := metav1.Now()
	for _, c := range []struct {
		name     string
		before   []metav1.Condition
		deleting bool
		pass     func(p *Pass)
		want     []string // event type and reason, in order
	}{
		{name: "DeletionStarted: the first pass with a deletion timestamp",
			before: []metav1.Condition{cond(infrav1.DeletingCondition, metav1.ConditionFalse, infrav1.NotDeletingReason)}, deleting: true,
			want: []string{"Normal DeletionStarted"}},
		{name: "no DeletionStarted on later passes of a deleting object",
			before: []metav1.Condition{cond(infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason)}, deleting: true},
		{name: "Paused: Paused turns True",
			before: []metav1.Condition{cond(infrav1.PausedCondition, metav1.ConditionFalse, infrav1.NotPausedReason)},
			pass:   func(p *Pass) { p.facts.pausedRead, p.paused = true, true },
			want:   []string{"Normal Paused"}},
		{name: "Resumed: Paused True turns False",
			before: []metav1.Condition{cond(infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason)},
			pass:   func(p *Pass) { p.facts.pausedRead = true },
			want:   []string{"Normal Resumed"}},
		{name: "no Paused while it stays paused",
			before: []metav1.Condition{cond(infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason)},
			pass:   func(p *Pass) { p.facts.pausedRead, p.paused = true, true }},
		{name: "StateLost: StateReadable turns False/StateLost",
			before: []metav1.Condition{cond(infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason)},
			pass: func(p *Pass) {
				p.facts.state = &stateReading{outcome: stateLost}
			},
			want: []string{"Warning StateLost"}},
		{name: "StateUnreadable: StateReadable turns False/StateCorrupt",
			before: []metav1.Condition{cond(infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason)},
			pass: func(p *Pass) {
				p.facts.state = &stateReading{outcome: stateUnreadable, reason: infrav1.StateCorruptReason, detail: "bad"}
			},
			want: []string{"Warning StateUnreadable"}},
		{name: "no StateUnreadable while the state stays corrupt",
			before: []metav1.Condition{cond(infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateCorruptReason)},
			pass: func(p *Pass) {
				p.facts.state = &stateReading{outcome: stateUnreadable, reason: infrav1.StateCorruptReason, detail: "bad"}
			}},
		{name: "ConditionChanged: DependenciesReady turns False, Warning",
			before: []metav1.Condition{cond(infrav1.DependenciesReadyCondition, metav1.ConditionTrue, infrav1.DependenciesReadyReason)},
			pass: func(p *Pass) {
				p.OwnerWait = &Wait{Reason: infrav1.OwnerNotFoundReason, Message: "gone", False: true}
			},
			want: []string{"Warning ConditionChanged"}},
		{name: "ConditionChanged: DeletionBlocked turns True, Warning (negative polarity)",
			before: []metav1.Condition{cond(infrav1.DeletionBlockedCondition, metav1.ConditionFalse, infrav1.NotBlockedReason)},
			pass: func(p *Pass) {
				p.facts.acted, p.Decision.Reason = true, decide.ReasonDependentsExist
			},
			want: []string{"Warning ConditionChanged"}},
		{name: "ConditionChanged: RunnerRBACReady turns True, Normal",
			before: []metav1.Condition{cond(infrav1.RunnerRBACReadyCondition, metav1.ConditionFalse, infrav1.RBACFailedReason)},
			pass: func(p *Pass) {
				p.facts.credentials = &identity.Credentials{
					Access: identity.Access{Verdict: identity.Verdict{Status: metav1.ConditionUnknown, Reason: infrav1.IdentityCheckFailedReason}},
					Mirror: identity.MirrorResult{Verdict: identity.Verdict{Status: metav1.ConditionUnknown, Reason: infrav1.MirrorPendingReason}},
					RBAC:   identity.RBACResult{Verdict: identity.Verdict{Status: metav1.ConditionTrue, Reason: infrav1.RBACReadyReason}},
				}
			},
			want: []string{"Normal ConditionChanged"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"f"}}}
			if c.deleting {
				obj.DeletionTimestamp = &now
			}
			// Every default condition in place, so only the case's change
			// is a transition.
			seed := &Pass{Obj: obj.DeepCopy(), Kind: infrav1.KindTerraformCluster}
			if err := setConditions(seed); err != nil {
				t.Fatal(err)
			}
			for _, c := range seed.Obj.GetConditions() {
				if c.Type != infrav1.PausedCondition && c.Type != infrav1.ReadyCondition {
					obj.Status.Conditions = append(obj.Status.Conditions, c)
				}
			}
			for _, b := range c.before {
				replaced := false
				for i := range obj.Status.Conditions {
					if obj.Status.Conditions[i].Type == b.Type {
						obj.Status.Conditions[i], replaced = b, true
					}
				}
				if !replaced {
					obj.Status.Conditions = append(obj.Status.Conditions, b)
				}
			}
			rec := events.NewFakeRecorder(10)
			f := &Flow{Recorder: rec, Adapter: readyAdapter{}}
			p := &Pass{Obj: obj, Kind: infrav1.KindTerraformCluster}
			snapshotConditions(p)
			if c.pass != nil {
				c.pass(p)
			}
			if err := setConditions(p); err != nil {
				t.Fatal(err)
			}
			f.transitionEvents(p)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				fields := strings.Fields(e)
				got = append(got, fields[0]+" "+fields[1])
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("events %q, want %q", got, c.want)
			}
		})
	}
}
