package jobs

import (
	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Operation is what CAPTF says about one kind of Job: the condition its
// Job reports on, the reasons of that condition while it runs and once it
// finished, and the events of its outcome beyond the Job events every Job
// gets (reference-facts §1.7, §1.9, §1.12, §2). Every place that needs
// the operation → condition mapping reads it here.
type Operation struct {
	// Condition is the condition the operation's Job, its lease waits and
	// its refusals are reported on.
	Condition string
	// Running is the condition's reason while a Job of the operation runs
	// ("" when a running Job changes nothing: an apply's condition covers
	// the last finished Job).
	Running string
	// Succeeded is the reason of a Job that completed ("" when the
	// operation's success sets no reason of its own: a plan records its
	// plan for approval).
	Succeeded string
	// Failed is the reason of a failed run.
	Failed string
	// Deadline is the reason of a run killed by activeDeadlineSeconds;
	// ImagePullFailed of one whose image never pulled before it;
	// ImageInvalid of an image that breaks the Image Contract.
	Deadline        string
	ImagePullFailed string
	ImageInvalid    string
	// Blocked and PlanChanged are the reasons of a run that stopped before
	// a destructive plan, and of an approved apply whose plan changed (""
	// when they set no reason).
	Blocked     string
	PlanChanged string
	// SucceededEvent and FailedEvent are the operation's own events for a
	// finished Job, "" when it has none.
	SucceededEvent string
	FailedEvent    string
}

// applyFamily is what apply, destroy and plan share: their Jobs report on
// ApplyJobSucceeded.
var applyFamily = Operation{
	Condition:       infrav1.ApplyJobSucceededCondition,
	Failed:          infrav1.ApplyFailedReason,
	Deadline:        infrav1.JobDeadlineExceededReason,
	ImagePullFailed: infrav1.ImagePullFailedReason,
	ImageInvalid:    infrav1.ImageInvalidReason,
	Blocked:         infrav1.DestructivePlanBlockedReason,
	PlanChanged:     infrav1.PlanChangedReason,
}

// driftFamily is what drift and refresh share: their Jobs report on
// DriftJobSucceeded.
var driftFamily = Operation{
	Condition:       infrav1.DriftJobSucceededCondition,
	Running:         infrav1.DriftJobRunningReason,
	Succeeded:       infrav1.DriftCheckedReason,
	Failed:          infrav1.DriftJobFailedReason,
	Deadline:        infrav1.DriftJobDeadlineExceededReason,
	ImagePullFailed: infrav1.DriftJobDeadlineExceededReason,
	ImageInvalid:    infrav1.DriftJobFailedReason,
}

// operations is the one table of the operations infrav1.Operation defines.
var operations = map[infrav1.Operation]Operation{
	infrav1.OperationApply: with(applyFamily, func(o *Operation) { o.Succeeded = infrav1.ApplySucceededReason }),
	infrav1.OperationDestroy: with(applyFamily, func(o *Operation) {
		o.Succeeded, o.Failed = infrav1.DestroySucceededReason, infrav1.DestroyFailedReason
	}),
	infrav1.OperationPlan:    applyFamily,
	infrav1.OperationDrift:   driftFamily,
	infrav1.OperationRefresh: driftFamily,
	infrav1.OperationRestore: {
		Condition:       infrav1.RestoreJobSucceededCondition,
		Succeeded:       infrav1.StateRestoredReason,
		Failed:          infrav1.RestoreFailedReason,
		Deadline:        infrav1.RestoreFailedReason,
		ImagePullFailed: infrav1.RestoreFailedReason,
		ImageInvalid:    infrav1.RestoreFailedReason,
		Blocked:         infrav1.RestoreFailedReason,
		PlanChanged:     infrav1.RestoreFailedReason,
		SucceededEvent:  infrav1.StateRestoredEvent,
		FailedEvent:     infrav1.StateRestoreFailedEvent,
	},
}

func with(o Operation, change func(*Operation)) Operation {
	change(&o)
	return o
}

// OperationOf is op's row of the table; an operation the table does not
// know reports on ApplyJobSucceeded, as an apply does.
func OperationOf(op infrav1.Operation) Operation {
	if o, ok := operations[op]; ok {
		return o
	}
	return applyFamily
}

// Operations are the operations the table knows.
func Operations() []infrav1.Operation {
	return []infrav1.Operation{
		infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationPlan,
		infrav1.OperationDrift, infrav1.OperationRefresh, infrav1.OperationRestore,
	}
}

// Reason is the reason of the operation's condition for a Job of this
// outcome: "" for an active Job and for outcomes that set no reason of
// their own (an interrupted run; a drift Job blocked or whose plan
// changed, which cannot happen).
func (o Operation) Reason(out Outcome) string {
	switch out {
	case OutcomeSucceeded:
		return o.Succeeded
	case OutcomeFailed:
		return o.Failed
	case OutcomeDeadline:
		return o.Deadline
	case OutcomeImagePullFailed:
		return o.ImagePullFailed
	case OutcomeImageInvalid:
		return o.ImageInvalid
	case OutcomeBlocked:
		return o.Blocked
	case OutcomePlanChanged:
		return o.PlanChanged
	}
	return ""
}
