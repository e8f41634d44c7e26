package lifecycle

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// consumeRequests settles the operator's one-shot requests a finished Job
// answered (book: Plan Approval; Terraform State, restore). The annotations
// go in the pass's one patch, with the status.
//
//   - An apply that succeeded with the inputs hash captf.io/approve-destructive-plan
//     names consumes that approval, so a later destructive remediation of the
//     same inputs needs its own.
//   - An apply that succeeded with an approved plan removes
//     captf.io/approve-plan, clears status.plan and emits PlanApplied; one
//     whose plan changed records the new plan for approval.
//   - A restore that succeeded removes captf.io/restore-state and forgets
//     the serial, so the same serial can be asked for again; a failed one
//     keeps both, and is not retried for that serial.
//
// Their events and counters follow the status patch, like the Job's own,
// and only for a Job the status read does not already name (booked): a
// Job booked again, because its bookkept mark had not reached the cache or
// the pass that booked it ended before marking it, settles its requests
// again (removals are idempotent) but announces nothing twice.
func (f *Flow) consumeRequests(p *Pass, job *batchv1.Job, op infrav1.Operation, c *jobs.Classification, booked bool) *planRecord {
	kind := p.Kind
	announce := func(fn func()) {
		if !booked {
			p.afterPatch = append(p.afterPatch, fn)
		}
	}
	succeeded := c.Outcome == jobs.OutcomeSucceeded
	switch op {
	case infrav1.OperationApply:
		if succeeded {
			hash := job.Annotations[infrav1.InputsHashAnnotation]
			if hash != "" && removeAnnotationIf(p, infrav1.ApproveDestructivePlanAnnotation, hash) {
				announce(func() {
					metrics.DestructivePlanApprovalConsumed(kind)
					f.event(p, job, corev1.EventTypeNormal, infrav1.DestructivePlanApprovalConsumedEvent,
						"Job "+job.Name+" applied the approved destructive plan of inputs hash "+hash+"; the approval is consumed")
				})
			}
		}
		approved := job.Annotations[infrav1.ApprovedPlanAnnotation]
		plan := f.plan(p)
		if approved == "" || plan == nil {
			return nil
		}
		switch c.Outcome {
		case jobs.OutcomeSucceeded:
			removeAnnotationIf(p, infrav1.ApprovePlanAnnotation, approved)
			*plan = nil
			announce(func() {
				f.event(p, job, corev1.EventTypeNormal, infrav1.PlanAppliedEvent, "Applied approved plan "+approved+" with Job "+job.Name)
				metrics.PlanApproval(kind, "approved")
			})
		case jobs.OutcomePlanChanged:
			announce(func() { metrics.PlanApproval(kind, "changed") })
			return f.recordPlanPreview(p, job, c, infrav1.PlanChangedReason)
		}
	case infrav1.OperationRestore:
		switch c.Outcome {
		case jobs.OutcomeSucceeded:
			serial := job.Annotations[infrav1.RestoreSerialAnnotation]
			removeAnnotationIf(p, infrav1.RestoreStateAnnotation, serial)
			p.Status().LastRestoredSerial = 0
			announce(func() {
				f.event(p, job, corev1.EventTypeNormal, jobs.OperationOf(op).SucceededEvent, "Restored state backup serial "+serial+" with Job "+job.Name)
				metrics.StateRestore(kind, "succeeded")
			})
		case jobs.OutcomeActive, jobs.OutcomeInterrupted:
		default:
			serial := job.Annotations[infrav1.RestoreSerialAnnotation]
			msg := "Job " + job.Name + " failed to restore state backup serial " + serial + "; it is not retried for that serial"
			if c.Detail != "" {
				msg += ": " + c.Detail
			}
			announce(func() {
				metrics.StateRestore(kind, "failed")
				f.event(p, job, corev1.EventTypeWarning, jobs.OperationOf(op).FailedEvent, msg)
			})
		}
	}
	return nil
}

// removeAnnotationIf removes an annotation whose value is want, and says
// whether it did. A value changed since (a new approval, another serial) is
// a new request and stays.
func removeAnnotationIf(p *Pass, key, want string) bool {
	ann := p.Obj.GetAnnotations()
	if v, ok := ann[key]; !ok || v != want {
		return false
	}
	delete(ann, key)
	p.Obj.SetAnnotations(ann)
	return true
}

// recordPlanPreview puts a plan the runner read back in status.plan for
// approval, and returns it with the exact approve command for
// ApplyJobSucceeded (Unknown: waiting never turns Ready false); nil when
// the kind keeps no plan or the result carries none.
func (f *Flow) recordPlanPreview(p *Pass, job *batchv1.Job, c *jobs.Classification, reason string) *planRecord {
	plan := f.plan(p)
	if plan == nil || c.Result.Plan == nil {
		return nil
	}
	pl := c.Result.Plan
	created := metav1.NewTime(c.FinishedAt)
	*plan = c.Result.PlanPreview(job.Name, job.Annotations[infrav1.InputsHashAnnotation], created)
	msg := fmt.Sprintf("plan %s: %d to add, %d to change, %d to destroy; approve with: kubectl annotate %s %s -n %s %s=%s --overwrite",
		pl.Hash, pl.Add, pl.Change, pl.Destroy, strings.ToLower(string(p.Kind)), p.Obj.GetName(), p.Obj.GetNamespace(), infrav1.ApprovePlanAnnotation, pl.Hash)
	if note := clampedNote(c); note != "" {
		msg += "; " + note
	}
	return &planRecord{reason: reason, message: msg}
}

// forgetRestore clears status.lastRestoredSerial once captf.io/restore-state
// is gone, so a failed restore can be asked for again with the same serial.
func forgetRestore(p *Pass) {
	if _, ok := p.Obj.GetAnnotations()[infrav1.RestoreStateAnnotation]; !ok && p.Status().LastRestoredSerial != 0 {
		p.Status().LastRestoredSerial = 0
	}
}

// requestedAt is when a one-shot request annotation (captf.io/reconcile-requested,
// captf.io/drift-check-requested) asked: its RFC 3339 time, or the pass's
// own time for any other value (present is asked); zero when it is absent.
func requestedAt(p *Pass, key string) time.Time {
	v, ok := p.Obj.GetAnnotations()[key]
	if !ok {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t
	}
	return p.Now
}

// consumeReconcileRequest removes captf.io/reconcile-requested once a pass
// ran to its end: the request asked for a pass and got one. It goes in the
// pass's one patch.
func consumeReconcileRequest(p *Pass) {
	if v, ok := p.Obj.GetAnnotations()[infrav1.ReconcileRequestedAnnotation]; ok {
		removeAnnotationIf(p, infrav1.ReconcileRequestedAnnotation, v)
	}
}

// consumeDriftRequest removes captf.io/drift-check-requested once it is
// answered: by the drift Job it started, by a check that finished after it,
// or because drift checks are off.
func consumeDriftRequest(p *Pass) {
	if v, ok := p.Obj.GetAnnotations()[infrav1.DriftCheckRequestedAnnotation]; ok {
		removeAnnotationIf(p, infrav1.DriftCheckRequestedAnnotation, v)
	}
}
