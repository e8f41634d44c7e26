//go:build chaos

package e2e

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
)

// TestFaultLeaderPartitioned runs two replicas of the manager with leader
// election and cuts the leader off from the API server for a minute while
// the machine's apply runs on: the leader cannot renew its Lease and stops
// leading, the other replica takes the Lease once it expires and books the
// Job the cut-off leader started, once; no Job is created twice.
func TestFaultLeaderPartitioned(t *testing.T) {
	t.Parallel()
	b := newFaultBringUp(t, 52, 1, 0)
	b.holdRuns("TerraformMachine")
	ctx := faultContext(t)
	elect := func(o *setup.Options) {
		o.LeaderElect = true
		o.LeaderElectionNamespace = b.ns
	}
	b.w.namespace(ctx, b.ns) // the Lease's
	leader := b.replica(ctx, nil, elect)
	stop := func(r replica) func() { return func() { r.cancel(); <-r.done } }
	t.Cleanup(stop(leader))
	first := b.leaseHolder(ctx, "")
	standby := b.replica(ctx, nil, elect)
	t.Cleanup(stop(standby))
	b.apply(ctx)
	held := b.heldRun(ctx, "apply")
	leader.faults.Cut()
	cut := time.Now()
	t.Logf("cut the leader %s off from the API server, Job %s held", first, held.job.Name)
	b.hold.Release()
	second := b.leaseHolder(ctx, first)
	t.Logf("%s took the Lease %v after the cut", second, time.Since(cut).Round(time.Second))
	select {
	case err := <-leader.done:
		leader.done <- err
		t.Logf("the cut-off leader stopped: %v", err)
	case <-time.After(time.Until(cut.Add(partition))):
		t.Errorf("the cut-off leader was still running %v after the cut", partition)
	}
	b.partitioned(ctx, held, cut, leader.faults)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// leaseHolder waits for the scenario's leader-election Lease to be held by
// someone other than not, and returns the holder.
func (b *faultBringUp) leaseHolder(ctx context.Context, not string) string {
	var holder string
	b.w.eventually(ctx, 2*time.Minute, "a leader other than "+not, func() (bool, string) {
		l := &coordinationv1.Lease{}
		if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: setup.LeaderElectionID}, l); err != nil {
			return false, err.Error()
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "" && holder != not, "held by " + holder
	})
	return holder
}
