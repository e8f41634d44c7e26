package jobs

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

// Record turns a finished Job and its classification into the JobRecord
// internal/decide reads. Once a Job is bookkept (captf.io/bookkept), its
// bookkeeping marks (Marks) are what it is judged by, since its pod may be
// gone by then; before that, the classification is. A Job's Complete or
// Failed/DeadlineExceeded condition is read from the Job either way. c may
// be nil for a bookkept Job.
func Record(job *batchv1.Job, c *Classification) decide.JobRecord {
	rec := decide.JobRecord{
		Name:       job.Name,
		Op:         decide.Operation(job.Labels[infrav1.OpLabel]),
		Attempt:    Attempt(job),
		InputsHash: job.Annotations[infrav1.InputsHashAnnotation],
	}
	typ, cond, done := finished(job)
	if done {
		rec.Finished = cond.LastTransitionTime.Time
		if typ == batchv1.JobComplete && job.Status.CompletionTime != nil {
			rec.Finished = job.Status.CompletionTime.Time
		}
		rec.Succeeded = typ == batchv1.JobComplete
		rec.DeadlineExceeded = typ == batchv1.JobFailed && cond.Reason == batchv1.JobReasonDeadlineExceeded
	}
	if c != nil {
		// What the runner found about the module's outputs is read from the
		// result whenever the pod still holds it, bookkept or not.
		rec.OutputsChecked = c.Result.OutputsChecked
		rec.UndeclaredOutputs = c.Result.UndeclaredOutputs
	}
	ann := job.Annotations
	rec.DriftRemediation = ann[infrav1.DriftRemediationAnnotation] == "true"
	if s, err := strconv.ParseInt(ann[infrav1.RestoreSerialAnnotation], 10, 64); err == nil && s > 0 {
		rec.RestoreSerial = s
	}
	if _, bookkept := ann[infrav1.BookkeptAnnotation]; bookkept || c == nil {
		rec.Interrupted = ann[infrav1.InterruptedAnnotation] == "true"
		rec.Blocked = ann[infrav1.DestructivePlanBlockedAnnotation] == "true"
		rec.PlanChanged = ann[infrav1.PlanChangedAnnotation] == "true"
		rec.PlanUnreadable = ann[infrav1.PlanUnreadableAnnotation] == "true"
		if c != nil {
			rec.DriftDetected = c.Result.DriftDetected
		}
		return rec
	}
	rec.Interrupted = c.Outcome == OutcomeInterrupted
	rec.Blocked = c.Outcome == OutcomeBlocked
	rec.PlanChanged = c.Outcome == OutcomePlanChanged
	rec.PlanUnreadable = c.PlanUnreadable
	rec.DriftDetected = c.Result.DriftDetected
	return rec
}
