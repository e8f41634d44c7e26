package lifecycle

import (
	"testing"

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
