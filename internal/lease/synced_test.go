package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// leaseReads counts the live reads of Leases (Jobs and pods pass).
type leaseReads struct {
	client.Reader
	n atomic.Int32
}

func (r *leaseReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*coordinationv1.Lease); ok {
		r.n.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// leaseCache starts a cache of the Leases, as the manager's, and returns
// it with a Synced that polls it for a version.
func leaseCache(t *testing.T) (cache.Cache, func(context.Context, types.NamespacedName, string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(restConfig, cache.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, &coordinationv1.Lease{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the Lease cache did not sync")
	}
	synced := func(ctx context.Context, key types.NamespacedName, rv string) bool {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			l := &coordinationv1.Lease{}
			if err := c.Get(ctx, key, l); err == nil && l.ResourceVersion == rv {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}
	return c, synced
}

// TestMemberReadsTheClusterLeaseFromASyncedCache checks the member side of
// the cluster operation gate when it reads the cluster lease from the
// manager's cache (Leases.Synced): once the cache holds the member's own
// run lease write it holds every Lease written before it, so a cluster
// lease taken first still stops the machine, and the check costs no live
// read of a Lease.
func TestMemberReadsTheClusterLeaseFromASyncedCache(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	hint, synced := leaseCache(t)
	lc := manager(t)
	reads := &leaseReads{Reader: lc.Reader}
	lm := &Leases{Client: manager(t).Client, Reader: reads, Hint: hint, Synced: synced}
	tc := claim(ns, infrav1.KindTerraformCluster, "prod", "captf-c-prod-apply-a1-cccccc", infrav1.OperationApply)
	tm := claim(ns, infrav1.KindTerraformMachine, "prod-cp-1", "captf-m-prod-cp-1-apply-a1-111111", infrav1.OperationApply)

	if e, err := lc.Enter(ctx, tc, true); err != nil || !e.Allowed {
		t.Fatalf("the cluster's entry = %+v, %v", e, err)
	}
	createJob(t, ns, tc.Job, 0)
	e, err := lm.Enter(ctx, tm, true)
	if err != nil {
		t.Fatal(err)
	}
	if e.Allowed || e.Wait == nil || e.Wait.Reason != infrav1.WaitingForClusterOperationReason {
		t.Fatalf("the machine's entry while the cluster applies = %+v", e)
	}
	if err := lc.Leave(ctx, tc); err != nil {
		t.Fatal(err)
	}
	reads.n.Store(0)
	tm.Job = "captf-m-prod-cp-1-apply-a2-222222"
	if e, err := lm.Enter(ctx, tm, true); err != nil || !e.Allowed {
		t.Fatalf("the machine's entry once the cluster is done = %+v, %v", e, err)
	}
	if n := reads.n.Load(); n != 0 {
		t.Errorf("the machine read Leases live %d times, want 0", n)
	}
}

// TestMemberReadsLiveWhenTheCacheIsBehind: a cache that has not caught up
// with the member's own run lease write may miss a cluster lease taken
// before it, so the member reads the cluster lease live and waits.
func TestMemberReadsLiveWhenTheCacheIsBehind(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lc := manager(t)
	behind := snapshot{} // shows no Lease at all, and never catches up
	neverSynced := func(ctx context.Context, key types.NamespacedName, rv string) bool {
		l := &coordinationv1.Lease{}
		return behind.Get(ctx, key, l) == nil && l.ResourceVersion == rv
	}
	lm := &Leases{Client: manager(t).Client, Reader: manager(t).Reader, Hint: behind, Synced: neverSynced}
	tc := claim(ns, infrav1.KindTerraformCluster, "prod", "captf-c-prod-apply-a1-cccccc", infrav1.OperationApply)
	tm := claim(ns, infrav1.KindTerraformMachine, "prod-cp-1", "captf-m-prod-cp-1-apply-a1-111111", infrav1.OperationApply)
	if e, err := lc.Enter(ctx, tc, true); err != nil || !e.Allowed {
		t.Fatalf("the cluster's entry = %+v, %v", e, err)
	}
	createJob(t, ns, tc.Job, 0)
	e, err := lm.Enter(ctx, tm, true)
	if err != nil {
		t.Fatal(err)
	}
	if e.Allowed {
		t.Fatal("the machine started while the cluster applies")
	}
}

// TestClusterOperationGateRaceWithACachedMember is the gate race with the
// member reading the cluster lease from its synced cache: a cluster and a
// machine operation never both start.
func TestClusterOperationGateRaceWithACachedMember(t *testing.T) {
	ns := namespace(t)
	hint, synced := leaseCache(t)
	gateRace(t, ns, manager(t), &Leases{Client: manager(t).Client, Reader: manager(t).Reader, Hint: hint, Synced: synced})
}
