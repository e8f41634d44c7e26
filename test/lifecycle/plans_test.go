package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// planDetailOf writes the plan detail Secret the runner of job would
// write, owned by the Job, with one changed attribute.
func (e *env) planDetailOf(job *batchv1.Job, hash string) {
	e.t.Helper()
	d := &result.PlanDetail{Version: result.PlanDetailVersion, Hash: hash, Changes: []infrav1.PlanResourceChange{{
		Address: "module.role.terraform_data.one", Actions: []string{"update"}, Label: "update",
		Attributes: []infrav1.PlanAttributeChange{{Path: "input.size", Before: ptr.To(`"small"`), After: ptr.To(`"large"`)}},
	}}}
	data, err := result.EncodePlanDetail(d)
	if err != nil {
		e.t.Fatal(err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: result.PlanSecretName(job.Name), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		}}},
		Data: map[string][]byte{result.PlanDetailKey: data},
	}
	if err := k8s.Create(e.ctx, s); err != nil {
		e.t.Fatal(err)
	}
}

// planRecord reads the TerraformPlan of a Job; nil when there is none.
func (e *env) planRecord(job string) *infrav1.TerraformPlan {
	e.t.Helper()
	rec := &infrav1.TerraformPlan{}
	if err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: job}, rec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		e.t.Fatal(err)
	}
	return rec
}

// wantPhase checks a record's phase and its label.
func (e *env) wantPhase(job string, phase infrav1.TerraformPlanPhase) *infrav1.TerraformPlan {
	e.t.Helper()
	rec := e.planRecord(job)
	if rec == nil {
		e.t.Fatalf("no TerraformPlan %s", job)
	}
	if rec.Status.Phase != phase || rec.Labels[infrav1.PlanPhaseLabel] != string(phase) {
		e.t.Fatalf("TerraformPlan %s: phase %q, label %q, want %s", job, rec.Status.Phase, rec.Labels[infrav1.PlanPhaseLabel], phase)
	}
	return rec
}

// manualPlan changes a Manual cluster's inputs to size and runs the plan
// Job, finished with plan hash hash and (withDetail) its detail Secret.
func (e *env) manualPlan(w *world, size, hash string, withDetail bool) *batchv1.Job {
	e.t.Helper()
	e.update(w.TC, func() {
		w.TC.Spec.Variables = map[string]apiextensionsv1.JSON{"size": jsonString(size)}
	})
	e.advance(time.Minute)
	e.mustPass(w.TC)
	plan := e.wantJob(w.TC, infrav1.OperationPlan)
	if withDetail {
		e.planDetailOf(plan, hash)
	}
	d := doc(infrav1.OperationPlan, succeeded)
	d.Plan = &result.Plan{Hash: hash, Change: 1, Resources: []string{"module.role.terraform_data.one (update)"}}
	e.advance(time.Minute)
	e.finishJob(plan, succeeded, d)
	e.mustPass(w.TC)
	return plan
}

