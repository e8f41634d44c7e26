package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
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

// applying reports whether the lock is held by an apply (the runtime's
// lock info names the operation).
func applying(l state.Lock) bool {
	return l.Held() && l.Info != nil && l.Info.Operation == "OperationTypeApply"
}

// heldRun is the moment a held scenario (startHeldFaultScenario) lands its
// fault in: the first Job of op of the held object has reached the hold,
// its pod is running and the object's state lock is held by the runtime's
// command (it takes it before it plans: apply, or plan for a cluster's
// guarded apply; a destroy is an apply too). It
// waits for that moment, checks every part of it and logs it, so that a
// fault that would miss its moment fails the test instead.
type heldRun struct {
	job  *batchv1.Job
	pod  *corev1.Pod
	lock string
}

func (b *faultBringUp) heldRun(ctx context.Context, op string) heldRun {
	t := b.w.t
	t.Helper()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := b.hold.Held(hctx); err != nil {
		b.w.dump(ctx)
		t.Fatal(err)
	}
	name := b.holdName
	var o infrav1.Workload = &infrav1.TerraformCluster{}
	if b.holdOwner == "TerraformMachine" {
		o = &infrav1.TerraformMachine{}
	}
	owner := b.holdOwner + "/" + name
	job := b.firstJob(ctx, owner, op)
	var h heldRun
	var lockOp string
	// The run waits at the hold until it is released: what is checked here
	// stays as it is, and polling only waits for the caches and the
	// kubelet's status to say so.
	why, ok := framework.WaitFor(ctx, time.Minute, func() (bool, string) {
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err.Error()
		}
		if job.Status.Active != 1 || job.Status.CompletionTime != nil {
			return false, fmt.Sprintf("Job %s has %d active pods", job.Name, job.Status.Active)
		}
		var pl corev1.PodList
		if err := b.w.c.List(ctx, &pl, client.InNamespace(b.ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			return false, err.Error()
		}
		if len(pl.Items) != 1 || pl.Items[0].Status.Phase != corev1.PodRunning {
			return false, fmt.Sprintf("Job %s has %d pods, not one running", job.Name, len(pl.Items))
		}
		if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: name}, o); err != nil {
			return false, err.Error()
		}
		suffix := o.GetWorkspaceStatus().StateSecretSuffix
		if suffix == "" {
			return false, owner + " has no state suffix"
		}
		l := &coordinationv1.Lease{}
		lock := state.LockLeaseName(suffix)
		if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: lock}, l); err != nil {
			return false, err.Error()
		}
		// The lock info names the command holding it: apply, or plan for a
		// cluster's guarded apply (its plan step first).
		li := state.LockFromLease(l)
		if !li.Held() || li.Info == nil || li.Info.Operation != "OperationTypeApply" && li.Info.Operation != "OperationTypePlan" {
			return false, "state lock " + lock + " is not held by a plan or an apply"
		}
		lockOp = li.Info.Operation
		if n, _ := b.hold.Waiting(); n != 1 {
			return false, fmt.Sprintf("%d runs wait at the hold", n)
		}
		h = heldRun{job: job.DeepCopy(), pod: pl.Items[0].DeepCopy(), lock: lock}
		return true, ""
	})
	if !ok {
		b.w.dump(ctx)
		t.Fatalf("the held %s of %s is not in the fault's moment: %s", op, owner, why)
	}
	t.Logf("fault moment: %s Job %s of %s, pod %s running, state lock %s held (%s), its plan waiting at the hold",
		op, job.Name, owner, h.pod.Name, h.lock, lockOp)
	return h
}

// releaseWhenStopped releases the hold once the held run was stopped:
// killed (its pod gone, its read at the hold abandoned), or asked to stop
// (its runner logged the signal). A run stopped while it waits at the
// hold goes no further; one asked to stop has OpenTofu waiting on the
// hold's answer before it can stop, so the hold answers then.
func (b *faultBringUp) releaseWhenStopped(ctx context.Context, h heldRun) {
	b.w.eventually(ctx, 2*time.Minute, "the held run of Job "+h.job.Name+" to be stopped", func() (bool, string) {
		if logs, err := b.w.e.Logs(b.ns, h.pod.Name, "source"); err == nil && strings.Contains(logs, "Signal received; stopping") {
			return true, ""
		}
		err := b.w.c.Get(ctx, client.ObjectKeyFromObject(h.pod), &corev1.Pod{})
		if err == nil {
			return false, "pod " + h.pod.Name + " is still there and its runner got no signal"
		}
		if !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		if n, _ := b.hold.Waiting(); n != 0 {
			return false, "its read still waits at the hold"
		}
		return true, ""
	})
	b.hold.Release()
}

// interruptions counts the JobInterrupted events on objects of the
// scenario's namespace.
func (b *faultBringUp) interruptions(ctx context.Context) int {
	return b.w.eventCounts(ctx, b.ns, "TerraformCluster")[infrav1.JobInterruptedEvent] +
		b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.JobInterruptedEvent]
}

// TestFaultApplyPodDeleted deletes the pod of a machine's first apply Job
// (grace 0) while the apply is held, its state lock taken (Retries and
// Backoff: stopped from outside, JobInterrupted, no backoff): the Job fails
// without a result, is booked as interrupted, and a second apply, which
// clears the lock the killed runner left (ForceUnlocked), brings the
// machine up. Jobs: the cluster's apply and re-apply, two applies of the
// machine.
func TestFaultApplyPodDeleted(t *testing.T) {
	t.Parallel()
	b, ctx := startHeldFaultScenario(t, 40, "TerraformMachine")
	owner := "TerraformMachine/" + b.machines[0]
	held := b.heldRun(ctx, "apply")
	job := held.job
	if err := b.w.c.Delete(ctx, held.pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted pod %s of Job %s", held.pod.Name, job.Name)
	b.releaseWhenStopped(ctx, held)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{job.Name: true})
	got := &batchv1.Job{}
	if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(job), got); err == nil && got.Annotations[infrav1.InterruptedAnnotation] != "true" {
		t.Errorf("Job %s is not marked %s", job.Name, infrav1.InterruptedAnnotation)
	}
	if n := b.interruptions(ctx); n != 1 {
		t.Errorf("%d JobInterrupted events, want 1", n)
	}
	// The killed runner held the state lock: the next apply clears it.
	if n := b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.ForceUnlockedEvent]; n != 1 {
		t.Errorf("%d ForceUnlocked events, want 1", n)
	}
}

// TestFaultApplyJobDeleted deletes the cluster's first apply Job while its
// plan step is held (Retries and Backoff, "An apply Job deleted while it ran"): CAPTF
// records captf.io/interrupted-apply on the durable inputs, keeps an apply
// of the current inputs due and clears the mark once that apply succeeded.
// Jobs: three cluster applies (the deleted one, its replacement, the
// re-apply once control_plane_initialized flips), one machine apply.
func TestFaultApplyJobDeleted(t *testing.T) {
	t.Parallel()
	b, ctx := startHeldFaultScenario(t, 41, "TerraformCluster")
	owner := "TerraformCluster/" + b.name
	held := b.heldRun(ctx, "apply")
	job := held.job
	if err := b.w.c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted Job %s", job.Name)
	b.releaseWhenStopped(ctx, held)
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
