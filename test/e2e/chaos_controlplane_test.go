//go:build chaos

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The control-plane faults stop the shared environment's API server or
// etcd, which every scenario running at the same time would feel: these
// tests do not call t.Parallel, so they run alone, before the parallel
// ones. They run in make chaos only: each is a whole bring-up (about a
// minute on a quiet machine, several on a loaded one).

// TestFaultAPIServerRestartedMidApply restarts kube-apiserver while the
// machine's apply Job runs. The manager's and the runner's connections
// break and come back; nothing CAPTF needs lives in a connection. The
// bring-up converges with the Jobs the book predicts: the cluster's apply
// and re-apply, the machine's apply; if the runner's own API calls (the
// state write, the lock) fell into the outage, its Job fails and the
// apply runs again after the backoff, counted as a second apply.
func TestFaultAPIServerRestartedMidApply(t *testing.T) {
	b, ctx := startFaultScenario(t, 44)
	job := b.runningJob(ctx, "TerraformMachine/"+b.machines[0], "apply")
	t0 := time.Now()
	if err := b.w.e.ControlPlane.RestartAPIServer(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted kube-apiserver while Job %s ran, in %v", job.Name, time.Since(t0).Round(time.Millisecond))
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndAfterOutage(ctx, job.Name)
}

// TestFaultEtcdStoppedAndStarted stops etcd for 20 seconds while the
// machine's apply Job runs: the API server stays up and fails every
// request that needs storage, then serves again on the same data. The
// bring-up converges as after an API server restart.
func TestFaultEtcdStoppedAndStarted(t *testing.T) {
	b, ctx := startFaultScenario(t, 45)
	job := b.runningJob(ctx, "TerraformMachine/"+b.machines[0], "apply")
	cp := b.w.e.ControlPlane
	if err := cp.StopEtcd(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if err := cp.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped etcd for 20s while Job %s ran", job.Name)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndAfterOutage(ctx, job.Name)
}

// runningJob waits for owner's first Job of op to have a running pod.
func (b *faultBringUp) runningJob(ctx context.Context, owner, op string) *batchv1.Job {
	b.w.t.Helper()
	job := b.firstJob(ctx, owner, op)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(job), job); err == nil && job.Status.Active > 0 && job.Status.Ready != nil && *job.Status.Ready > 0 {
			return job
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.w.dump(ctx)
	b.w.t.Fatalf("Job %s never ran", job.Name)
	return nil
}

// checkEndAfterOutage is checkEnd for a bring-up through a control-plane
// outage during the machine's apply Job: that Job either succeeded, or
// failed because the runner's own API calls fell into the outage, in
// which case the machine applies once more (Retries and Backoff).
func (b *faultBringUp) checkEndAfterOutage(ctx context.Context, during string) {
	owner := "TerraformMachine/" + b.machines[0]
	failed := false
	var ops []string
	for _, j := range b.timeline.Jobs() {
		if j.Owner == owner {
			ops = append(ops, j.Op)
		}
		if j.Name == during && !j.Succeeded {
			failed = true
		}
	}
	b.w.t.Logf("Jobs of %s: %s (the one during the outage failed: %v)", owner, strings.Join(ops, ","), failed)
	if !failed {
		b.checkEnd(ctx)
		return
	}
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{during: true})
}
