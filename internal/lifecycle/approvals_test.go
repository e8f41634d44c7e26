package lifecycle

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// TestConsumeRequests checks which finished Jobs consume the operator's
// one-shot annotations (book: Plan Approval; Terraform State, restore).
func TestConsumeRequests(t *testing.T) {
	const inputs, plan, newPlan = "h2:inputs", "p1:approved", "p1:changed"
	newPlanDoc := &result.Plan{Hash: newPlan, Add: 1, Destroy: 1, Resources: []string{"null_resource.a (replace)"}}
	cases := []struct {
		name        string
		op          infrav1.Operation
		outcome     jobs.Outcome
		jobAnn      map[string]string
		objAnn      map[string]string
		plan        *result.Plan
		restored    int64
		wantAnn     []string
		wantPlan    string // status.plan.planHash after, "" for none
		wantEvent   string
		wantReason  string // ApplyJobSucceeded reason set here, "" for none
		wantLastSer int64
	}{
		{
			name: "Plan Approval: the approval is consumed once, when an apply of the approved hash succeeds",
			op:   infrav1.OperationApply, outcome: jobs.OutcomeSucceeded,
			jobAnn:  map[string]string{infrav1.InputsHashAnnotation: inputs},
			objAnn:  map[string]string{infrav1.ApproveDestructivePlanAnnotation: inputs, "other": "x"},
			wantAnn: []string{"other"}, wantPlan: plan, wantEvent: infrav1.DestructivePlanApprovalConsumedEvent,
		},
		{
			name: "Plan Approval: an approval of another inputs hash is a new request and stays",
			op:   infrav1.OperationApply, outcome: jobs.OutcomeSucceeded,
			jobAnn:  map[string]string{infrav1.InputsHashAnnotation: inputs},
			objAnn:  map[string]string{infrav1.ApproveDestructivePlanAnnotation: "h2:newer"},
			wantAnn: []string{infrav1.ApproveDestructivePlanAnnotation}, wantPlan: plan,
		},
		{
			name: "Plan Approval: a failed apply consumes nothing",
			op:   infrav1.OperationApply, outcome: jobs.OutcomeFailed,
			jobAnn:  map[string]string{infrav1.InputsHashAnnotation: inputs, infrav1.ApprovedPlanAnnotation: plan},
			objAnn:  map[string]string{infrav1.ApproveDestructivePlanAnnotation: inputs, infrav1.ApprovePlanAnnotation: plan},
			wantAnn: []string{infrav1.ApproveDestructivePlanAnnotation, infrav1.ApprovePlanAnnotation}, wantPlan: plan,
		},
		{
			name: "Plan Approval, Done: the approved apply succeeded; captf.io/approve-plan removed, status.plan cleared, PlanApplied",
			op:   infrav1.OperationApply, outcome: jobs.OutcomeSucceeded,
			jobAnn:    map[string]string{infrav1.InputsHashAnnotation: inputs, infrav1.ApprovedPlanAnnotation: plan},
			objAnn:    map[string]string{infrav1.ApprovePlanAnnotation: plan},
			wantEvent: infrav1.PlanAppliedEvent,
		},
		{
			name: "Plan Approval, Apply: a changed plan replaces status.plan and asks again, Unknown/PlanChanged",
			op:   infrav1.OperationApply, outcome: jobs.OutcomePlanChanged, plan: newPlanDoc,
			jobAnn:   map[string]string{infrav1.InputsHashAnnotation: inputs, infrav1.ApprovedPlanAnnotation: plan},
			objAnn:   map[string]string{infrav1.ApprovePlanAnnotation: plan},
			wantAnn:  []string{infrav1.ApprovePlanAnnotation},
			wantPlan: newPlan, wantReason: infrav1.PlanChangedReason,
		},
		{
			name: "restore: success removes captf.io/restore-state and forgets the serial; StateRestored",
			op:   infrav1.OperationRestore, outcome: jobs.OutcomeSucceeded, restored: 7,
			jobAnn:    map[string]string{infrav1.RestoreSerialAnnotation: "7"},
			objAnn:    map[string]string{infrav1.RestoreStateAnnotation: "7"},
			wantEvent: infrav1.StateRestoredEvent,
		},
		{
			name: "restore: a failure is not retried for that serial; the annotation and the serial stay",
			op:   infrav1.OperationRestore, outcome: jobs.OutcomeFailed, restored: 7,
			jobAnn:      map[string]string{infrav1.RestoreSerialAnnotation: "7"},
			objAnn:      map[string]string{infrav1.RestoreStateAnnotation: "7"},
			wantAnn:     []string{infrav1.RestoreStateAnnotation},
			wantLastSer: 7,
			wantEvent:   infrav1.StateRestoreFailedEvent,
		},
	}
	// Each case twice: as a Job booked for the first time, and as the same
	// Job booked again (its bookkept mark not yet in the cache, or the pass
	// that booked it ended before marking it), which settles the requests
	// the same way and announces nothing again (events at most once per
	// occurrence).
	for _, booked := range []bool{false, true} {
		for _, tc := range cases {
			if booked {
				tc.name, tc.wantEvent = "booked again: "+tc.name, ""
			}
			t.Run(tc.name, func(t *testing.T) {
				obj := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: tc.objAnn}}
				obj.Status.Plan = &infrav1.PlanPreview{InputsHash: inputs, PlanHash: plan, Job: "j0"}
				obj.Status.LastRestoredSerial = tc.restored
				rec := events.NewFakeRecorder(10)
				f := &Flow{Recorder: rec, Adapter: readyAdapter{}}
				p := &Pass{Obj: obj, Kind: infrav1.KindTerraformCluster}
				job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j1", Namespace: "ns", Annotations: tc.jobAnn}}
				c := &jobs.Classification{Outcome: tc.outcome, FinishedAt: time.Unix(100, 0), Result: jobs.Result{Plan: tc.plan}}
				recorded := f.consumeRequests(p, job, tc.op, c, booked)
				for _, fn := range p.afterPatch {
					fn()
				}

				var got []string
				for k := range obj.Annotations {
					got = append(got, k)
				}
				if len(got) != len(tc.wantAnn) {
					t.Errorf("annotations left %v, want %v", got, tc.wantAnn)
				}
				for _, k := range tc.wantAnn {
					if _, ok := obj.Annotations[k]; !ok {
						t.Errorf("annotation %s was removed", k)
					}
				}
				gotPlan := ""
				if obj.Status.Plan != nil {
					gotPlan = obj.Status.Plan.PlanHash
				}
				if tc.op == infrav1.OperationRestore {
					tc.wantPlan = plan // untouched
				}
				if gotPlan != tc.wantPlan {
					t.Errorf("status.plan.planHash = %q, want %q", gotPlan, tc.wantPlan)
				}
				if obj.Status.LastRestoredSerial != tc.wantLastSer {
					t.Errorf("status.lastRestoredSerial = %d, want %d", obj.Status.LastRestoredSerial, tc.wantLastSer)
				}
				select {
				case e := <-rec.Events:
					if tc.wantEvent == "" {
						t.Errorf("unexpected event %q", e)
					}
				default:
					if tc.wantEvent != "" {
						t.Errorf("no %s event", tc.wantEvent)
					}
				}
				// The plan recorded for approval is what ApplyJobSucceeded says
				// of the Job (setApplyJobSucceeded).
				p.facts.results = append(p.facts.results, jobResult{name: job.Name, op: tc.op, c: c, plan: recorded})
				cond := applyResultVerdict(&p.facts.results[0])
				switch {
				case tc.wantReason == "" && recorded != nil:
					t.Errorf("a plan was recorded: %+v", recorded)
				case tc.wantReason != "" && (cond == nil || cond.reason != tc.wantReason || cond.status != metav1.ConditionUnknown):
					t.Errorf("ApplyJobSucceeded = %v, want Unknown/%s", cond, tc.wantReason)
				}
			})
		}
	}
}

func TestForgetRestore(t *testing.T) {
	for _, c := range []struct {
		name string
		ann  map[string]string
		want int64
	}{
		{"restore: with captf.io/restore-state removed the serial is forgotten, so it can be asked for again", nil, 0},
		{"restore: while captf.io/restore-state is set the serial is kept (not retried for that serial)", map[string]string{infrav1.RestoreStateAnnotation: "7"}, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Annotations: c.ann}}
			obj.Status.LastRestoredSerial = 7
			forgetRestore(&Pass{Obj: obj, Kind: infrav1.KindTerraformMachine})
			if obj.Status.LastRestoredSerial != c.want {
				t.Fatalf("status.lastRestoredSerial = %d, want %d", obj.Status.LastRestoredSerial, c.want)
			}
		})
	}
}
