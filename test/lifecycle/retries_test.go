package lifecycle

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// failAndWait fails job at the clock and checks that the op waits for
// delay after it: nothing starts a second before, a new attempt starts at
// the delay. It returns the new attempt.
func (e *env) failAndWait(obj client.Object, job *batchv1.Job, end jobEnd, op infrav1.Operation, delay time.Duration) *batchv1.Job {
	e.t.Helper()
	e.finishJob(job, end, nil)
	e.advance(10 * time.Second)
	res := e.mustPass(obj)
	e.wantNoJob(obj)
	if want := delay - 10*time.Second; res.RequeueAfter != want {
		e.t.Fatalf("after %s the backoff requeue is %v, want %v (a %v delay)", job.Name, res.RequeueAfter, want, delay)
	}
	e.advance(delay - 11*time.Second)
	e.mustPass(obj)
	e.wantNoJob(obj)
	e.advance(time.Second)
	e.mustPass(obj)
	return e.wantJob(obj, op)
}

// TestRetriesAndBackoff checks the rules of the book page Retries and
// Backoff.
func TestRetriesAndBackoff(t *testing.T) {
	t.Parallel()

	// The delay after n consecutive failures is min(1m × 2^(n-1), 10m), and
	// the 10-minute cap at once when n reaches the failed-Jobs history
	// limit: 1m, 2m, then 10m with the default limit of 3.
	t.Run("failed_apply_backs_off", func(t *testing.T) {
		t.Parallel()
		e, w, a1 := applyingCluster(t)
		m := e.mark(w.TC)
		a2 := e.failAndWait(w.TC, a1, failed, infrav1.OperationApply, time.Minute)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.JobFailedEvent)
		if !strings.Contains(a2.Name, "-apply-a2-") {
			t.Fatalf("the retry is %s, want attempt 2", a2.Name)
		}
		a3 := e.failAndWait(w.TC, a2, failed, infrav1.OperationApply, 2*time.Minute)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		e.wantCondition(w.TC, infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason)
		a4 := e.failAndWait(w.TC, a3, failed, infrav1.OperationApply, 10*time.Minute)
		e.failAndWait(w.TC, a4, failed, infrav1.OperationApply, 10*time.Minute)
	})

	t.Run("failed_apply_condition_names_the_Job_and_its_summary", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.finishJob(job, failed, nil)
		e.mustPass(w.TC)
		c := e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		if !strings.Contains(c.Message, job.Name) || !strings.Contains(c.Message, "the provider refused the request") {
			t.Fatalf("ApplyFailed message %q", c.Message)
		}
		lr := status(w.TC).LastRun
		if lr == nil || lr.Error == nil || lr.Error.Kind != infrav1.RunErrorStep || lr.Error.Step != "apply" {
			t.Fatalf("status.lastRun %+v", lr)
		}
	})

	t.Run("deadline_counts_toward_backoff", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		m := e.mark(w.TC)
		e.failAndWait(w.TC, job, deadline, infrav1.OperationApply, time.Minute)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.JobDeadlineExceededEvent)
		e.wantNoEvent(w.TC, m, infrav1.JobFailedEvent)
	})

	t.Run("deadline_counts_even_when_the_runner_reported_interrupted", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		// On a deadline the runner gets SIGTERM and may say interrupted.
		e.finishJob(job, deadline, doc(infrav1.OperationApply, interrupted))
		e.advance(10 * time.Second)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.JobDeadlineExceededReason)
		e.wantNoJob(w.TC)
	})

	t.Run("interrupted_job_does_not_back_off", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		m := e.mark(w.TC)
		e.finishJob(job, interrupted, nil)
		e.advance(time.Second)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.JobInterruptedEvent)
		e.wantNoEvent(w.TC, m, infrav1.JobFailedEvent)
		next := e.wantJob(w.TC, infrav1.OperationApply)
		if next.Name == job.Name {
			t.Fatal("no new apply after the interruption")
		}
		e.refresh(job)
		if job.Annotations[infrav1.InterruptedAnnotation] != "true" {
			t.Fatalf("the interrupted Job is not marked: %v", job.Annotations)
		}
	})

	// A module that signals its own runner looks interrupted every time:
	// the first interruption retries at once, but two in a row count like
	// failures, so the next apply waits (2 failures: 2m) instead of looping.
	t.Run("interrupted_twice_in_a_row_backs_off", func(t *testing.T) {
		t.Parallel()
		e, w, a1 := applyingCluster(t)
		e.finishJob(a1, interrupted, nil)
		e.advance(time.Second)
		e.mustPass(w.TC)
		a2 := e.wantJob(w.TC, infrav1.OperationApply)
		if a2.Name == a1.Name {
			t.Fatal("no new apply after the first interruption")
		}
		m := e.mark(w.TC)
		a3 := e.failAndWait(w.TC, a2, interrupted, infrav1.OperationApply, 2*time.Minute)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.JobInterruptedEvent)
		e.failAndWait(w.TC, a3, interrupted, infrav1.OperationApply, 10*time.Minute)
	})

	t.Run("blocked_apply_waits_for_approval_without_backoff", func(t *testing.T) {
		t.Parallel()
		e, w, job := reapplyingCluster(t)
		if job.Annotations[infrav1.InputsHashAnnotation] == "" {
			t.Fatal("the apply carries no inputs hash")
		}
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.finishJob(job, blocked, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.DestructivePlanBlockedReason)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.DestructivePlanBlockedEvent)
		e.wantNoEvent(w.TC, m, infrav1.JobFailedEvent)
		e.wantNoJob(w.TC)
		// It waits for a person, not a timer: an hour later still nothing.
		e.advance(time.Hour)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		// An approval naming the inputs hash starts the apply at once.
		e.annotate(w.TC, infrav1.ApproveDestructivePlanAnnotation, job.Annotations[infrav1.InputsHashAnnotation])
		e.mustPass(w.TC)
		approved := e.wantJob(w.TC, infrav1.OperationApply)
		if approved.Annotations[infrav1.InputsHashAnnotation] != job.Annotations[infrav1.InputsHashAnnotation] {
			t.Fatal("the approved apply runs other inputs")
		}
	})

	// A module that writes its own result saying blocked, to dodge the
	// backoff of a failing apply: a TerraformMachine apply has no
	// destructive-plan guard, so the result is a failure that backs off
	// like any other (Plan Approval, "What is not guarded").
	t.Run("forged_blocked_result_of_a_machine_apply_backs_off", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		a1 := e.startApply(mw.TM)
		m := e.mark(mw.TM)
		e.finishJob(a1, failed, doc(infrav1.OperationApply, blocked))
		e.advance(10 * time.Second)
		res := e.mustPass(mw.TM)
		e.wantNoJob(mw.TM)
		if want := time.Minute - 10*time.Second; res.RequeueAfter != want {
			t.Fatalf("after the forged blocked result the requeue is %v, want the 1m backoff's %v", res.RequeueAfter, want)
		}
		c := e.wantCondition(mw.TM, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		if !strings.Contains(c.Message, "not a result the apply Job of a TerraformMachine can report") {
			t.Fatalf("ApplyFailed message %q", c.Message)
		}
		e.wantEvent(mw.TM, m, corev1.EventTypeWarning, infrav1.JobFailedEvent)
		e.wantNoEvent(mw.TM, m, infrav1.DestructivePlanBlockedEvent)
		if lr := status(mw.TM).LastRun; lr == nil || lr.Error == nil || lr.Error.Kind != infrav1.RunErrorStep {
			t.Fatalf("status.lastRun %+v", lr)
		}
		e.refresh(a1)
		if a1.Annotations[infrav1.DestructivePlanBlockedAnnotation] != "" {
			t.Fatalf("the forged Job is marked blocked: %v", a1.Annotations)
		}
		// The backoff grows with each forged result: 1m, then 2m.
		e.advance(time.Minute - 10*time.Second)
		e.mustPass(mw.TM)
		a2 := e.wantJob(mw.TM, infrav1.OperationApply)
		e.failAndWait(mw.TM, a2, failed, infrav1.OperationApply, 2*time.Minute)
	})

	// The same for plan-changed from a TerraformCluster apply that was not
	// given an approved plan (applyPolicy Automatic).
	t.Run("forged_plan_changed_result_of_an_unapproved_apply_backs_off", func(t *testing.T) {
		t.Parallel()
		e, w, a1 := applyingCluster(t)
		forged := doc(infrav1.OperationApply, blocked)
		forged.Error.Kind = infrav1.RunErrorPlanChanged
		m := e.mark(w.TC)
		e.finishJob(a1, failed, forged)
		e.advance(10 * time.Second)
		res := e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		if want := time.Minute - 10*time.Second; res.RequeueAfter != want {
			t.Fatalf("after the forged plan-changed result the requeue is %v, want the 1m backoff's %v", res.RequeueAfter, want)
		}
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.JobFailedEvent)
		e.wantNoEvent(w.TC, m, infrav1.PlanChangedEvent)
		if w.TC.Status.Plan != nil {
			t.Fatalf("the forged plan awaits approval: %+v", w.TC.Status.Plan)
		}
	})

	t.Run("approved_destructive_apply_consumes_the_approval", func(t *testing.T) {
		t.Parallel()
		e, w, job := reapplyingCluster(t)
		e.advance(time.Minute)
		e.finishJob(job, blocked, nil)
		e.mustPass(w.TC)
		hash := job.Annotations[infrav1.InputsHashAnnotation]
		e.annotate(w.TC, infrav1.ApproveDestructivePlanAnnotation, hash)
		e.mustPass(w.TC)
		approved := e.wantJob(w.TC, infrav1.OperationApply)
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(2, clusterOutputs(), ""))
		e.finishJob(approved, succeeded, nil)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		if _, ok := w.TC.Annotations[infrav1.ApproveDestructivePlanAnnotation]; ok {
			t.Fatal("the approval stays after the approved apply succeeded")
		}
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DestructivePlanApprovalConsumedEvent)
	})

	// An apply Job of a cluster or pool deleted while it ran may have
	// applied part of its change.
	t.Run("interrupted_apply_is_recorded_and_stays_due", func(t *testing.T) {
		t.Parallel()
		e, w, job := reapplyingCluster(t)
		if err := k8s.Delete(e.ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		e.advance(time.Minute)
		e.mustPass(w.TC)
		if d := e.durable(w.TC); d == nil || d.Annotations[infrav1.InterruptedApplyAnnotation] == "" {
			t.Fatal("no captf.io/interrupted-apply on the durable inputs Secret")
		}
		c := e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		if !strings.Contains(c.Message, job.Name) || !strings.Contains(c.Message, "disappeared while it ran") {
			t.Fatalf("ApplyFailed message %q", c.Message)
		}
		// Even with the old inputs back, an apply of the current inputs
		// stays due.
		e.update(w.TC, func() { w.TC.Spec.Variables = nil })
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationApply)
	})

	// A failed restore is never retried for the same backup serial.
	t.Run("failed_restore_is_not_retried_for_the_same_serial", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		if b := status(w.TC).StateBackups; len(b) != 1 || b[0].Serial != 1 {
			t.Fatalf("status.stateBackups %+v", b)
		}
		e.deleteState(w.TC)
		e.annotate(w.TC, infrav1.RestoreStateAnnotation, "1")
		e.advance(time.Minute)
		e.mustPass(w.TC)
		restore := e.wantJob(w.TC, infrav1.OperationRestore)
		e.advance(time.Minute)
		e.finishJob(restore, failed, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.RestoreJobSucceededCondition, metav1.ConditionFalse, infrav1.RestoreFailedReason)
		e.wantNoJob(w.TC)
		e.advance(time.Hour)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
	})

	t.Run("failed_restore_emits_StateRestoreFailed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.deleteState(w.TC)
		e.annotate(w.TC, infrav1.RestoreStateAnnotation, "1")
		e.advance(time.Minute)
		e.mustPass(w.TC)
		restore := e.wantJob(w.TC, infrav1.OperationRestore)
		e.finishJob(restore, failed, nil)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.StateRestoreFailedEvent)
	})
}
