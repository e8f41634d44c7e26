package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lease"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestNothingLost checks that a deletion never drops the finalizer, or
// deletes state, on what the cache shows alone (The Reconcile Lifecycle,
// deletion; Terraform State, cleanup).
func TestNothingLost(t *testing.T) {
	t.Parallel()

	// A Secret under the state's name that no label selects (the cache
	// does not hold it, the label-selected list does not show it) keeps
	// the finalizer; one that is not CAPTF's is reported and never
	// deleted.
	t.Run("deletion_keeps_finalizer_for_state_not_in_the_cache", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		name := state.SecretName(e.suffixOf(w.TC))
		e.create(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Data:       map[string][]byte{state.DataKey: []byte("not a state")},
		})
		e.delete(w.TC)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		if e.gone(w.TC) {
			t.Fatal("the finalizer went while a state Secret exists")
		}
		if e.secret(name) == nil {
			t.Fatal("a state Secret that is not CAPTF's was deleted")
		}
		e.wantCondition(w.TC, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateSecretForeignReason)
		if n := len(e.eventsOf(w.TC, m, infrav1.StateUnreadableEvent)); n != 1 {
			t.Fatalf("StateUnreadable emitted %d times, want once", n)
		}
		e.wantNoEvent(w.TC, m, infrav1.FinalizerRemovedEvent)

		// CAPTF's owner labels but not the backend's: the object's own
		// state, still invisible to the label-selected read. The finalizer
		// stays, nothing is deleted.
		s := e.secret(name)
		s.Labels = map[string]string{infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kindOf(w.TC), infrav1.OwnerNameLabel: owner.LabelValue(w.TC.Name)}
		if err := k8s.Update(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.mustPass(w.TC)
		if e.gone(w.TC) || e.secret(name) == nil {
			t.Fatal("the finalizer went, or the state was deleted, while the state exists live")
		}

		// Gone for real: the finalizer goes.
		if err := k8s.Delete(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.mustPass(w.TC)
		if !e.gone(w.TC) {
			t.Fatalf("the finalizer stays once no state exists: %v", w.TC.Finalizers)
		}
	})

	// A run lease held by a Job that may still start keeps the finalizer
	// of an object with no state: that Job may be about to write it.
	t.Run("deletion_without_state_waits_for_the_run_lease", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		e.mustPass(w.TC)
		now := metav1.NewMicroTime(e.clock())
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: lease.RunName(e.suffixOf(w.TC))},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("captf-tc-prod-apply-a1-0123456789"), AcquireTime: &now, RenewTime: &now},
		}
		e.create(l)
		e.delete(w.TC)
		e.mustPass(w.TC)
		if e.gone(w.TC) {
			t.Fatal("the finalizer went while the run lease is held by a Job that may start")
		}
		if err := k8s.Delete(e.ctx, l); err != nil {
			t.Fatal(err)
		}
		e.mustPass(w.TC)
		if !e.gone(w.TC) {
			t.Fatalf("the finalizer stays once the run lease is free: %v", w.TC.Finalizers)
		}
	})
}

