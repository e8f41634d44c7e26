package lifecycle

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

func TestPlanPhase(t *testing.T) {
	const (
		ph = "p1:plan"
		ih = "h2:inputs"
	)
	rec := func(reason infrav1.TerraformPlanReason, phase infrav1.TerraformPlanPhase) *infrav1.TerraformPlan {
		return &infrav1.TerraformPlan{
			Spec:   infrav1.TerraformPlanSpec{Reason: reason, PlanHash: ph, InputsHash: ih},
			Status: infrav1.TerraformPlanStatus{Phase: phase},
		}
	}
	waiting := planFacts{newest: true, waiting: true, inputsHash: ih}
	with := func(f planFacts, mut func(*planFacts)) planFacts { mut(&f); return f }
	cases := []struct {
		name  string
		rec   *infrav1.TerraformPlan
		facts planFacts
		want  infrav1.TerraformPlanPhase
	}{
		{"a plan waited for is Pending", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending), waiting, infrav1.TerraformPlanPending},
		{"approve-plan naming the plan hash approves it", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending),
			with(waiting, func(f *planFacts) { f.approvePlan = ph }), infrav1.TerraformPlanApproved},
		{"approve-plan naming another hash does not", rec(infrav1.TerraformPlanChanged, infrav1.TerraformPlanPending),
			with(waiting, func(f *planFacts) { f.approvePlan = "p1:other" }), infrav1.TerraformPlanPending},
		{"a destructive plan is approved by its inputs hash", rec(infrav1.TerraformPlanDestructive, infrav1.TerraformPlanPending),
			with(waiting, func(f *planFacts) { f.approveDestructive = ih }), infrav1.TerraformPlanApproved},
		{"a destructive plan is not approved by its plan hash", rec(infrav1.TerraformPlanDestructive, infrav1.TerraformPlanPending),
			with(waiting, func(f *planFacts) { f.approvePlan = ph }), infrav1.TerraformPlanPending},
		{"the apply it let through succeeded", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanApproved),
			planFacts{newest: true, applied: true}, infrav1.TerraformPlanApplied},
		{"a newer record supersedes it, though its inputs are current", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending),
			with(waiting, func(f *planFacts) { f.newest = false }), infrav1.TerraformPlanSuperseded},
		{"new inputs supersede a plan no longer waited for", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending),
			planFacts{newest: true, inputsHash: "h2:new"}, infrav1.TerraformPlanSuperseded},
		{"no longer waited for, nothing replaced it: Expired", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending),
			planFacts{newest: true, inputsHash: ih}, infrav1.TerraformPlanExpired},
		{"inputs unknown this pass are not new inputs", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanPending),
			planFacts{newest: true}, infrav1.TerraformPlanExpired},
		{"a deleting target expires its plan, approved or not", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanApproved),
			with(waiting, func(f *planFacts) { f.deleting = true; f.approvePlan = ph }), infrav1.TerraformPlanExpired},
		{"a finished phase stays", rec(infrav1.TerraformPlanManual, infrav1.TerraformPlanSuperseded),
			with(waiting, func(f *planFacts) { f.approvePlan = ph; f.applied = true }), infrav1.TerraformPlanSuperseded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := planPhase(tc.rec, tc.facts); got != tc.want {
				t.Errorf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlanReasonOf(t *testing.T) {
	withPlan := func(o jobs.Outcome) *jobs.Classification {
		return &jobs.Classification{Outcome: o, Result: jobs.Result{Plan: &result.Plan{Hash: "p1:x"}}}
	}
	cases := []struct {
		name string
		op   infrav1.Operation
		c    *jobs.Classification
		plan *planRecord
		want infrav1.TerraformPlanReason
	}{
		{"a plan Job's plan put in status.plan", infrav1.OperationPlan, withPlan(jobs.OutcomeSucceeded), &planRecord{reason: infrav1.PlanAwaitingApprovalReason}, infrav1.TerraformPlanManual},
		{"an approved apply whose plan changed", infrav1.OperationApply, withPlan(jobs.OutcomePlanChanged), &planRecord{reason: infrav1.PlanChangedReason}, infrav1.TerraformPlanChanged},
		{"an apply the guard blocked", infrav1.OperationApply, withPlan(jobs.OutcomeBlocked), nil, infrav1.TerraformPlanDestructive},
		{"a plan not put in status.plan", infrav1.OperationPlan, withPlan(jobs.OutcomeSucceeded), nil, ""},
		{"a blocked apply without a plan in its result", infrav1.OperationApply, &jobs.Classification{Outcome: jobs.OutcomeBlocked}, nil, ""},
		{"a failed apply", infrav1.OperationApply, withPlan(jobs.OutcomeFailed), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := planReasonOf(tc.op, tc.c, tc.plan)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("reason %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

// TestNewerPlan: two records of one second are told apart by recordedAt,
// not by name.
func TestNewerPlan(t *testing.T) {
	sec := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rec := func(name string, at time.Duration) *infrav1.TerraformPlan {
		return &infrav1.TerraformPlan{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: sec},
			Spec:       infrav1.TerraformPlanSpec{RecordedAt: &metav1.MicroTime{Time: sec.Add(at)}},
		}
	}
	plan, apply := rec("captf-c-prod-plan-a1-0b4c1d", 100*time.Millisecond), rec("captf-c-prod-apply-a2-7d25df", 600*time.Millisecond)
	if !newerPlan(apply, plan) || newerPlan(plan, apply) {
		t.Error("the later record of the same second is not the newer")
	}
	apply.Spec.RecordedAt, plan.Spec.RecordedAt = nil, nil
	if !newerPlan(plan, apply) {
		t.Error("without recordedAt, the same second falls back to the name")
	}
}
