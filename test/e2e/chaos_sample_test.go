package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// faultChains are the sample of the kill matrix (make chaos), as three
// chains: the sites where a lost pass costs the most. Around Job creation:
// the finalizer, the durable inputs, the run lease, the move block, the
// per-run Secret, the Job, and the Secret handed to the Job. Around
// the bookkeeping of a finished Job: the digest pin and applied marker,
// the per-run Secret deleted, the lease given back, the state adopted, the
// endpoint and providerID latches, the JobSucceeded event, the bookkept
// mark. And the re-apply once control_plane_initialized flips: the durable
// inputs rewritten, the Job created. make chaos runs every site of the
// reference bring-up on its own (TestFaultMatrix).
var faultChains = [][]faultPoint{{
	{"patch terraformclusters * finalizers", 1},
	{"create secrets captf-inputs-c-*", 1},
	{"patch secrets captf-inputs-c-* annotations[captf.io/applied],annotations[captf.io/image-digest]", 1},
	{"update leases captf-run-#-c " + leaseLabels, 1},
	{"patch jobs captf-c-*-apply-a1-# annotations[captf.io/bookkept]", 1},
	{"patch secrets captf-inputs-c-* data", 1},
}, {
	{"patch terraformclusters/status * status", 1},
	{"create leases captf-run-#-c", 1},
	{"delete secrets captf-run-captf-c-*-apply-a1-#", 1},
	{"patch terraformmachines * spec", 1},
	{"create jobs captf-c-*-apply-a2-#", 1},
	{"patch secrets tfstate-default-#-c annotations[captf.io/inputs-hash]", 1},
}, {
	{"patch terraformclusters * annotations[clusterctl.cluster.x-k8s.io/block-move]", 1},
	{"create secrets captf-run-captf-c-*-apply-a1-#", 1},
	{"create jobs captf-c-*-apply-a1-#", 1},
	{"patch secrets captf-run-captf-c-*-apply-a1-# ownerReferences", 1},
	{"patch terraformclusters * annotations[captf.io/endpoint-source],annotations[clusterctl.cluster.x-k8s.io/block-move],spec", 1},
	{"create events JobSucceeded", 1},
	{"patch secrets captf-inputs-m-* annotations[captf.io/applied],annotations[captf.io/image-digest]", 1},
}}

// chainHold holds the runs of a chain's owner ("TerraformCluster") from
// the start until the manager of point releaseAfter was killed: the point
// of handing the per-run Secret to its Job needs the Job still running
// when the next manager arrives, which a short Job on an idle machine,
// or a slow manager on a loaded one, would not leave to chance.
type chainHold struct {
	owner        string
	releaseAfter int
}

// faultChainHolds are the holds of faultChains, by chain.
var faultChainHolds = []chainHold{{}, {}, {owner: "TerraformCluster", releaseAfter: 3}}

// leaseLabels is what giving back a run lease writes besides its holder.
const leaseLabels = "labels[captf.infrastructure.cluster.x-k8s.io/owner-kind],labels[captf.infrastructure.cluster.x-k8s.io/owner-name],labels[captf.io/lease],labels[captf.io/managed]"

// TestFaultSample kills the managers of three one-machine bring-ups right
// after each write of faultChains and lets a fresh manager finish each:
// every chain converges with the three Jobs the book predicts, none
// created twice, none deleted as stuck, each booked once,
// nothing left behind.
func TestFaultSample(t *testing.T) {
	t.Parallel()
	for i, chain := range faultChains {
		t.Run(fmt.Sprintf("chain-%d", i), func(t *testing.T) {
			t.Parallel()
			t0 := time.Now()
			runFaultChain(t, i, 1, 0, chain, faultChainHolds[i])
			t.Logf("%d kill points in %v", len(chain), time.Since(t0).Round(time.Second))
		})
	}
}

// checkEnd checks what the book promises once a bring-up converged, however
// many managers it took: exactly the Jobs it predicts, each created once
// (from the timeline's watch, so those of a killed manager count),
// succeeded and booked once (bookkept, one JobSucceeded event, the owner's
// status.lastRun naming its newest Job), no per-run Secret left, every run
// lease given back, and a readable state holding the last apply's inputs
// hash for every object.
func (b *faultBringUp) checkEnd(ctx context.Context) {
	b.checkEndWith(ctx, nil, nil)
}

// faultPoint is one point of the kill matrix: the manager killed right
// after the at-th write of a site.
type faultPoint struct {
	site string
	at   int
}

func siteCounts(ws []framework.Write) []string {
	sites, n := framework.Sites(ws)
	out := make([]string, len(sites))
	for i, s := range sites {
		out[i] = fmt.Sprintf("%s x%d", s, n[s])
	}
	return out
}

// runFaultChain brings up a cluster in namespace fault-<i> under a chain
// of managers: each is killed right after the write of its point (sites
// in the order the bring-up writes them; at counts that manager's own
// writes), the next one starts fresh, and a last one finishes. The end
// state is checked once, after the last. A chain costs one bring-up for
// all its points.
func runFaultChain(t *testing.T, i, cps, workers int, points []faultPoint, hold chainHold) {
	b := newFaultBringUp(t, i, cps, workers)
	if hold.owner != "" {
		b.holdRuns(hold.owner)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	defer b.stop()
	for n, p := range points {
		f := b.run(ctx, func(f *framework.Faults, cancel context.CancelFunc) {
			f.KillSite, f.KillAt, f.Cancel = p.site, p.at, cancel
		})
		if n == 0 {
			b.apply(ctx)
		}
		_, ok := framework.WaitFor(ctx, 10*time.Minute, func() (bool, string) {
			if f.Killed() != nil {
				return true, ""
			}
			ok, _ := b.converged(ctx)
			return ok, ""
		})
		b.stop()
		if !ok || f.Killed() == nil {
			b.w.dump(ctx)
			t.Fatalf("point %d: the manager was never killed after write %d of %q; the sites it wrote: %v", n, p.at, p.site, siteCounts(f.Writes()))
		}
		t.Logf("point %d: killed after %s", n, f.Killed())
		if hold.owner != "" && n == hold.releaseAfter {
			b.hold.Release()
		}
	}
	b.run(ctx, nil)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}
