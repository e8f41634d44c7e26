//go:build chaos

package e2e

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The control-plane faults stop the shared environment's API server or
// etcd, which every scenario running at the same time would feel: these
// tests do not call t.Parallel, so they run alone, before the parallel
// ones. They run in make chaos only: each is a whole bring-up (about a
// minute on a quiet machine, several on a loaded one).

// TestFaultAPIServerRestartedMidApply restarts kube-apiserver while the
// machine's apply Job runs: the run is held (its plan waiting at the hold,
// the state lock held) from before the restart until the API server
// serves again. The manager's connections and watches break and come
// back; nothing CAPTF needs lives in a connection. The run then finishes,
// and the bring-up converges with the Jobs the book predicts, each created
// and booked once: the cluster's apply and re-apply, the machine's apply.
func TestFaultAPIServerRestartedMidApply(t *testing.T) {
	b, ctx := startHeldFaultScenario(t, 44, "TerraformMachine")
	held := b.heldRun(ctx, "apply")
	t0 := time.Now()
	if err := b.w.e.ControlPlane.RestartAPIServer(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted kube-apiserver while Job %s was held, in %v", held.job.Name, time.Since(t0).Round(time.Millisecond))
	b.releaseAfterOutage(ctx, held)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// TestFaultEtcdStoppedAndStarted stops etcd for 20 seconds while the
// machine's apply Job is held: the API server stays up and fails every
// request that needs storage, then serves again on the same data. The
// bring-up converges as after an API server restart.
func TestFaultEtcdStoppedAndStarted(t *testing.T) {
	b, ctx := startHeldFaultScenario(t, 45, "TerraformMachine")
	held := b.heldRun(ctx, "apply")
	cp := b.w.e.ControlPlane
	if err := cp.StopEtcd(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	if err := cp.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped etcd for 20s while Job %s was held", held.job.Name)
	b.releaseAfterOutage(ctx, held)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// TestFaultWatchesExpired expires every watch of the manager mid-bring-up,
// while the machine's apply is held: a write moves etcd past every
// revision the manager has seen, etcd is compacted at that revision and
// kube-apiserver restarted, so its watch cache starts over there. Each
// watch the manager reopens from its last resourceVersion is too old to
// be served (410 Expired), and its informer lists again. Nothing is done
// twice: the bring-up converges with the Jobs the book predicts, each
// created and booked once.
func TestFaultWatchesExpired(t *testing.T) {
	b, ctx := startHeldFaultScenario(t, 48, "TerraformMachine")
	held := b.heldRun(ctx, "apply")
	b.w.create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "revision-bump", Namespace: b.ns}})
	before := b.faults.Lists()
	cp := b.w.e.ControlPlane
	rev, err := cp.CompactEtcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.RestartAPIServer(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted etcd at revision %d and restarted kube-apiserver while Job %s was held", rev, held.job.Name)
	// The informers of the kinds only a cache reads (the manager never
	// lists them live) list again.
	var relisted map[string]int
	b.w.eventually(ctx, 3*time.Minute, "the manager's informers to list again", func() (bool, string) {
		relisted = map[string]int{}
		for res, n := range b.faults.Lists() {
			if n > before[res] {
				relisted[res] = n - before[res]
			}
		}
		for _, res := range []string{"terraformmachines", "terraformclusters", "jobs", "machines"} {
			if relisted[res] == 0 {
				return false, res + " not listed again yet"
			}
		}
		return true, ""
	})
	t.Logf("lists since the restart, by resource: %v", relisted)
	b.releaseAfterOutage(ctx, held)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// releaseAfterOutage checks that the held run outlived the outage (its
// Job still active, its pod running, still waiting at the hold) once the
// API server serves again, and releases it.
func (b *faultBringUp) releaseAfterOutage(ctx context.Context, h heldRun) {
	b.w.eventually(ctx, 2*time.Minute, "the API server to serve the held Job "+h.job.Name+" again", func() (bool, string) {
		j := &batchv1.Job{}
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(h.job), j); err != nil {
			return false, err.Error()
		}
		if j.Status.Active != 1 {
			return false, "Job " + j.Name + " is no longer active"
		}
		return true, ""
	})
	if n, _ := b.hold.Waiting(); n != 1 {
		b.w.t.Fatalf("%d runs wait at the hold after the outage, want the held one", n)
	}
	b.w.t.Logf("after the outage: Job %s still active, its run still waiting at the hold; released", h.job.Name)
	b.hold.Release()
}
