package jobs

import (
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestOperationTable checks each operation's row against reference-facts
// §1.7 (apply, destroy, plan on ApplyJobSucceeded), §1.12 (drift, refresh
// on DriftJobSucceeded) and §1.9 (restore on RestoreJobSucceeded).
func TestOperationTable(t *testing.T) {
	type want struct {
		condition, running string
		reasons            map[Outcome]string
	}
	apply := map[Outcome]string{
		OutcomeActive: "", OutcomeInterrupted: "",
		OutcomeSucceeded: infrav1.ApplySucceededReason, OutcomeFailed: infrav1.ApplyFailedReason,
		OutcomeDeadline: infrav1.JobDeadlineExceededReason, OutcomeImagePullFailed: infrav1.ImagePullFailedReason,
		OutcomeImageInvalid: infrav1.ImageInvalidReason, OutcomeBlocked: infrav1.DestructivePlanBlockedReason,
		OutcomePlanChanged: infrav1.PlanChangedReason,
	}
	destroy := map[Outcome]string{}
	plan := map[Outcome]string{}
	for o, r := range apply {
		destroy[o], plan[o] = r, r
	}
	destroy[OutcomeSucceeded], destroy[OutcomeFailed] = infrav1.DestroySucceededReason, infrav1.DestroyFailedReason
	plan[OutcomeSucceeded] = ""
	drift := map[Outcome]string{
		OutcomeActive: "", OutcomeInterrupted: "", OutcomeBlocked: "", OutcomePlanChanged: "",
		OutcomeSucceeded: infrav1.DriftCheckedReason, OutcomeFailed: infrav1.DriftJobFailedReason,
		OutcomeDeadline: infrav1.DriftJobDeadlineExceededReason, OutcomeImagePullFailed: infrav1.DriftJobDeadlineExceededReason,
		OutcomeImageInvalid: infrav1.DriftJobFailedReason,
	}
	restore := map[Outcome]string{OutcomeActive: "", OutcomeInterrupted: "", OutcomeSucceeded: infrav1.StateRestoredReason}
	for _, o := range []Outcome{OutcomeFailed, OutcomeDeadline, OutcomeImagePullFailed, OutcomeImageInvalid, OutcomeBlocked, OutcomePlanChanged} {
		restore[o] = infrav1.RestoreFailedReason
	}
	wants := map[infrav1.Operation]want{
		infrav1.OperationApply:   {infrav1.ApplyJobSucceededCondition, "", apply},
		infrav1.OperationDestroy: {infrav1.ApplyJobSucceededCondition, "", destroy},
		infrav1.OperationPlan:    {infrav1.ApplyJobSucceededCondition, "", plan},
		infrav1.OperationDrift:   {infrav1.DriftJobSucceededCondition, infrav1.DriftJobRunningReason, drift},
		infrav1.OperationRefresh: {infrav1.DriftJobSucceededCondition, infrav1.DriftJobRunningReason, drift},
		infrav1.OperationRestore: {infrav1.RestoreJobSucceededCondition, "", restore},
	}
	if len(Operations()) != len(wants) {
		t.Fatalf("the table lists %d operations, want %d", len(Operations()), len(wants))
	}
	for _, op := range Operations() {
		w, ok := wants[op]
		if !ok {
			t.Fatalf("operation %s has no expectation", op)
		}
		row := OperationOf(op)
		if row.Condition != w.condition || row.Running != w.running {
			t.Errorf("%s: condition %s running %q, want %s %q", op, row.Condition, row.Running, w.condition, w.running)
		}
		for out, r := range w.reasons {
			if got := row.Reason(out); got != r {
				t.Errorf("%s %s: reason %q, want %q", op, out, got, r)
			}
			c := Classification{Outcome: out}
			if got := c.Reason(op); got != r {
				t.Errorf("Classification.Reason(%s) for %s: %q, want %q", op, out, got, r)
			}
		}
	}
	r := OperationOf(infrav1.OperationRestore)
	if r.SucceededEvent != infrav1.StateRestoredEvent || r.FailedEvent != infrav1.StateRestoreFailedEvent {
		t.Errorf("restore events %q %q", r.SucceededEvent, r.FailedEvent)
	}
}