// TestUntrustedResults checks that a result document is input from a pod:
// what does not fit the API's bounds is clamped before it reaches status,
// the clamping is said, and the Job is bookkept once (Security Model,
// results from pods).
func TestUntrustedResults(t *testing.T) {
	t.Parallel()

	t.Run("oversized_plan_is_clamped_and_booked_once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", func(tc *infrav1.TerraformCluster) { tc.Spec.ApplyPolicy = infrav1.ApplyPolicyManual })
		e.update(w.TC, func() { w.TC.Spec.Variables = map[string]apiextensionsv1.JSON{"size": jsonString("large")} })
		e.advance(time.Minute)
		e.mustPass(w.TC)
		plan := e.wantJob(w.TC, infrav1.OperationPlan)
		long := "module.role.terraform_data." + strings.Repeat("x", 700)
		resources := []string{long, ""}
		for i := range 60 {
			resources = append(resources, fmt.Sprintf("module.role.terraform_data.r%d (create)", i))
		}
		d := doc(infrav1.OperationPlan, succeeded)
		d.Plan = &result.Plan{Hash: "p1:" + strings.Repeat("a", 64), Add: -5, Change: 1 << 40, Destroy: 2, Resources: resources}
		raw, err := json.Marshal(d) // as a pod could write it, unbounded
		if err != nil {
			t.Fatal(err)
		}
		e.advance(time.Minute)
		e.finishJobMessage(plan, succeeded, string(raw))
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		pl := w.TC.Status.Plan
		if pl == nil {
			t.Fatal("status.plan was not recorded")
		}
		if pl.Add != 0 || pl.Change != math.MaxInt32 || pl.Destroy != 2 {
			t.Fatalf("counts %d/%d/%d, want 0/%d/2", pl.Add, pl.Change, pl.Destroy, math.MaxInt32)
		}
		if len(pl.Resources) != 50 || len(pl.Resources[0]) > 600 || !pl.Truncated {
			t.Fatalf("resources: %d entries, first %d bytes, truncated %v", len(pl.Resources), len(pl.Resources[0]), pl.Truncated)
		}
		c := e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.PlanAwaitingApprovalReason)
		for _, want := range []string{"plan add -5 clamped to 0", "cut to 600 bytes", "shortened"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("condition message does not say %q: %s", want, c.Message)
			}
		}
		e.refresh(plan)
		if plan.Annotations[infrav1.BookkeptAnnotation] != "true" {
			t.Fatal("the plan Job was not marked bookkept")
		}
		e.mustPass(w.TC)
		if n := len(e.eventsOf(w.TC, m, infrav1.PlanReadyEvent)); n != 1 {
			t.Fatalf("PlanReady emitted %d times, want once", n)
		}
	})

	t.Run("result_for_another_operation_is_unreadable", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", func(tc *infrav1.TerraformCluster) { tc.Spec.ApplyPolicy = infrav1.ApplyPolicyManual })
		e.update(w.TC, func() { w.TC.Spec.Variables = map[string]apiextensionsv1.JSON{"size": jsonString("large")} })
		e.advance(time.Minute)
		e.mustPass(w.TC)
		plan := e.wantJob(w.TC, infrav1.OperationPlan)
		d := doc(infrav1.OperationApply, succeeded)
		d.Plan = &result.Plan{Hash: "p1:" + strings.Repeat("b", 64), Add: 1}
		raw, _ := json.Marshal(d)
		e.advance(time.Minute)
		e.finishJobMessage(plan, succeeded, string(raw))
		e.mustPass(w.TC)
		if w.TC.Status.Plan != nil {
			t.Fatalf("a result for another operation was recorded: %+v", w.TC.Status.Plan)
		}
	})
}

// TestImpossibleJobs checks that a Job that can never be created is
// reported before any lease is taken (The Reconcile Lifecycle, act).
func TestImpossibleJobs(t *testing.T) {
	t.Parallel()

	t.Run("unbuildable_job_reports_JobInvalid_and_takes_no_lease", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", func(tc *infrav1.TerraformCluster) { tc.Spec.Source.Image = "registry.example/captf/module:v1 latest" })
		e.mustPass(w.TC)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		c := e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.JobInvalidReason)
		if !strings.Contains(c.Message, "module image") {
			t.Errorf("the message does not name the cause: %s", c.Message)
		}
		if n := len(e.eventsOf(w.TC, m, infrav1.JobInvalidEvent)); n != 1 {
			t.Fatalf("JobInvalid emitted %d times, want once", n)
		}
		l := &coordinationv1.Lease{}
		if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: lease.RunName(e.suffixOf(w.TC))}, l); err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			t.Fatalf("the run lease is held by %s for a Job that cannot exist", *l.Spec.HolderIdentity)
		}
		// Fixed: the Job starts.
		e.update(w.TC, func() { w.TC.Spec.Source.Image = moduleImage })
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationApply)
	})
}

