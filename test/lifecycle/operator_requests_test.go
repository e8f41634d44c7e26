package lifecycle

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// hasAnnotation reads obj back and says whether key is on it.
func (e *env) hasAnnotation(obj client.Object, key string) bool {
	e.t.Helper()
	e.refresh(obj)
	_, ok := obj.GetAnnotations()[key]
	return ok
}

// TestOperatorRequests checks the one-shot requests kubectl captf reconcile
// and kubectl captf drift check write (annotations reference): each is
// consumed by the reconcile that answers it, with the pass's own patch.
func TestOperatorRequests(t *testing.T) {
	t.Parallel()

	t.Run("reconcile_request_is_consumed_by_the_pass_that_ran", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, ""))
		e.mustPass(w.TC)
		e.annotate(w.TC, infrav1.ReconcileRequestedAnnotation, e.clock().Format(time.RFC3339))
		e.mustPass(w.TC)
		if e.hasAnnotation(w.TC, infrav1.ReconcileRequestedAnnotation) {
			t.Fatal("the pass left " + infrav1.ReconcileRequestedAnnotation)
		}
	})

	t.Run("reconcile_request_is_consumed_while_paused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.update(w.Cluster, func() { w.Cluster.Spec.Paused = ptr.To(true) })
		e.annotate(w.TC, infrav1.ReconcileRequestedAnnotation, "now")
		e.mustPass(w.TC)
		if e.hasAnnotation(w.TC, infrav1.ReconcileRequestedAnnotation) {
			t.Fatal("the paused pass left " + infrav1.ReconcileRequestedAnnotation)
		}
		e.wantNoJob(w.TC)
	})

	t.Run("drift_request_starts_a_check_now_and_is_consumed_by_it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(3600, ""))
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		e.advance(time.Minute)
		e.annotate(w.TC, infrav1.DriftCheckRequestedAnnotation, e.clock().Format(time.RFC3339))
		e.advance(time.Second)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDrift)
		if e.hasAnnotation(w.TC, infrav1.DriftCheckRequestedAnnotation) {
			t.Fatal("the pass that started the drift Job left the request")
		}
		e.advance(time.Minute)
		e.finishJob(job, succeeded, driftDoc())
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
	})

	t.Run("drift_request_waits_for_the_active_job", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, ""))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDrift)
		e.advance(time.Second)
		e.annotate(w.TC, infrav1.DriftCheckRequestedAnnotation, e.clock().Format(time.RFC3339))
		e.mustPass(w.TC)
		if !e.hasAnnotation(w.TC, infrav1.DriftCheckRequestedAnnotation) {
			t.Fatal("the request was consumed while a Job runs")
		}
		// The running check finished after the request: it answers it.
		e.advance(time.Minute)
		e.finishJob(job, succeeded, driftDoc())
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		if e.hasAnnotation(w.TC, infrav1.DriftCheckRequestedAnnotation) {
			t.Fatal("a check that finished after the request left it")
		}
	})

	t.Run("drift_request_with_drift_disabled_runs_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(0, ""))
		e.mustPass(w.TC)
		e.annotate(w.TC, infrav1.DriftCheckRequestedAnnotation, e.clock().Format(time.RFC3339))
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		if e.hasAnnotation(w.TC, infrav1.DriftCheckRequestedAnnotation) {
			t.Fatal("a request with drift checks off stays")
		}
	})
}
