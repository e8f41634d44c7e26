package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestTerraformState checks the rules of the book page Terraform State:
// adoption and backups, lost and unreadable state, abandoning the
// infrastructure.
func TestTerraformState(t *testing.T) {
	t.Parallel()

	t.Run("adoption_records_inputs_hash", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		job := e.bringUp(w.TC, stateOf(1, clusterOutputs(), ""))
		s := e.stateSecret(w.TC)
		want := job.Annotations[infrav1.InputsHashAnnotation]
		if want == "" || s.Annotations[infrav1.InputsHashAnnotation] != want {
			t.Fatalf("state inputs hash %q, the succeeded apply's is %q", s.Annotations[infrav1.InputsHashAnnotation], want)
		}
		owned := false
		for _, o := range s.OwnerReferences {
			owned = owned || o.UID == w.TC.UID
		}
		if !owned {
			t.Fatalf("the state Secret is not owned by the TerraformCluster: %+v", s.OwnerReferences)
		}
		// Adopted state matches the current inputs: nothing to apply.
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
	})

	t.Run("adoption_emits_StateAdopted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		m := e.mark(w.TC)
		e.bringUp(w.TC, stateOf(1, clusterOutputs(), ""))
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.StateAdoptedEvent)
	})

	t.Run("new_serial_is_backed_up_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		m := e.mark(w.TC)
		e.bringUp(w.TC, stateOf(3, clusterOutputs(), ""))
		suffix := e.suffixOf(w.TC)
		if e.secret(state.BackupName(suffix, 3)) == nil {
			t.Fatalf("no backup %s", state.BackupName(suffix, 3))
		}
		if b := status(w.TC).StateBackups; len(b) != 1 || b[0].Serial != 3 {
			t.Fatalf("status.stateBackups %+v", b)
		}
		if status(w.TC).ObservedStateSerial != 3 || status(w.TC).StateSecretSuffix != suffix {
			t.Fatalf("observedStateSerial %d, stateSecretSuffix %q", status(w.TC).ObservedStateSerial, status(w.TC).StateSecretSuffix)
		}
		e.advance(time.Minute)
		e.mustPass(w.TC)
		if n := len(e.eventsOf(w.TC, m, infrav1.StateBackedUpEvent)); n != 1 {
			t.Fatalf("StateBackedUp emitted %d times for one serial", n)
		}
	})

	t.Run("state_lost_reports_StateLost", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.deleteState(w.TC)
		e.advance(time.Minute)
		res := e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason)
		// No Job until the state is restored: above all no fresh apply
		// that would create the infrastructure a second time.
		e.wantNoJob(w.TC)
		if res.RequeueAfter != time.Minute {
			t.Fatalf("a lost state requeues after 1m; got %v", res.RequeueAfter)
		}
		e.advance(time.Hour)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
	})

	t.Run("state_lost_emits_StateLost", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.deleteState(w.TC)
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.StateLostEvent)
	})

	// A TerraformMachine state without CAPTF's inputs hash is lost: it
	// reads StateReadable=False/StateLost and starts no Job.
	t.Run("machine_state_without_inputs_hash_is_StateLost_and_starts_no_Job", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		if !provisioned(mw.TM) {
			t.Fatalf("machine not provisioned: %v", status(mw.TM).Conditions)
		}
		// Someone rewrote the state without CAPTF's inputs hash, after the
		// apply Job that recorded it was pruned.
		for _, j := range e.jobsOf(mw.TM) {
			if err := k8s.Delete(e.ctx, &j, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
		}
		e.writeState(mw.TM, stateOf(2, machineOutputs("running", true), ""))
		e.advance(time.Minute)
		e.mustPass(mw.TM)
		e.wantCondition(mw.TM, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason)
		// Above all no fresh apply creating a second instance.
		e.wantNoJob(mw.TM)
		e.advance(time.Hour)
		e.mustPass(mw.TM)
		e.wantNoJob(mw.TM)
	})

	t.Run("state_unreadable_reports_StateCorrupt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		s := e.stateSecret(w.TC)
		s.Data[state.DataKey] = []byte("this is not gzip")
		if err := k8s.Update(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.advance(time.Minute)
		res := e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateCorruptReason)
		e.wantNoJob(w.TC)
		if res.RequeueAfter != time.Minute {
			t.Fatalf("an unreadable state requeues after 1m; got %v", res.RequeueAfter)
		}
	})

	t.Run("state_unreadable_emits_StateUnreadable", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		s := e.stateSecret(w.TC)
		s.Data[state.DataKey] = []byte("this is not gzip")
		if err := k8s.Update(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.StateUnreadableEvent)
	})

	// A runner killed during init, after the backend created the base state
	// Secret and before it wrote the state, leaves that Secret without a
	// tfstate key and the backend's init lock held by a pod that is gone.
	// That is no state, not an unreadable one; and as the runtime's init
	// takes the lock to write the first state, the manager clears the stale
	// lock itself (ForceUnlocked) and the next apply runs without
	// --force-unlock.
	t.Run("stale_lock_on_a_state_never_written_is_cleared_and_the_apply_runs", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.neverWrittenState(w.TC)
		e.holdLock(w.TC, "lock-init-1", job.Name+"-runner", "OperationTypeInvalid")
		// SIGKILLed: no result document.
		e.finishJobMessage(job, failed, "")
		m := e.mark(w.TC)
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionUnknown, infrav1.StateNotFoundReason)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.ForceUnlockedEvent)
		if l := e.lock(w.TC); l.Held() {
			t.Fatalf("the stale lock is still held by %s", l.ID)
		}
		next := e.wantJob(w.TC, infrav1.OperationApply)
		if next.Name == job.Name {
			t.Fatal("no new apply after the killed one")
		}
		if args := runnerArgs(next); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--force-unlock") }) {
			t.Fatalf("the lock is already cleared, yet the Job force-unlocks: %v", args)
		}
		e.advance(time.Second)
		e.mustPass(w.TC)
		if n := len(e.eventsOf(w.TC, m, infrav1.ForceUnlockedEvent)); n != 1 {
			t.Fatalf("%d ForceUnlocked events for one stale lock", n)
		}
	})

	// reference-facts §1.8: a base Secret without tfstate while one of the
	// object's runner pods still runs and holds the lock is a state
	// mid-write: StateInconsistent, and no Job until that runner is gone.
	t.Run("state_never_written_under_a_running_runner_is_StateInconsistent", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.neverWrittenState(w.TC)
		e.finishJobMessage(job, failed, "")
		// A second pod of the Job is still running and holds the lock.
		running := &corev1.Pod{}
		if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name + "-runner"}, running); err != nil {
			t.Fatal(err)
		}
		running = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-again",
			Labels: running.Labels, OwnerReferences: running.OwnerReferences}, Spec: running.Spec}
		e.create(running)
		e.holdLock(w.TC, "lock-init-2", running.Name, "OperationTypeInvalid")
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateInconsistentReason)
		if n := len(e.jobsOf(w.TC)); n != 1 {
			t.Fatalf("%d Jobs while a runner writes the state; want the first one only", n)
		}
		// The runner exits: its lock is stale, cleared, and the apply runs.
		running.Status.Phase = corev1.PodFailed
		if err := k8s.Status().Update(e.ctx, running); err != nil {
			t.Fatal(err)
		}
		e.advance(time.Second)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionUnknown, infrav1.StateNotFoundReason)
		if n := len(e.jobsOf(w.TC)); n != 2 {
			t.Fatalf("%d Jobs after the runner exited; want a second apply", n)
		}
	})

	// A stale lock on a written state is the next Job's to force-unlock
	// (force-unlock runs right after init, which needs no lock once a state
	// exists): the manager leaves the Lease alone.
	t.Run("stale_lock_on_a_written_state_is_force_unlocked_by_the_next_Job", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.writeState(w.TC, stateOf(1, nil, ""))
		e.holdLock(w.TC, "lock-apply-1", job.Name+"-runner", "OperationTypeApply")
		e.finishJobMessage(job, failed, "")
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason)
		if l := e.lock(w.TC); l.ID != "lock-apply-1" {
			t.Fatalf("the manager touched the lock of a written state: holder %q", l.ID)
		}
		next := e.wantJob(w.TC, infrav1.OperationApply)
		if args := runnerArgs(next); !slices.Contains(args, "--force-unlock=lock-apply-1") {
			t.Fatalf("the next Job does not force-unlock the stale lock: %v", args)
		}
	})

	t.Run("abandon_infrastructure_skips_destroy", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.deleteState(w.TC)
		e.delete(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		// Deleting with lost state: no destroy can run, the finalizer stays.
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason)
		e.wantNoJob(w.TC)
		if !hasFinalizer(w.TC, infrav1.TerraformClusterFinalizer) {
			t.Fatal("the finalizer went with the state lost and nothing abandoned")
		}
		// An abandon annotation naming another UID is not the operator's
		// decision for this object.
		e.annotate(w.TC, infrav1.AbandonInfrastructureAnnotation, "not-this-uid")
		e.mustPass(w.TC)
		if e.gone(w.TC) {
			t.Fatal("an abandon annotation naming another UID dropped the finalizer")
		}
		e.annotate(w.TC, infrav1.AbandonInfrastructureAnnotation, string(w.TC.UID))
		e.mustPass(w.TC)
		if !e.gone(w.TC) {
			t.Fatalf("the finalizer stays after abandoning: %v", w.TC.Finalizers)
		}
		for _, j := range e.jobsOf(w.TC) {
			if j.Labels[infrav1.OpLabel] == string(infrav1.OperationDestroy) {
				t.Fatalf("a destroy Job %s ran for abandoned infrastructure", j.Name)
			}
		}
	})
}
