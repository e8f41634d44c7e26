package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// provisioned brings a Cluster's TerraformCluster up: applied, its state
// read and adopted, provisioned.
func (e *env) provisionedTC(name string, mut func(*infrav1.TerraformCluster)) *world {
	e.t.Helper()
	w := e.newCluster(name, mut)
	e.bringUp(w.TC, stateOf(1, clusterOutputs(), ""))
	if !provisioned(w.TC) {
		e.t.Fatalf("TerraformCluster %s did not provision: %v", name, status(w.TC).Conditions)
	}
	return w
}

// TestLifecycle checks the rules of the book page The Reconcile Lifecycle,
// one pass at a time.
func TestLifecycle(t *testing.T) {
	t.Parallel()

	t.Run("first_pass_adds_finalizer_only", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		res := e.mustPass(w.TC)
		if !hasFinalizer(w.TC, infrav1.TerraformClusterFinalizer) {
			t.Fatalf("finalizer not added: %v", w.TC.Finalizers)
		}
		e.wantNoJob(w.TC)
		if e.secret(identity.MirrorName(e.identity)) != nil || e.durable(w.TC) != nil {
			t.Fatal("the finalizer pass went on past the finalizer: a credential mirror or durable inputs exist")
		}
		if res.RequeueAfter != 0 {
			t.Fatalf("the finalizer write wakes the object; requeue %v", res)
		}
	})

	t.Run("apply_job_created_with_durable_inputs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationApply)
		if job.Labels[infrav1.AttemptLabel] != "1" {
			t.Fatalf("first apply is attempt %s", job.Labels[infrav1.AttemptLabel])
		}
		d := e.durable(w.TC)
		if d == nil {
			t.Fatal("no durable inputs Secret captf-inputs-c-prod written at Job start")
		}
		if d.Annotations[infrav1.ImageAnnotation] != moduleImage || d.Annotations[infrav1.IdentityAnnotation] != e.identity {
			t.Fatalf("durable inputs annotations %v", d.Annotations)
		}
		if len(d.Data) != 2 || len(d.Data[contract.MainFile]) == 0 || len(d.Data[contract.TFVarsFile]) == 0 {
			t.Fatalf("durable inputs hold %d keys", len(d.Data))
		}
		h, err := inputs.HashFiles("cluster", moduleImage, d.Data[contract.MainFile], d.Data[contract.TFVarsFile])
		if err != nil {
			t.Fatal(err)
		}
		if job.Annotations[infrav1.InputsHashAnnotation] != h {
			t.Fatalf("Job inputs hash %q, the durable inputs hash to %q", job.Annotations[infrav1.InputsHashAnnotation], h)
		}
		run := e.secret(jobs.RunSecretName(job.Name))
		if run == nil || !bytes.Equal(run.Data[contract.TFVarsFile], d.Data[contract.TFVarsFile]) || !bytes.Equal(run.Data[contract.MainFile], d.Data[contract.MainFile]) {
			t.Fatal("the per-run Secret does not carry the rendered inputs")
		}
		if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; !ok {
			t.Fatal("no clusterctl move block set before the Job")
		}
		if a := status(w.TC).ActiveJob; a == nil || a.Name != job.Name || a.Operation != infrav1.OperationApply {
			t.Fatalf("status.activeJob %+v", a)
		}
		if e.secret(identity.MirrorName(e.identity)) == nil {
			t.Fatal("no credential mirror in the namespace")
		}
		e.wantCondition(w.TC, infrav1.IdentityAllowedCondition, metav1.ConditionTrue, infrav1.IdentityAllowedReason)
		e.wantCondition(w.TC, infrav1.CredentialsMirroredCondition, metav1.ConditionTrue, infrav1.MirroredReason)
		e.wantCondition(w.TC, infrav1.RunnerRBACReadyCondition, metav1.ConditionTrue, infrav1.RBACReadyReason)
		e.wantCondition(w.TC, infrav1.DependenciesReadyCondition, metav1.ConditionTrue, infrav1.DependenciesReadyReason)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.JobCreatedEvent)
	})

	t.Run("running_job_waits_and_holds_move_block", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.advance(20 * time.Second)
		res := e.mustPass(w.TC)
		if again := e.wantJob(w.TC, infrav1.OperationApply); again.Name != job.Name {
			t.Fatalf("a second Job %s started while %s runs", again.Name, job.Name)
		}
		if len(e.jobsOf(w.TC)) != 1 {
			t.Fatalf("Jobs %v", jobNames(e.jobsOf(w.TC)))
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
			t.Fatalf("a running Job requeues within 1m; got %v", res.RequeueAfter)
		}
		if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; !ok {
			t.Fatal("the move block was cleared while a Job runs")
		}
	})

	t.Run("succeeded_apply_sets_ApplyJobSucceeded_and_latches_provisioned", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(1, clusterOutputs(), ""))
		e.finishJob(job, succeeded, nil)
		e.mustPass(w.TC)

		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionTrue, infrav1.ApplySucceededReason)
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason)
		e.wantCondition(w.TC, infrav1.OutputsValidCondition, metav1.ConditionTrue, infrav1.OutputsValidReason)
		e.wantCondition(w.TC, infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue, infrav1.HealthyReason)
		e.wantCondition(w.TC, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
		if !provisioned(w.TC) {
			t.Fatal("status.initialization.provisioned did not latch")
		}
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.JobSucceededEvent)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.ProvisionedEvent)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DigestPinnedEvent)
		if d := e.durable(w.TC); d.Annotations[infrav1.ImageDigestAnnotation] != imageDigest || d.Annotations[infrav1.AppliedAnnotation] != "true" {
			t.Fatalf("the succeeded apply's digest is not pinned: %v", d.Annotations)
		}
		if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; ok {
			t.Fatal("the move block stays after the Job finished")
		}
		if status(w.TC).ActiveJob != nil {
			t.Fatalf("status.activeJob %+v after the Job finished", status(w.TC).ActiveJob)
		}
		if lr := status(w.TC).LastRun; lr == nil || lr.Job != job.Name || lr.Operation != infrav1.OperationApply {
			t.Fatalf("status.lastRun %+v", lr)
		}
		if e.secret(jobs.RunSecretName(job.Name)) != nil {
			t.Fatal("the finished Job's per-run Secret was not deleted")
		}
		e.refresh(job)
		if job.Annotations[infrav1.BookkeptAnnotation] != "true" {
			t.Fatal("the Job was not marked bookkept after the status patch")
		}
		// The module's endpoint is written back once.
		if ep := w.TC.Spec.ControlPlaneEndpoint; ep.Host != "10.0.0.10" || ep.Port != 6443 {
			t.Fatalf("spec.controlPlaneEndpoint %+v", ep)
		}
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.ControlPlaneEndpointSetEvent)
		// A second pass reads nothing new: the Job is not bookkept twice.
		m = e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantNoEvent(w.TC, m, infrav1.JobSucceededEvent)
		e.wantNoJob(w.TC)
	})

	t.Run("externally_managed_object_is_left_alone", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", func(tc *infrav1.TerraformCluster) {
			tc.Annotations = map[string]string{clusterv1.ManagedByAnnotation: "someone-else"}
		})
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		if len(w.TC.Finalizers) != 0 || len(status(w.TC).Conditions) != 0 {
			t.Fatalf("an externally managed object was touched: finalizers %v, conditions %v", w.TC.Finalizers, status(w.TC).Conditions)
		}
		e.wantNoJob(w.TC)
	})

	t.Run("paused_cluster_starts_nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.update(w.Cluster, func() { w.Cluster.Spec.Paused = ptr.To(true) })
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason)
		e.wantNoJob(w.TC)
		if e.durable(w.TC) != nil {
			t.Fatal("a paused object rendered durable inputs")
		}
		e.update(w.Cluster, func() { w.Cluster.Spec.Paused = ptr.To(false) })
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.PausedCondition, metav1.ConditionFalse, infrav1.NotPausedReason)
		e.wantJob(w.TC, infrav1.OperationApply)
	})

	t.Run("paused_branch_bookkeeps_and_clears_move_block", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		// clusterctl move pauses first, then waits for the block to clear.
		e.annotate(w.TC, clusterv1.PausedAnnotation, "")
		e.mustPass(w.TC)
		if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; !ok {
			t.Fatal("the move block cleared while the Job runs")
		}
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(1, clusterOutputs(), ""))
		e.finishJob(job, succeeded, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionTrue, infrav1.ApplySucceededReason)
		if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; ok {
			t.Fatal("the paused branch did not clear the move block once no Job is active")
		}
		e.wantNoJob(w.TC)
	})

	t.Run("pause_emits_Paused_and_Resumed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		m := e.mark(w.TC)
		e.annotate(w.TC, clusterv1.PausedAnnotation, "")
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.PausedEvent)
		m = e.mark(w.TC)
		e.annotate(w.TC, clusterv1.PausedAnnotation, "-")
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.ResumedEvent)
	})

	t.Run("owner_wait_reports_DependenciesReady", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "orphan"}}
		tc.Spec.Source.Image = moduleImage
		tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
		e.create(tc)
		e.mustPass(tc)
		e.mustPass(tc)
		e.wantCondition(tc, infrav1.DependenciesReadyCondition, metav1.ConditionUnknown, infrav1.WaitingForOwnerReason)
		e.wantCondition(tc, infrav1.ReadyCondition, metav1.ConditionUnknown, infrav1.ReadyUnknownReason)
		e.wantNoJob(tc)
	})

	t.Run("owner_wait_stops_before_credentials", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "orphan"}}
		tc.Spec.Source.Image = moduleImage
		tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
		e.create(tc)
		e.mustPass(tc)
		e.mustPass(tc)
		e.wantNoJob(tc)
		if e.secret(identity.MirrorName(e.identity)) != nil {
			t.Fatal("a TerraformCluster no Cluster owns got a credential mirror")
		}
	})

	t.Run("owner_not_pointing_back_is_OwnerMismatch", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		// The Cluster names another TerraformCluster.
		e.update(w.Cluster, func() { w.Cluster.Spec.InfrastructureRef.Name = "other" })
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.OwnerMismatchReason)
		e.wantNoJob(w.TC)
	})

	t.Run("machine_with_foreign_infrastructure_apiGroup_is_OwnerMismatch", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.update(mw.Machine, func() { mw.Machine.Spec.InfrastructureRef.APIGroup = "infrastructure.example.com" })
		e.mustPass(mw.TM)
		e.mustPass(mw.TM)
		e.wantCondition(mw.TM, infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.OwnerMismatchReason)
		e.wantNoJob(mw.TM)
	})

	// reference-facts §1.3: a TerraformMachine that only a control plane
	// owns so far (a non-controller ownerRef), or a TerraformMachinePool
	// owned by something other than its MachinePool, is False with the
	// kind's own wait; one with no owner at all is Unknown/WaitingForOwner.
	t.Run("owner_waits_name_the_owner_kind", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		nonController := ownerRef(w.Cluster, "Cluster")
		nonController.Controller = ptr.To(false)
		cp := e.newMachine(w, "prod-cp-0", func(tm *infrav1.TerraformMachine) {
			tm.OwnerReferences = []metav1.OwnerReference{nonController}
		})
		e.mustPass(cp.TM)
		e.wantCondition(cp.TM, infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.WaitingForOwnerMachineReason)
		e.wantNoJob(cp.TM)
		orphan := e.newMachine(w, "prod-md-0", func(tm *infrav1.TerraformMachine) { tm.OwnerReferences = nil })
		e.mustPass(orphan.TM)
		e.wantCondition(orphan.TM, infrav1.DependenciesReadyCondition, metav1.ConditionUnknown, infrav1.WaitingForOwnerReason)
		e.wantNoJob(orphan.TM)
		pool := e.newPool(w, "prod-mp-0", 1, func(tmp *infrav1.TerraformMachinePool) {
			tmp.OwnerReferences = []metav1.OwnerReference{ownerRef(w.Cluster, "Cluster")}
		})
		e.mustPass(pool.TMP)
		e.wantCondition(pool.TMP, infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.WaitingForOwnerMachinePoolReason)
		e.wantNoJob(pool.TMP)
	})

	t.Run("deleting_never_applied_drops_finalizer_at_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		e.delete(w.TC)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		if !e.gone(w.TC) {
			t.Fatalf("the object stays: finalizers %v", w.TC.Finalizers)
		}
		e.wantNoJob(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.FinalizerRemovedEvent)
		e.wantNoEvent(w.TC, m, infrav1.DestroyedEvent)
	})

	t.Run("deleting_without_owner_and_state_drops_finalizer", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "orphan"}}
		tc.Spec.Source.Image = moduleImage
		tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
		e.create(tc)
		e.mustPass(tc)
		e.delete(tc)
		e.mustPass(tc)
		if !e.gone(tc) {
			t.Fatalf("an owner wait held the deletion of an object with no state: finalizers %v", tc.Finalizers)
		}
	})

	t.Run("deletion_runs_destroy_then_drops_finalizer", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.delete(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason)
		e.wantCondition(w.TC, infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason)
		destroy := e.wantJob(w.TC, infrav1.OperationDestroy)
		if !hasFinalizer(w.TC, infrav1.TerraformClusterFinalizer) {
			t.Fatal("the finalizer went before the destroy ran")
		}
		// A failed destroy keeps the finalizer and reports DestroyFailed.
		e.advance(time.Minute)
		e.finishJob(destroy, failed, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.DestroyFailedReason)
		e.wantNoJob(w.TC)
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		destroy = e.wantJob(w.TC, infrav1.OperationDestroy)
		e.advance(time.Minute)
		e.finishJob(destroy, succeeded, nil)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		if !e.gone(w.TC) {
			t.Fatalf("the finalizer stays after a successful destroy: %v", w.TC.Finalizers)
		}
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DestroyedEvent)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.FinalizerRemovedEvent)
		if e.stateSecret(w.TC) != nil || e.durable(w.TC) != nil {
			t.Fatal("cleanup left the state or the durable inputs behind")
		}
	})

	t.Run("deletion_says_what_it_does_or_waits_for_in_Deleting", func(t *testing.T) {
		// The Reconcile Lifecycle; Lifecycle walkthroughs: a destroy that
		// waits on credentials shows that in the Deleting condition and
		// retries.
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		id := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: e.identity}}
		e.update(id, func() { id.Spec.AllowedNamespaces = &infrav1.AllowedNamespaces{List: []string{"elsewhere"}} })
		e.delete(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		c := e.wantCondition(w.TC, infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason)
		if !strings.Contains(c.Message, "waiting for credentials: "+infrav1.NamespaceNotAllowedReason) {
			t.Fatalf("Deleting says %q, want the credentials wait", c.Message)
		}
		e.update(id, func() { id.Spec.AllowedNamespaces = &infrav1.AllowedNamespaces{List: []string{e.ns}} })
		e.advance(time.Minute)
		e.mustPass(w.TC)
		destroy := e.wantJob(w.TC, infrav1.OperationDestroy)
		c = e.wantCondition(w.TC, infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason)
		if c.Message != "destroy Job "+destroy.Name+" started" {
			t.Fatalf("Deleting says %q, want the destroy Job started", c.Message)
		}
		e.mustPass(w.TC)
		c = e.wantCondition(w.TC, infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason)
		if c.Message != "destroy Job "+destroy.Name+" running" {
			t.Fatalf("Deleting says %q, want the destroy Job running", c.Message)
		}
	})

	t.Run("deletion_emits_DeletionStarted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		m := e.mark(w.TC)
		e.delete(w.TC)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DeletionStartedEvent)
		e.mustPass(w.TC)
		if n := len(e.eventsOf(w.TC, m, infrav1.DeletionStartedEvent)); n != 1 {
			t.Fatalf("DeletionStarted emitted %d times, want once", n)
		}
	})

	t.Run("cluster_deletion_waits_for_dependents", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		mw := e.newMachine(w, "prod-md-0", nil)
		e.delete(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DeletionBlockedCondition, metav1.ConditionTrue, infrav1.DependentsExistReason)
		e.wantNoJob(w.TC)
		// The machine never got a finalizer: deleting it removes it.
		e.delete(mw.TM)
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationDestroy)
	})

	t.Run("destroy_started_clears_DeletionBlocked", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		mw := e.newMachine(w, "prod-md-0", nil)
		e.delete(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DeletionBlockedCondition, metav1.ConditionTrue, infrav1.DependentsExistReason)
		e.delete(mw.TM)
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationDestroy)
		e.wantCondition(w.TC, infrav1.DeletionBlockedCondition, metav1.ConditionFalse, infrav1.NotBlockedReason)
	})

	t.Run("stuck_job_is_deleted_once_a_minute_old", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		// The per-run Secret is gone and no pod ever started: the Job can
		// never start.
		if err := k8s.Delete(e.ctx, e.secret(jobs.RunSecretName(job.Name))); err != nil {
			t.Fatal(err)
		}
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationApply)
		m := e.mark(w.TC)
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.StuckJobDeletedEvent)
		if !e.gone(job) {
			t.Fatal("the stuck Job stays")
		}
		e.mustPass(w.TC)
		again := e.wantJob(w.TC, infrav1.OperationApply)
		if e.secret(jobs.RunSecretName(again.Name)) == nil {
			t.Fatal("the recreated Job has no per-run Secret")
		}
	})

	// The per-run Secret is written before its Job, owned by the object
	// until the Job exists: a manager that dies between the two leaves a
	// Secret, which the next pass takes up for the same Job name, never a
	// Job that cannot start (created once, never deleted as stuck).
	t.Run("manager_dying_before_the_Job_leaves_a_Secret_the_next_pass_takes_up", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		died := errors.New("the manager died")
		err := e.passFailing(w.TC, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				return died
			}
			return c.Create(ctx, obj, opts...)
		}})
		if !errors.Is(err, died) {
			t.Fatalf("the pass did not reach the Job's creation: %v", err)
		}
		e.wantNoJob(w.TC)
		var run *corev1.Secret
		for _, s := range e.secretsWithPrefix(jobs.RunSecretPrefix) {
			run = &s
		}
		if run == nil {
			t.Fatal("no per-run Secret was written before the Job")
		}
		if c := metav1.GetControllerOf(run); c != nil || len(run.OwnerReferences) != 1 || run.OwnerReferences[0].UID != w.TC.UID {
			t.Fatalf("the per-run Secret without its Job is owned by %+v, want the TerraformCluster alone", run.OwnerReferences)
		}
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationApply)
		if jobs.RunSecretName(job.Name) != run.Name {
			t.Fatalf("the Job %s is not the one the Secret %s was written for", job.Name, run.Name)
		}
		got := e.secret(run.Name)
		if got == nil || got.UID != run.UID {
			t.Fatal("the per-run Secret was written again instead of taken up")
		}
		if c := metav1.GetControllerOf(got); c == nil || c.UID != job.UID || len(got.OwnerReferences) != 1 {
			t.Fatalf("the per-run Secret's owners are %+v, want Job %s alone", got.OwnerReferences, job.Name)
		}
		e.advance(2 * time.Minute)
		e.mustPass(w.TC)
		e.wantNoEvent(w.TC, m, infrav1.StuckJobDeletedEvent)
		if e.gone(job) {
			t.Fatal("the Job was deleted")
		}
	})

	// A manager that dies after creating the Job, before it hands the Job
	// its per-run Secret, leaves a Job that runs (its Secret exists); the
	// next pass hands the Secret over, so it goes with the Job.
	t.Run("manager_dying_before_handing_the_Secret_over_is_finished_by_the_next_pass", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		died := errors.New("the manager died")
		err := e.passFailing(w.TC, interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if s, ok := obj.(*corev1.Secret); ok && strings.HasPrefix(s.Name, jobs.RunSecretPrefix) {
				return died
			}
			return c.Patch(ctx, obj, patch, opts...)
		}})
		if !errors.Is(err, died) {
			t.Fatalf("the pass did not reach the hand-over: %v", err)
		}
		job := e.wantJob(w.TC, infrav1.OperationApply)
		if c := metav1.GetControllerOf(e.secret(jobs.RunSecretName(job.Name))); c != nil {
			t.Fatalf("the Secret was handed over: %v", c)
		}
		e.mustPass(w.TC)
		got := e.secret(jobs.RunSecretName(job.Name))
		if c := metav1.GetControllerOf(got); c == nil || c.UID != job.UID || len(got.OwnerReferences) != 1 {
			t.Fatalf("the per-run Secret's owners are %+v, want Job %s alone", got.OwnerReferences, job.Name)
		}
	})

	t.Run("machine_waits_for_its_clusters_operation", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		// The cluster's state carries another inputs hash: it re-applies
		// and holds the cluster's write lease.
		clusterApply := e.startApply(w.TC)
		e.mustPass(mw.TM)
		m := e.mark(mw.TM)
		res := e.mustPass(mw.TM)
		e.wantNoJob(mw.TM)
		e.wantCondition(mw.TM, infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.WaitingForClusterOperationReason)
		e.wantEvent(mw.TM, m, corev1.EventTypeNormal, infrav1.WaitingForClusterOperationEvent)
		if res.RequeueAfter != 30*time.Second {
			t.Fatalf("a lease wait requeues after 30s; got %v", res.RequeueAfter)
		}
		// Once the cluster's Job is bookkept its lease is given back.
		e.advance(time.Minute)
		e.finishJob(clusterApply, succeeded, nil)
		e.mustPass(w.TC)
		e.mustPass(mw.TM)
		e.wantJob(mw.TM, infrav1.OperationApply)
	})

	// Run leases: a second manager (or a pass racing after a crash) that
	// sees neither the running Job nor status.activeJob naming it still
	// starts no second Job of the object: the run lease is held.
	t.Run("run_lease_keeps_a_second_Job_from_starting", func(t *testing.T) {
		t.Parallel()
		e, w, first := reapplyingCluster(t)
		// What a manager whose caches lag sees: no Job carrying the
		// object's labels, no active Job in status, and newer inputs.
		hidden := first.DeepCopy()
		for k := range owner.Of(w.TC, infrav1.KindTerraformCluster, w.Cluster.Name).Labels() {
			delete(hidden.Labels, k)
		}
		if err := k8s.Update(e.ctx, hidden); err != nil {
			t.Fatal(err)
		}
		e.updateStatus(w.TC, func() { status(w.TC).ActiveJob = nil })
		e.update(w.TC, func() { w.TC.Spec.Variables = map[string]apiextensionsv1.JSON{"size": jsonString("small")} })
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		var all batchv1.JobList
		if err := k8s.List(e.ctx, &all, client.InNamespace(w.TC.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, j := range all.Items {
			if j.Name != first.Name && j.Status.CompletionTime == nil && j.Status.Failed == 0 {
				t.Fatalf("Job %s started while Job %s holds the run lease", j.Name, first.Name)
			}
		}
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.WaitingForRunLeaseReason)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.WaitingForRunLeaseEvent)
	})

	t.Run("condition_change_emits_ConditionChanged", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		// DependenciesReady has no event of its own: its owning Cluster
		// going makes it False/OwnerNotFound, a change to a bad state.
		if err := k8s.Delete(e.ctx, w.Cluster); err != nil {
			t.Fatal(err)
		}
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.OwnerNotFoundReason)
		ev := e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.ConditionChangedEvent)
		if !bytes.Contains([]byte(ev.Note), []byte(infrav1.DependenciesReadyCondition)) {
			t.Fatalf("ConditionChanged does not name DependenciesReady: %q", ev.Note)
		}
		// The next pass, with nothing changed, reports nothing again.
		m = e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantNoEvent(w.TC, m, infrav1.ConditionChangedEvent)
	})

	t.Run("failed_pass_keeps_observedGeneration_and_returns_no_requeue", func(t *testing.T) {
		t.Parallel()
		e, w, job := applyingCluster(t)
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(1, clusterOutputs(), ""))
		e.finishJob(job, succeeded, nil)
		e.mustPass(w.TC)
		// That pass wrote the module's endpoint to the spec; the next one
		// observes the new generation.
		e.mustPass(w.TC)
		gen := w.TC.Generation
		if status(w.TC).ObservedGeneration != gen {
			t.Fatalf("observedGeneration %d after a good pass, generation %d", status(w.TC).ObservedGeneration, gen)
		}
		// A spec change the pass cannot act on: the durable inputs Secret
		// was made immutable, so recording the new inputs fails.
		d := e.durable(w.TC)
		d.Immutable = ptr.To(true)
		if err := k8s.Update(e.ctx, d); err != nil {
			t.Fatal(err)
		}
		e.update(w.TC, func() {
			w.TC.Spec.Variables = map[string]apiextensionsv1.JSON{"size": {Raw: []byte(`"large"`)}}
		})
		o := e.pass(w.TC)
		if o.Err == nil {
			t.Fatal("the pass did not fail")
		}
		if o.Result != (ctrl.Result{}) {
			t.Fatalf("a failed pass returned %+v with its error", o.Result)
		}
		if status(w.TC).ObservedGeneration != gen {
			t.Fatalf("observedGeneration moved to %d on a failed pass", status(w.TC).ObservedGeneration)
		}
	})
}