// TestPlanRecords checks the TerraformPlan records of plans a person must
// review: written once per plan Job from the runner's detail, whose Secret
// then goes; their phases follow the approval annotations, the applies and
// newer plans; finished ones are pruned beyond the newest three.
func TestPlanRecords(t *testing.T) {
	t.Parallel()
	manual := func(tc *infrav1.TerraformCluster) { tc.Spec.ApplyPolicy = infrav1.ApplyPolicyManual }

	t.Run("manual_plan_is_recorded_approved_and_applied", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", manual)
		hash := "p1:" + strings.Repeat("c", 64)
		plan := e.manualPlan(w, "large", hash, true)
		rec := e.wantPhase(plan.Name, infrav1.TerraformPlanPending)
		s := rec.Spec
		if s.Reason != infrav1.TerraformPlanManual || s.PlanHash != hash || s.Job != plan.Name || s.InputsHash != plan.Annotations[infrav1.InputsHashAnnotation] ||
			s.TargetRef.Name != "prod" || s.TargetRef.UID != string(w.TC.UID) || s.Counts.Change != 1 || s.RuntimeVersion != "1.10.6" {
			t.Fatalf("record spec %+v", s)
		}
		if len(s.Changes) != 1 || len(s.Changes[0].Attributes) != 1 || *s.Changes[0].Attributes[0].After != `"large"` || s.Note != "" {
			t.Fatalf("record changes %+v, note %q", s.Changes, s.Note)
		}
		if len(rec.OwnerReferences) != 1 || rec.OwnerReferences[0].UID != w.TC.UID {
			t.Fatalf("owners %+v", rec.OwnerReferences)
		}
		if e.secret(result.PlanSecretName(plan.Name)) != nil {
			t.Fatal("the plan detail Secret stays after the record holds it")
		}
		// A pass that changes nothing writes nothing.
		var writes []string
		if err := e.passFailing(w.TC, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*infrav1.TerraformPlan); ok {
					writes = append(writes, obj.GetName())
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}); err != nil || len(writes) > 0 {
			t.Fatalf("a pass with nothing new: %v, wrote records %v", err, writes)
		}
		// Bookkeeping the Job again (a pass that died before marking it)
		// finds the record instead of writing a second.
		e.refresh(plan)
		e.update(plan, func() { delete(plan.Annotations, infrav1.BookkeptAnnotation) })
		e.mustPass(w.TC)
		if again := e.planRecord(plan.Name); again.ResourceVersion != rec.ResourceVersion {
			t.Fatal("bookkeeping the plan Job again rewrote its record")
		}

		e.annotate(w.TC, infrav1.ApprovePlanAnnotation, hash)
		e.mustPass(w.TC)
		apply := e.wantJob(w.TC, infrav1.OperationApply)
		e.wantPhase(plan.Name, infrav1.TerraformPlanApproved)
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(2, clusterOutputs(), ""))
		e.finishJob(apply, succeeded, nil)
		e.mustPass(w.TC)
		e.wantPhase(plan.Name, infrav1.TerraformPlanApplied)
	})

	t.Run("a_newer_plan_supersedes_and_finished_records_are_pruned", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", manual)
		var names []string
		for i := range 6 {
			// The plan hash covers addresses and actions only: plans of
			// the same resources hash alike, whatever their values.
			p := e.manualPlan(w, fmt.Sprintf("size-%d", i), "p1:"+strings.Repeat("d", 64), i%2 == 0)
			names = append(names, p.Name)
			e.mustPass(w.TC) // the cache of a real manager may show the new record a pass later
		}
		e.wantPhase(names[5], infrav1.TerraformPlanPending)
		for _, n := range names[2:5] {
			e.wantPhase(n, infrav1.TerraformPlanSuperseded)
		}
		for _, n := range names[:2] {
			if e.planRecord(n) != nil {
				t.Errorf("TerraformPlan %s was kept beyond the newest %d finished", n, lifecycle.KeepFinishedPlans)
			}
		}
		if rec := e.planRecord(names[5]); !strings.Contains(rec.Spec.Note, "no plan detail") || len(rec.Spec.Changes) != 0 {
			t.Errorf("a plan without detail: note %q, %d changes", rec.Spec.Note, len(rec.Spec.Changes))
		}
		// Back to Automatic: the plan nobody approved is applied without
		// it and expires.
		e.update(w.TC, func() { w.TC.Spec.ApplyPolicy = infrav1.ApplyPolicyAutomatic })
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantPhase(names[5], infrav1.TerraformPlanExpired)
	})

	t.Run("an_approved_apply_whose_plan_changed_records_the_new_plan", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", manual)
		hash := "p1:" + strings.Repeat("e", 64)
		plan := e.manualPlan(w, "large", hash, true)
		e.annotate(w.TC, infrav1.ApprovePlanAnnotation, hash)
		e.mustPass(w.TC)
		apply := e.wantJob(w.TC, infrav1.OperationApply)
		changed := "p1:" + strings.Repeat("f", 64)
		e.planDetailOf(apply, changed)
		d := doc(infrav1.OperationApply, blocked)
		d.Error.Kind = infrav1.RunErrorPlanChanged
		d.Plan = &result.Plan{Hash: changed, Add: 1, Change: 1, Resources: []string{"module.role.terraform_data.one (update)", "module.role.terraform_data.two (create)"}}
		e.advance(time.Minute)
		e.finishJob(apply, failed, d)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		rec := e.wantPhase(apply.Name, infrav1.TerraformPlanPending)
		if rec.Spec.Reason != infrav1.TerraformPlanChanged || rec.Spec.PlanHash != changed || rec.Spec.Counts.Add != 1 || len(rec.Spec.Changes) != 1 {
			t.Fatalf("the changed plan's record %+v", rec.Spec)
		}
		e.wantPhase(plan.Name, infrav1.TerraformPlanSuperseded)
	})

	t.Run("blocked_destructive_plan_is_recorded_and_applied_once_approved", func(t *testing.T) {
		t.Parallel()
		e, w, job := reapplyingCluster(t)
		e.planDetailOf(job, "p1:blocked")
		e.advance(time.Minute)
		e.finishJob(job, blocked, nil)
		e.mustPass(w.TC)
		rec := e.wantPhase(job.Name, infrav1.TerraformPlanPending)
		if rec.Spec.Reason != infrav1.TerraformPlanDestructive || rec.Spec.Counts.Destroy != 1 || len(rec.Spec.Changes) != 1 {
			t.Fatalf("record %+v", rec.Spec)
		}
		e.annotate(w.TC, infrav1.ApproveDestructivePlanAnnotation, job.Annotations[infrav1.InputsHashAnnotation])
		e.mustPass(w.TC)
		e.wantPhase(job.Name, infrav1.TerraformPlanApproved)
		approved := e.wantJob(w.TC, infrav1.OperationApply)
		e.advance(time.Minute)
		e.writeState(w.TC, stateOf(2, clusterOutputs(), ""))
		e.finishJob(approved, succeeded, nil)
		e.mustPass(w.TC)
		e.wantPhase(job.Name, infrav1.TerraformPlanApplied)
	})
}
