package lifecycle

import (
	"context"
	"fmt"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lease"
)

func (f *Flow) leases() *lease.Leases {
	l := lease.New(f.Client, f.APIReader)
	// The cache's copy saves the live read of a round that ends in a
	// create or a resourceVersion-checked update.
	l.Hint = f.Client
	if f.leaseSync != nil {
		// A member's check of the cluster lease reads the cache once it
		// holds the member's own run lease write.
		l.Synced = f.leaseSync.Synced
	}
	if f.Clock != nil {
		l.Now = f.Clock
	}
	return l
}

func (p *Pass) claim(job string, op infrav1.Operation) lease.Claim {
	return lease.Claim{Owner: p.owner(), Suffix: p.Suffix, Job: job, Op: op}
}

// acquireLeases takes the run lease (and the cluster operation gate) for a
// Job about to be created; a non-nil Wait says why it must wait.
func (f *Flow) acquireLeases(ctx context.Context, p *Pass, job string, op infrav1.Operation) (*Wait, error) {
	e, err := f.leases().Enter(ctx, p.claim(job, op), f.Options.ClusterOperationGate)
	if err != nil {
		return nil, fmt.Errorf("failed to take the leases of Job %s: %w", job, err)
	}
	if e.Allowed {
		return nil, nil
	}
	return &Wait{Reason: e.Wait.Reason, Message: e.Wait.Message, metric: e.Wait.MetricReason()}, nil
}

// releaseLeases gives back the leases a finished (or deleted) Job holds.
func (f *Flow) releaseLeases(ctx context.Context, p *Pass, job string) error {
	if err := f.leases().Leave(ctx, p.claim(job, "")); err != nil {
		return fmt.Errorf("failed to give back the leases of Job %s: %w", job, err)
	}
	return nil
}

// deleteLeases deletes the object's run lease (and a cluster's write lease)
// at cleanup.
func (f *Flow) deleteLeases(ctx context.Context, p *Pass) error {
	l := f.leases()
	if err := l.DeleteRun(ctx, p.Obj.GetNamespace(), p.Suffix); err != nil {
		return fmt.Errorf("failed to delete the run lease: %w", err)
	}
	if p.Obj.Capabilities().TakesClusterLease && p.ClusterName != "" {
		if err := l.DeleteCluster(ctx, p.Obj.GetNamespace(), p.ClusterName); err != nil {
			return fmt.Errorf("failed to delete the cluster lease: %w", err)
		}
	}
	return nil
}
