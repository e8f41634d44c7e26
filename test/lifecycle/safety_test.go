package lifecycle

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
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
