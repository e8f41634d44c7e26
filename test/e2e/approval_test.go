package e2e

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestApprovalsAndRestore walks a TerraformCluster through the book's
// guards and its state restore, with real plans:
//
//   - Plan Approval, the destructive-plan guard: a variable change that
//     replaces a resource is blocked (ApplyJobSucceeded False/
//     DestructivePlanBlocked) until captf.io/approve-destructive-plan names
//     its inputs hash; the approved apply succeeds and the approval is
//     consumed.
//   - Terraform State, restore: captf.io/restore-state=<serial> of a backup
//     in status.stateBackups runs a restore Job; success removes the
//     annotation and emits StateRestored.
//   - Plan Approval, applyPolicy Manual: an input change runs a plan Job,
//     not an apply; status.plan and ApplyJobSucceeded Unknown/
//     PlanAwaitingApproval wait for captf.io/approve-plan=<plan hash>; the
//     approved apply succeeds, the annotation goes, status.plan is cleared
//     and PlanApplied is emitted.
func TestApprovalsAndRestore(t *testing.T) {
	t.Parallel()
	const ns, name = "team-guard", "guarded"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	cluster, created := w.clusterObjects(ns, name, nil)
	w.create(ctx, cluster, created)
	key := client.ObjectKey{Namespace: ns, Name: name}
	tc := &infrav1.TerraformCluster{}
	get := func() {
		if err := w.c.Get(ctx, key, tc); err != nil {
			t.Fatal(err)
		}
	}
	cond := func(typ string) metav1.Condition { return conditionOf(tc, typ) }
	settled := func() (bool, string) {
		get()
		ok, why := ready(tc)
		return ok && tc.Status.ActiveJob == nil, why
	}
	w.eventually(ctx, 5*time.Minute, "the first apply", settled)
	edit := func(change func()) {
		get()
		before := tc.DeepCopy()
		change()
		if err := w.c.Patch(ctx, tc, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	annotate := func(k, v string) {
		edit(func() {
			if tc.Annotations == nil {
				tc.Annotations = map[string]string{}
			}
			tc.Annotations[k] = v
		})
	}
	setVariable := func(k, jsonValue string) {
		edit(func() {
			if tc.Spec.Variables == nil {
				tc.Spec.Variables = map[string]apiextensionsv1.JSON{}
			}
			tc.Spec.Variables[k] = apiextensionsv1.JSON{Raw: []byte(jsonValue)}
		})
	}
	annotationGone := func(k string) bool {
		_, ok := tc.Annotations[k]
		return !ok
	}

	// The destructive-plan guard.
	setVariable("replace_token", `"one"`)
	w.eventually(ctx, 5*time.Minute, "the replacing apply to be blocked", func() (bool, string) {
		get()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return c.Reason == infrav1.DestructivePlanBlockedReason && c.Status == metav1.ConditionFalse, c.Reason + ": " + c.Message
	})
	blocked := newestJob(ctx, t, w, ns, infrav1.OperationApply)
	hash := blocked.Annotations[infrav1.InputsHashAnnotation]
	if hash == "" || !strings.Contains(cond(infrav1.ApplyJobSucceededCondition).Message, "terraform_data.substrate") {
		t.Fatalf("the blocked Job %s has inputs hash %q and the condition says %q", blocked.Name, hash, cond(infrav1.ApplyJobSucceededCondition).Message)
	}
	annotate(infrav1.ApproveDestructivePlanAnnotation, hash)
	w.eventually(ctx, 5*time.Minute, "the approved replacement to apply and consume its approval", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return ok && c.Reason == infrav1.ApplySucceededReason && annotationGone(infrav1.ApproveDestructivePlanAnnotation),
			why + "; ApplyJobSucceeded " + c.Reason
	})

	// Restore the newest backup.
	get()
	if len(tc.Status.StateBackups) == 0 {
		t.Fatal("no state backup was taken")
	}
	serial := tc.Status.StateBackups[0].Serial
	for _, b := range tc.Status.StateBackups {
		serial = max(serial, b.Serial)
	}
	annotate(infrav1.RestoreStateAnnotation, strconv.FormatInt(serial, 10))
	w.eventually(ctx, 5*time.Minute, "the restore to succeed and its request to go", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.RestoreJobSucceededCondition)
		return ok && c.Reason == infrav1.StateRestoredReason && annotationGone(infrav1.RestoreStateAnnotation) && tc.Status.LastRestoredSerial == 0,
			why + "; RestoreJobSucceeded " + c.Reason
	})

	// applyPolicy Manual: plan, wait, approve, apply.
	edit(func() { tc.Spec.ApplyPolicy = infrav1.ApplyPolicyManual })
	setVariable("extra_tags", `{"team":"guard"}`)
	w.eventually(ctx, 5*time.Minute, "a plan awaiting approval", func() (bool, string) {
		get()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return c.Reason == infrav1.PlanAwaitingApprovalReason && tc.Status.Plan != nil && tc.Status.ActiveJob == nil, c.Reason
	})
	if c := cond(infrav1.ApplyJobSucceededCondition); c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, infrav1.ApprovePlanAnnotation+"="+tc.Status.Plan.PlanHash) {
		t.Fatalf("ApplyJobSucceeded = %s/%s %q, want Unknown with the approve command", c.Status, c.Reason, c.Message)
	}
	if ok, why := ready(tc); !ok {
		t.Errorf("waiting for an approval turned Ready false: %s", why)
	}
	planJob := newestJob(ctx, t, w, ns, "")
	if op := planJob.Labels[infrav1.OpLabel]; op != string(infrav1.OperationPlan) || tc.Status.Plan.Change != 1 {
		t.Fatalf("the input change ran a %s Job with plan %+v, want a plan Job changing 1 resource", op, tc.Status.Plan)
	}
	// Nothing more runs while the plan waits, however often the cluster
	// is reconciled.
	if _, none := w.settle(ctx, 3, []client.Object{&infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}, []framework.Object{w.obj("TerraformCluster", name)}); none == 0 {
		t.Errorf("none of the passes while the plan awaited approval decided to wait")
	}
	if j := newestJob(ctx, t, w, ns, ""); j.Name != planJob.Name {
		t.Fatalf("Job %s started while the plan awaited approval", j.Name)
	}
	annotate(infrav1.ApprovePlanAnnotation, tc.Status.Plan.PlanHash)
	w.eventually(ctx, 5*time.Minute, "the approved plan to apply", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return ok && c.Reason == infrav1.ApplySucceededReason && annotationGone(infrav1.ApprovePlanAnnotation) && tc.Status.Plan == nil,
			why + "; ApplyJobSucceeded " + c.Reason
	})

	seen := w.eventCounts(ctx, ns, "TerraformCluster")
	for _, r := range []string{infrav1.DestructivePlanBlockedEvent, infrav1.StateRestoredEvent, infrav1.PlanReadyEvent, infrav1.PlanApprovedEvent, infrav1.PlanAppliedEvent} {
		if seen[r] != 1 {
			t.Errorf("%d %s events, want 1", seen[r], r)
		}
	}
	var jobs batchv1.JobList
	if err := w.c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, j := range sortedJobs(jobs.Items) {
		ops = append(ops, j.Labels[infrav1.OpLabel])
	}
	t.Logf("Jobs of the TerraformCluster, oldest first: %s", strings.Join(ops, ", "))
}

// newestJob is the newest Job in the namespace running op ("" for any).
func newestJob(ctx context.Context, t *testing.T, w *world, ns string, op infrav1.Operation) batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := w.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var newest *batchv1.Job
	for _, j := range sortedJobs(list.Items) {
		if op == "" || j.Labels[infrav1.OpLabel] == string(op) {
			newest = &j
		}
	}
	if newest == nil {
		t.Fatalf("no %s Job in %s", op, ns)
	}
	return *newest
}

// sortedJobs orders Jobs oldest first. One object's Jobs run one after
// another, so their creation seconds do not tie.
func sortedJobs(js []batchv1.Job) []batchv1.Job {
	out := append([]batchv1.Job(nil), js...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].CreationTimestamp.Before(&out[b].CreationTimestamp) })
	return out
}
