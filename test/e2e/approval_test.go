package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
//
// Every approval, the restore and the abandon are made with kubectl captf,
// found by the pinned kubectl's plugin discovery and run as a user bound
// only to a Role of the namespace (read and patch Terraform* objects, read
// Jobs, pods and their logs): the plugin approves only the hash the
// controller published, refusing a stale one; logs prints the failing step
// of a failed apply; abandon lets a deleting cluster whose state is lost
// go.
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
	const operator = "operator@team-guard"
	w.operatorRole(ctx, ns, operator)
	ref := "terraformcluster/" + name
	edit := func(change func()) {
		get()
		before := tc.DeepCopy()
		change()
		if err := w.c.Patch(ctx, tc, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
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
	shown := w.planShown(ctx, operator, ref, ns)
	if shown.Guard != "destructive-plan" || shown.Annotation != infrav1.ApproveDestructivePlanAnnotation || shown.Hash != hash {
		t.Fatalf("plan show: %+v, want the destructive-plan guard and the blocked Job's inputs hash %s", shown, hash)
	}
	// A stale hash is refused and writes nothing.
	if _, stderr, err := w.captf(ctx, operator, "plan", "approve", ref, "-n", ns, "--hash", "h1:stale"); err == nil || !strings.Contains(stderr, "changed since it was shown") {
		t.Fatalf("approving a stale hash: %v %q, want a refusal", err, stderr)
	}
	if get(); !annotationGone(infrav1.ApproveDestructivePlanAnnotation) {
		t.Fatal("a refused approval wrote the annotation")
	}
	// The blocked plan is recorded for review.
	destructive := w.planRecord(ctx, ns, blocked.Name, infrav1.TerraformPlanPending)
	if destructive.Spec.Reason != infrav1.TerraformPlanDestructive || destructive.Spec.InputsHash != hash || destructive.Spec.Counts.Destroy != 1 {
		t.Fatalf("the blocked plan's record: %+v", destructive.Spec)
	}
	w.mustCaptf(ctx, operator, "plan", "approve", ref, "-n", ns, "--hash", shown.Hash)
	w.eventually(ctx, 5*time.Minute, "the approved replacement to apply and consume its approval", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return ok && c.Reason == infrav1.ApplySucceededReason && annotationGone(infrav1.ApproveDestructivePlanAnnotation),
			why + "; ApplyJobSucceeded " + c.Reason
	})
	w.planRecord(ctx, ns, blocked.Name, infrav1.TerraformPlanApplied)

	// Restore the newest backup.
	get()
	if len(tc.Status.StateBackups) == 0 {
		t.Fatal("no state backup was taken")
	}
	serial := tc.Status.StateBackups[0].Serial
	for _, b := range tc.Status.StateBackups {
		serial = max(serial, b.Serial)
	}
	if list := w.mustCaptf(ctx, operator, "restore", ref, "-n", ns); !strings.Contains(list, "\n"+strconv.FormatInt(serial, 10)+" ") {
		t.Fatalf("restore listed no backup with serial %d", serial)
	}
	w.mustCaptf(ctx, operator, "restore", ref, "-n", ns, "--serial", strconv.FormatInt(serial, 10))
	w.eventually(ctx, 5*time.Minute, "the restore to succeed and its request to go", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.RestoreJobSucceededCondition)
		return ok && c.Reason == infrav1.StateRestoredReason && annotationGone(infrav1.RestoreStateAnnotation) && tc.Status.LastRestoredSerial == 0,
			why + "; RestoreJobSucceeded " + c.Reason
	})

	// applyPolicy Manual: plan, wait, approve, apply. The change is a
	// Secret-sourced variable, so its values are sensitive: the record,
	// the events, the status and plan show mask them.
	const secretTag, secretTag2 = "sentinel-plan-tag-4e81c2", "sentinel-plan-tag-9a07d5"
	vars := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-vars", Namespace: ns, Labels: map[string]string{infrav1.VariablesLabel: "true"}},
		Data:       map[string][]byte{"extra_tags": []byte(`{"team":"` + secretTag + `"}`)},
	}
	w.create(ctx, vars)
	edit(func() {
		tc.Spec.ApplyPolicy = infrav1.ApplyPolicyManual
		tc.Spec.VariablesFrom = []infrav1.VariablesSource{{SecretRef: &infrav1.LocalObjectReference{Name: vars.Name}, Format: infrav1.VariablesFormatJSON}}
	})
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
	shown = w.planShown(ctx, operator, ref, ns)
	if shown.Guard != "plan" || shown.Annotation != infrav1.ApprovePlanAnnotation || shown.Hash != tc.Status.Plan.PlanHash || shown.Job != planJob.Name {
		t.Fatalf("plan show: %+v, want status.plan's hash %s from Job %s", shown, tc.Status.Plan.PlanHash, planJob.Name)
	}
	// The record of the plan, and its diff as plan show prints it.
	first := w.planRecord(ctx, ns, planJob.Name, infrav1.TerraformPlanPending)
	if first.Spec.Reason != infrav1.TerraformPlanManual || first.Spec.PlanHash != shown.Hash || first.Spec.TargetRef.UID != string(tc.UID) || first.Spec.Note != "" {
		t.Fatalf("the Manual plan's record: %+v", first.Spec)
	}
	masked := false
	for _, c := range first.Spec.Changes {
		for _, a := range c.Attributes {
			// The merged tags, or the whole input, as the runtime marks it.
			masked = masked || (strings.HasPrefix(a.Path, "input") && a.Sensitive && a.After != nil && *a.After == infrav1.SensitiveValue)
		}
	}
	if !masked {
		t.Fatalf("the record shows no masked change of the substrate's input: %+v", first.Spec.Changes)
	}
	diff := w.mustCaptf(ctx, operator, "plan", "show", ref, "-n", ns, "--color=never")
	t.Logf("kubectl captf plan show %s:\n%s", ref, diff)
	for _, want := range []string{"terraform_data.substrate (update)", "→ (sensitive value)", "Plan: 0 to add, 1 to change, 0 to destroy"} {
		if !strings.Contains(diff, want) {
			t.Errorf("plan show does not print %q", want)
		}
	}
	if colored := w.mustCaptf(ctx, operator, "plan", "show", "tfplan/"+first.Name, "-n", ns, "--color=always"); !strings.Contains(colored, "\x1b[") {
		t.Error("plan show --color=always printed no colour")
	}
	w.noSentinel(ctx, ns, diff, secretTag)

	// A second change before any approval supersedes the plan.
	vars.Data = map[string][]byte{"extra_tags": []byte(`{"team":"` + secretTag2 + `"}`)}
	if err := w.c.Update(ctx, vars); err != nil {
		t.Fatal(err)
	}
	var second *infrav1.TerraformPlan
	w.eventually(ctx, 5*time.Minute, "a new plan to supersede the first", func() (bool, string) {
		get()
		if tc.Status.Plan == nil || tc.Status.Plan.Job == planJob.Name {
			return false, "status.plan still names " + planJob.Name
		}
		second = w.planRecordIn(ctx, ns, tc.Status.Plan.Job)
		old := w.planRecordIn(ctx, ns, planJob.Name)
		return second != nil && old != nil && old.Status.Phase == infrav1.TerraformPlanSuperseded &&
			old.Labels[infrav1.PlanPhaseLabel] == string(infrav1.TerraformPlanSuperseded), "waiting for the records"
	})
	w.planRecord(ctx, ns, second.Name, infrav1.TerraformPlanPending)
	shown = w.planShown(ctx, operator, ref, ns)
	w.mustCaptf(ctx, operator, "plan", "approve", ref, "-n", ns, "--hash", shown.Hash)
	w.eventually(ctx, 5*time.Minute, "the approved plan to apply", func() (bool, string) {
		ok, why := settled()
		c := cond(infrav1.ApplyJobSucceededCondition)
		return ok && c.Reason == infrav1.ApplySucceededReason && annotationGone(infrav1.ApprovePlanAnnotation) && tc.Status.Plan == nil,
			why + "; ApplyJobSucceeded " + c.Reason
	})
	w.planRecord(ctx, ns, second.Name, infrav1.TerraformPlanApplied)
	w.noSentinel(ctx, ns, w.mustCaptf(ctx, operator, "plan", "show", "tfplan/"+second.Name, "-n", ns), secretTag, secretTag2)

	seen := w.eventCounts(ctx, ns, "TerraformCluster")
	for r, want := range map[string]int{infrav1.DestructivePlanBlockedEvent: 1, infrav1.StateRestoredEvent: 1, infrav1.PlanReadyEvent: 2, infrav1.PlanApprovedEvent: 1, infrav1.PlanAppliedEvent: 1} {
		if seen[r] != want {
			t.Errorf("%d %s events, want %d", seen[r], r, want)
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

	// status in the namespace, as the operator; -A needs more than the
	// operator's Role and says so.
	rows := w.statusRows(ctx, operator, "-n", ns)
	if len(rows) != 1 || rows[0].Name != name || rows[0].Ready != "True" || rows[0].LastRun == nil || rows[0].LastRun.Operation != "apply" || rows[0].LastRun.Outcome != "succeeded" {
		t.Errorf("status -n %s: %+v, want the cluster Ready with its apply succeeded", ns, rows)
	}
	if _, stderr, err := w.captf(ctx, operator, "status", "-A"); err == nil || !strings.Contains(stderr, "not allowed") {
		t.Errorf("status -A as a user of one namespace: %v %q, want a refusal naming the missing access", err, stderr)
	}

	// A failed apply: logs prints the step it failed at.
	edit(func() { tc.Spec.ApplyPolicy = infrav1.ApplyPolicyAutomatic })
	setVariable("endpoint_port", `"not-a-port"`)
	w.eventually(ctx, 5*time.Minute, "the apply to fail", func() (bool, string) {
		get()
		c := cond(infrav1.ApplyJobSucceededCondition)
		lr := tc.Status.LastRun
		return c.Reason == infrav1.ApplyFailedReason && lr != nil && lr.Operation == infrav1.OperationApply && lr.Error != nil && lr.Error.Step != "", c.Reason
	})
	step := tc.Status.LastRun.Error.Step
	logs, stderr, err := w.captf(ctx, operator, "logs", ref, "-n", ns, "--op", "apply", "--job", tc.Status.LastRun.Job)
	if err != nil || !strings.Contains(logs, `"Run failed"`) || !strings.Contains(logs, `step="`+step+`"`) || !strings.Contains(stderr, "failed at "+step) {
		t.Errorf("logs of the failed apply (step %s): %v, want the runner's log naming the step", step, err)
	}

	// Abandon: refused while the cluster is not being deleted; once it is,
	// and its state is lost, the cluster goes without a destroy.
	if _, stderr, err := w.captf(ctx, operator, "abandon", ref, "-n", ns, "--yes"); err == nil || !strings.Contains(stderr, "not being deleted") {
		t.Fatalf("abandon of a live cluster: %v %q, want a refusal", err, stderr)
	}
	get()
	if err := w.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tfstate-default-" + tc.Status.StateSecretSuffix}}); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(ctx, tc); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 5*time.Minute, "the deleting cluster to report its state lost", func() (bool, string) {
		get()
		c := cond(infrav1.StateReadableCondition)
		return tc.DeletionTimestamp != nil && c.Reason == infrav1.StateLostReason, c.Reason
	})
	// The manager still writes the deleting cluster's status; abandon
	// refuses an object that changed since it read it, and the operator
	// retries as its message says.
	w.eventually(ctx, 2*time.Minute, "abandon to be accepted", func() (bool, string) {
		_, stderr, err := w.captf(ctx, operator, "abandon", ref, "-n", ns, "--yes")
		if err != nil && !strings.Contains(stderr, "changed since it was read") {
			t.Fatalf("abandon: %v %q", err, stderr)
		}
		return err == nil, stderr
	})
	w.eventually(ctx, 2*time.Minute, "the abandoned cluster to go", func() (bool, string) {
		err := w.c.Get(ctx, key, &infrav1.TerraformCluster{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// newestJob is the newest Job in the namespace running op ("" for any).
// planRecordIn reads the TerraformPlan of a Job, nil when there is none.
func (w *world) planRecordIn(ctx context.Context, ns, job string) *infrav1.TerraformPlan {
	w.t.Helper()
	rec := &infrav1.TerraformPlan{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, rec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		w.t.Fatal(err)
	}
	return rec
}

// planRecord waits for the TerraformPlan of a Job to reach phase, in its
// status and its captf.io/plan-phase label.
func (w *world) planRecord(ctx context.Context, ns, job string, phase infrav1.TerraformPlanPhase) *infrav1.TerraformPlan {
	w.t.Helper()
	var rec *infrav1.TerraformPlan
	w.eventually(ctx, 2*time.Minute, "TerraformPlan "+job+" to be "+string(phase), func() (bool, string) {
		if rec = w.planRecordIn(ctx, ns, job); rec == nil {
			return false, "no record"
		}
		return rec.Status.Phase == phase && rec.Labels[infrav1.PlanPhaseLabel] == string(phase),
			fmt.Sprintf("phase %s, label %s", rec.Status.Phase, rec.Labels[infrav1.PlanPhaseLabel])
	})
	return rec
}

// noSentinel checks that no sentinel value appears in the namespace's
// TerraformPlans, events or Terraform objects' status, nor in out.
func (w *world) noSentinel(ctx context.Context, ns, out string, sentinels ...string) {
	w.t.Helper()
	var plans infrav1.TerraformPlanList
	var evs eventsv1.EventList
	var tcs infrav1.TerraformClusterList
	for _, l := range []client.ObjectList{&plans, &evs, &tcs} {
		if err := w.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			w.t.Fatal(err)
		}
	}
	var status []any
	for _, tc := range tcs.Items {
		status = append(status, tc.Status)
	}
	for what, v := range map[string]any{"TerraformPlans": plans.Items, "events": evs.Items, "status": status} {
		b, err := json.Marshal(v)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, s := range sentinels {
			if strings.Contains(string(b), s) {
				w.t.Errorf("the sentinel %s appears in the namespace's %s", s, what)
			}
		}
	}
	for _, s := range sentinels {
		if strings.Contains(out, s) {
			w.t.Errorf("the sentinel %s appears in kubectl captf's output", s)
		}
	}
}

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