// TestForeignRunNames checks that a Job or per-run Secret with the name of
// CAPTF's next Job but not CAPTF's marks is reported and left alone, never
// taken as the run's (Security Model; The Reconcile Lifecycle, act).
func TestForeignRunNames(t *testing.T) {
	t.Parallel()

	// next fails the first apply and returns the name the retry (attempt 2)
	// will have, with the clock 10 s after the failure (the retry is due at
	// one minute).
	next := func(e *env, w *world) string {
		a1 := e.startApply(w.TC)
		e.finishJob(a1, failed, nil)
		e.advance(10 * time.Second)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		return decide.JobName(infrav1.KindTerraformCluster, w.TC.Name, decide.OpApply, 2, a1.Annotations[infrav1.InputsHashAnnotation], 0)
	}
	// wantTaken checks the retry is reported, holds no lease and creates
	// nothing, then that it starts once the name is free.
	wantTaken := func(e *env, w *world, name, what string, free func()) {
		e.t.Helper()
		m := e.mark(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		c := e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.JobNameTakenReason)
		if !strings.Contains(c.Message, what) {
			t.Fatalf("the message does not name %q: %s", what, c.Message)
		}
		if n := len(e.eventsOf(w.TC, m, infrav1.JobNameTakenEvent)); n != 1 {
			t.Fatalf("JobNameTaken emitted %d times, want once", n)
		}
		l := &coordinationv1.Lease{}
		if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: lease.RunName(e.suffixOf(w.TC))}, l); err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			t.Fatalf("the run lease is held by %s for a Job that was not created", *l.Spec.HolderIdentity)
		}
		if st := status(w.TC); st.ActiveJob != nil {
			t.Fatalf("status.activeJob names %s", st.ActiveJob.Name)
		}
		free()
		e.mustPass(w.TC)
		if j := e.wantJob(w.TC, infrav1.OperationApply); j.Name != name || metav1.GetControllerOf(j) == nil || metav1.GetControllerOf(j).UID != w.TC.UID {
			t.Fatalf("after the name is free the retry is %s controlled by %v, want %s controlled by the cluster", j.Name, metav1.GetControllerOf(j), name)
		}
	}

	t.Run("a_Job_with_CAPTF's_name_and_labels_but_no_owner_is_not_reused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		name := next(e, w)
		foreign := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: jobs.Labels(owner.Of(w.TC, infrav1.KindTerraformCluster, "prod"), infrav1.OperationApply, 2)},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "registry.example/other:v1"}},
			}}},
		}
		e.create(foreign)
		wantTaken(e, w, name, "Job "+name+" exists and is not CAPTF's", func() {
			if s := (&corev1.Secret{}); k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: jobs.RunSecretName(name)}, s) == nil {
				t.Fatalf("a per-run Secret %s was written for the foreign Job", s.Name)
			}
			if err := k8s.Delete(e.ctx, foreign, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil || !e.gone(foreign) {
				t.Fatalf("delete the foreign Job: %v", err)
			}
		})
	})

	t.Run("a_per_run_Secret_CAPTF_left_behind_a_deleted_Job_is_deleted_and_the_run_starts", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		name := next(e, w)
		orphan := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: jobs.RunSecretName(name),
				Labels:          jobs.Labels(owner.Of(w.TC, infrav1.KindTerraformCluster, "prod"), infrav1.OperationApply, 2),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: "deleted-job-uid", Controller: ptr.To(true)}}},
			Data: map[string][]byte{"main.tf.json": []byte(`{}`), "terraform.tfvars.json": []byte(`{}`)},
		}
		e.create(orphan)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		j := e.wantJob(w.TC, infrav1.OperationApply)
		s := &corev1.Secret{}
		if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: orphan.Name}, s); err != nil {
			t.Fatal(err)
		}
		if s.UID == orphan.UID || metav1.GetControllerOf(s) == nil || metav1.GetControllerOf(s).UID != j.UID {
			t.Fatalf("the per-run Secret is still the orphan (controller %v), want one controlled by Job %s", metav1.GetControllerOf(s), j.Name)
		}
	})

	t.Run("a_foreign_per_run_Secret_without_its_Job_is_not_mounted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		name := next(e, w)
		planted := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: jobs.RunSecretName(name)},
			Data:       map[string][]byte{"main.tf.json": []byte(`{"resource":{}}`)},
		}
		e.create(planted)
		wantTaken(e, w, name, "Secret "+planted.Name+" exists without its Job and is not CAPTF's: it has no controller owner reference", func() {
			if err := k8s.Delete(e.ctx, planted); err != nil || !e.gone(planted) {
				t.Fatalf("delete the planted Secret: %v", err)
			}
		})
	})
}

// TestFinalizerOptimisticLock checks that adding the finalizer never drops
// a finalizer another controller added after the pass read the object: the
// add carries the read's resourceVersion, so a concurrent write makes it
// fail and the next pass adds it next to the other one (The Reconcile
// Lifecycle, preamble).
func TestFinalizerOptimisticLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.newCluster("prod", nil)
	const other = "example.com/other-controller"
	raced := false
	racing := interceptor.NewClient(k8s.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if _, ok := obj.(*infrav1.TerraformCluster); ok && key.Name == w.TC.Name && !raced {
				// Another controller adds its finalizer right after this read.
				raced = true
				fresh := &infrav1.TerraformCluster{}
				if err := c.Get(ctx, key, fresh); err != nil {
					return err
				}
				controllerutil.AddFinalizer(fresh, other)
				if err := c.Update(ctx, fresh); err != nil {
					return err
				}
			}
			return nil
		},
	})
	f := e.flowFor(w.TC)
	f.Client = racing
	if _, err := f.Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.TC)}); err == nil {
		t.Fatal("the finalizer patch did not conflict with the concurrent write")
	}
	e.refresh(w.TC)
	if !slices.Equal(w.TC.Finalizers, []string{other}) {
		t.Fatalf("after the conflict the finalizers are %v, want only %s", w.TC.Finalizers, other)
	}
	e.mustPass(w.TC)
	if !slices.Equal(w.TC.Finalizers, []string{other, infrav1.KindTerraformCluster.Finalizer()}) {
		t.Fatalf("finalizers %v, want %s kept next to CAPTF's", w.TC.Finalizers, other)
	}
}
