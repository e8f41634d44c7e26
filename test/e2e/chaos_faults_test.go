//go:build chaos

package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestFaultRunnerKilledHoldingLock kills a machine's first apply runner
// with SIGKILL while OpenTofu holds the state lock (the backend's Lease
// lock-tfstate-default-<suffix> has a holder), so the lock stays held by a
// pod that is gone. The Job is booked as interrupted, and the next apply
// runs with --force-unlock (Terraform State; the stale lock runbook): one
// ForceUnlocked event, and the machine comes up. Jobs: the cluster's apply
// and re-apply, two applies of the machine.
//
// The runner is killed at the hold (its plan waiting there), where apply
// holds the lock, which it does for the whole run. (The lock init takes to write the first state is held for
// moments only: a runner killed then leaves no state Secret, or one
// without its tfstate key, which is no state as the backend reads it too,
// and a lock the next init would need; the manager clears that one itself,
// test/lifecycle's TestTerraformState checks it.) It runs in make chaos
// only.
func TestFaultRunnerKilledHoldingLock(t *testing.T) {
	t.Parallel()
	b, ctx := startHeldFaultScenario(t, 43, "TerraformMachine")
	owner := "TerraformMachine/" + b.machines[0]
	held := b.heldRun(ctx, "apply")
	killed := killPod(t, string(held.pod.UID))
	if len(killed) == 0 {
		t.Fatalf("no process of pod %s to kill", held.pod.Name)
	}
	t.Logf("SIGKILLed %v, the processes of Job %s, while they held %s", killed, held.job.Name, held.lock)
	b.leftHold(ctx)
	l := &coordinationv1.Lease{}
	if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: held.lock}, l); err != nil || !applying(state.LockFromLease(l)) {
		t.Fatalf("the state lock %s is not held by the killed apply after the kill (%v)", held.lock, err)
	}
	b.hold.Release()
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{held.job.Name: true})
	if n := b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.ForceUnlockedEvent]; n != 1 {
		t.Errorf("%d ForceUnlocked events, want 1", n)
	}
}

// leftHold waits until no run waits at the hold: a killed run's read is
// abandoned once its connection closes.
func (b *faultBringUp) leftHold(ctx context.Context) {
	b.w.eventually(ctx, time.Minute, "the stopped run to leave the hold", func() (bool, string) {
		n, _ := b.hold.Waiting()
		return n == 0, "its read still waits"
	})
}

// killPod sends SIGKILL to every process of a pod the local environment's
// kubelet runs (chrooted into a folder named after the pod's UID), and
// returns their ids.
func killPod(t *testing.T, uid string) []int {
	var out []int
	for _, pid := range podProcesses(t, uid) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			out = append(out, pid)
		}
	}
	return out
}

// TestFaultManagerKilledDuringDestroy deletes a converged cluster and kills
// its manager right after it created the first destroy Job; a fresh
// manager finishes the deletion: every object destroys once, and nothing
// of CAPTF's is left in the namespace (state, inputs, mirrors, leases).
func TestFaultManagerKilledDuringDestroy(t *testing.T) {
	t.Parallel()
	b, ctx := startFaultScenario(t, 42)
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
	// Every Job created, once: the destroy Job created just before the
	// kill has its per-run Secret already, and runs.
	perOwner, seen := map[string][]string{}, map[string]bool{}
	for _, j := range b.timeline.Jobs() {
		if seen[j.Name] {
			t.Errorf("Job %s was created twice", j.Name)
		}
		perOwner[j.Owner] = append(perOwner[j.Owner], j.Op)
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
