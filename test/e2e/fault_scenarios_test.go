package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// firstJob waits, polling fast, for the first Job of owner ("<kind>/<name>")
// and op, and returns it.
func (b *faultBringUp) firstJob(ctx context.Context, owner, op string) *batchv1.Job {
	b.w.t.Helper()
	kind, name, _ := strings.Cut(owner, "/")
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var jl batchv1.JobList
		if err := b.w.c.List(ctx, &jl, client.InNamespace(b.ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: kind, infrav1.OwnerNameLabel: name, infrav1.OpLabel: op}); err == nil && len(jl.Items) > 0 {
			return &jl.Items[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.w.dump(ctx)
	b.w.t.Fatalf("no %s Job of %s appeared", op, owner)
	return nil
}

// interruptions counts the JobInterrupted events on objects of the
// scenario's namespace.
func (b *faultBringUp) interruptions(ctx context.Context) int {
	return b.w.eventCounts(ctx, b.ns, "TerraformCluster")[infrav1.JobInterruptedEvent] +
		b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.JobInterruptedEvent]
}

// TestFaultApplyPodDeleted deletes the pod of a machine's first apply Job
// while it runs (Retries and Backoff: stopped from outside, JobInterrupted,
// no backoff): the Job fails without a result, is booked as interrupted,
// and a second apply brings the machine up. Jobs: the cluster's apply and
// re-apply, two applies of the machine.
func TestFaultApplyPodDeleted(t *testing.T) {
	t.Parallel()
	b, ctx := startFaultScenario(t, 40)
	owner := "TerraformMachine/" + b.machines[0]
	job := b.firstJob(ctx, owner, "apply")
	var pod *corev1.Pod
	for pod == nil && ctx.Err() == nil {
		var pl corev1.PodList
		if err := b.w.c.List(ctx, &pl, client.InNamespace(b.ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err == nil && len(pl.Items) > 0 {
			pod = &pl.Items[0]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := b.w.c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted pod %s of Job %s (phase %s)", pod.Name, job.Name, pod.Status.Phase)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{job.Name: true})
	got := &batchv1.Job{}
	if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(job), got); err == nil && got.Annotations[infrav1.InterruptedAnnotation] != "true" {
		t.Errorf("Job %s is not marked %s", job.Name, infrav1.InterruptedAnnotation)
	}
	if n := b.interruptions(ctx); n != 1 {
		t.Errorf("%d JobInterrupted events, want 1", n)
	}
}

// TestFaultApplyJobDeleted deletes the cluster's first apply Job while it
// runs (Retries and Backoff, "An apply Job deleted while it ran"): CAPTF
// records captf.io/interrupted-apply on the durable inputs, keeps an apply
// of the current inputs due and clears the mark once that apply succeeded.
// Jobs: three cluster applies (the deleted one, its replacement, the
// re-apply once control_plane_initialized flips), one machine apply.
func TestFaultApplyJobDeleted(t *testing.T) {
	t.Parallel()
	b, ctx := startFaultScenario(t, 41)
	owner := "TerraformCluster/" + b.name
	job := b.firstJob(ctx, owner, "apply")
	if err := b.w.c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted Job %s", job.Name)
	b.waitConverged(ctx, 10*time.Minute)
	// The replacement apply has the deleted Job's inputs and attempt, so
	// its name: three Jobs, two names.
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply,apply"}, map[string]bool{job.Name: true})
	if n := b.interruptions(ctx); n != 1 {
		t.Errorf("%d JobInterrupted events, want 1", n)
	}
	durable := &corev1.Secret{}
	if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "captf-inputs-c-" + b.name}, durable); err != nil {
		t.Fatal(err)
	}
	if v, ok := durable.Annotations[infrav1.InterruptedApplyAnnotation]; ok {
		t.Errorf("the durable inputs still carry %s=%s after a later apply succeeded", infrav1.InterruptedApplyAnnotation, v)
	}
}
