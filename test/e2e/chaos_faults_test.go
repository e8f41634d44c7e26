//go:build chaos

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
// The runner is killed while apply holds the lock, which it does for the
// whole run. (The lock init takes to write the first state is held for
// moments only: a runner killed then leaves no state Secret, or one
// without its tfstate key, which is no state as the backend reads it too,
// and a lock the next init would need; the manager clears that one itself,
// test/lifecycle's TestTerraformState checks it.) It runs in make chaos
// only.
func TestFaultRunnerKilledHoldingLock(t *testing.T) {
	t.Parallel()
	b, ctx := startFaultScenario(t, 43)
	owner := "TerraformMachine/" + b.machines[0]
	job := b.firstJob(ctx, owner, "apply")
	tm := &infrav1.TerraformMachine{}
	var lock, suffix string
	var killed []int
	deadline := time.Now().Add(5 * time.Minute)
	for len(killed) == 0 && time.Now().Before(deadline) {
		if lock == "" {
			if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.machines[0]}, tm); err == nil && tm.Status.StateSecretSuffix != "" {
				suffix = tm.Status.StateSecretSuffix
				lock = state.LockLeaseName(suffix)
			}
		}
		l := &coordinationv1.Lease{}
		if lock != "" && b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: lock}, l) == nil && ptr.Deref(l.Spec.HolderIdentity, "") != "" &&
			applying(state.LockFromLease(l)) {
			var pl corev1.PodList
			if err := b.w.c.List(ctx, &pl, client.InNamespace(b.ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err == nil && len(pl.Items) > 0 {
				killed = killPod(t, string(pl.Items[0].UID))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(killed) == 0 {
		b.w.dump(ctx)
		t.Fatalf("the runner of Job %s was never seen holding the state lock %s", job.Name, lock)
	}
	t.Logf("SIGKILLed %v, the processes of Job %s, while they held %s", killed, job.Name, lock)
	// Where the runner was stopped shows in what it left of the state.
	base := &corev1.Secret{}
	switch err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: state.SecretName(suffix)}, base); {
	case err != nil:
		t.Logf("state Secret %s: %v", state.SecretName(suffix), err)
	default:
		_, written := base.Data[state.DataKey]
		t.Logf("state Secret %s left with a %s key: %v", base.Name, state.DataKey, written)
	}
	// The lock is checked once the pod is seen gone: it stays held.
	wantUnlocks := 1
	l := &coordinationv1.Lease{}
	if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: lock}, l); err != nil || !state.LockFromLease(l).Held() {
		t.Logf("the lock was released before the kill landed (%v): no force-unlock expected", err)
		wantUnlocks = 0
	}
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{job.Name: true})
	if n := b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.ForceUnlockedEvent]; n != wantUnlocks {
		t.Errorf("%d ForceUnlocked events, want %d", n, wantUnlocks)
	}
}

// applying reports whether the lock is held by an apply (the runtime's
// lock info names the operation).
func applying(l state.Lock) bool {
	return l.Held() && l.Info != nil && l.Info.Operation == "OperationTypeApply"
}

// killPod sends SIGKILL to every process of a pod the local environment's
// kubelet runs (chrooted into a folder named after the pod's UID), and
// returns their ids.
func killPod(t *testing.T, uid string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		root, err := os.Readlink(filepath.Join("/proc", e.Name(), "root"))
		if err != nil || !strings.Contains(root, uid) {
			continue
		}
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
