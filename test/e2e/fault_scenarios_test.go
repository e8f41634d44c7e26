package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
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
	b := newFaultBringUp(t, 40, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b.run(ctx, nil)
	defer b.stop()
	b.apply(ctx)
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
	b := newFaultBringUp(t, 41, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b.run(ctx, nil)
	defer b.stop()
	b.apply(ctx)
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

// TestFaultManagerKilledDuringDestroy deletes a converged cluster and kills
// its manager right after it created the first destroy Job; a fresh
// manager finishes the deletion: every object destroys once, and nothing
// of CAPTF's is left in the namespace (state, inputs, mirrors, leases).
func TestFaultManagerKilledDuringDestroy(t *testing.T) {
	t.Parallel()
	b := newFaultBringUp(t, 42, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b.run(ctx, nil)
	defer b.stop()
	b.apply(ctx)
	b.waitConverged(ctx, 10*time.Minute)
	b.stop()
	f := b.run(ctx, func(f *framework.Faults, cancel context.CancelFunc) {
		f.KillMatch = func(w framework.Write) bool {
			return w.Verb == "create" && w.Resource == "jobs" && strings.Contains(w.Name, "-destroy-")
		}
		f.Cancel = cancel
	})
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.ns}}
	if err := b.w.c.Delete(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	b.w.eventually(ctx, 5*time.Minute, "the first destroy Job", func() (bool, string) {
		if k := f.Killed(); k != nil {
			return true, ""
		}
		return false, "no destroy Job yet"
	})
	b.stop()
	t.Logf("killed after %s; a fresh manager takes over", f.Killed())
	b.run(ctx, nil)
	b.w.eventually(ctx, 10*time.Minute, "every object of the cluster gone", func() (bool, string) {
		var tcs infrav1.TerraformClusterList
		var tms infrav1.TerraformMachineList
		if err := b.w.c.List(ctx, &tcs, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		if err := b.w.c.List(ctx, &tms, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		if n := len(tcs.Items) + len(tms.Items); n > 0 {
			return false, "objects left"
		}
		return true, ""
	})
	// By Job name: a destroy Job created just before the kill, whose
	// per-run Secret was never written, is deleted as stuck and created
	// again under the same name.
	perOwner, seen := map[string][]string{}, map[string]bool{}
	for _, j := range b.timeline.Jobs() {
		if !seen[j.Name] {
			perOwner[j.Owner] = append(perOwner[j.Owner], j.Op)
		}
		seen[j.Name] = true
	}
	for owner, ops := range map[string]string{"TerraformCluster/" + b.name: "apply,apply,destroy", "TerraformMachine/" + b.machines[0]: "apply,destroy"} {
		if got := strings.Join(perOwner[owner], ","); got != ops {
			t.Errorf("%s ran %q, want %q", owner, got, ops)
		}
	}
	b.checkNothingLeft(ctx)
}

// checkNothingLeft checks that the objects' deletion left none of what
// CAPTF kept for them in the namespace: no state Secret, durable inputs,
// per-run Secret or backup, no run or lock Lease (Terraform State: the
// state goes with a completed destroy).
func (b *faultBringUp) checkNothingLeft(ctx context.Context) {
	b.w.eventually(ctx, 2*time.Minute, "CAPTF's Secrets and Leases to go", func() (bool, string) {
		var left []string
		var secrets corev1.SecretList
		if err := b.w.c.List(ctx, &secrets, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		for _, s := range secrets.Items {
			if s.Labels["tfstate"] == "true" || s.Labels[infrav1.StateBackupLabel] == "true" ||
				strings.HasPrefix(s.Name, "captf-inputs-") || strings.HasPrefix(s.Name, "captf-run-") {
				left = append(left, "Secret "+s.Name)
			}
		}
		var leases coordinationv1.LeaseList
		if err := b.w.c.List(ctx, &leases, client.InNamespace(b.ns)); err != nil {
			return false, err.Error()
		}
		for _, l := range leases.Items {
			left = append(left, "Lease "+l.Name)
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}
