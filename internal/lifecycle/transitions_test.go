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
			f.setDriftDetected(p, job, &jobs.Classification{Outcome: jobs.OutcomeSucceeded, FinishedAt: time.Unix(1, 0),
				Result: jobs.Result{DriftDetected: found}})
		}
	}
	outputs := func(status, reason string) func(f *Flow, p *Pass) {
		return func(f *Flow, p *Pass) {
			f.SetOutputsValid(p, contract.Verdict{Status: status, Reason: reason, Message: "m"})
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
			c.do(&Flow{Recorder: rec}, &Pass{Obj: obj, Kind: decide.KindCluster})
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
