package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaseSyncTimeout bounds how long a pass waits for the manager's cache to
// hold its own run lease write before it reads the cluster lease live.
const leaseSyncTimeout = 2 * time.Second

// versionWaiter tells a pass when the manager's cache holds a Lease at the
// version the pass's own write left it (lease.Leases.Synced): the cache's
// Lease informer reports every version it receives, and a pass waiting for
// one is let go as soon as it arrives.
type versionWaiter struct {
	cached client.Reader

	mu      sync.Mutex
	waiting map[types.NamespacedName][]versionWait
}

type versionWait struct {
	version string
	done    chan struct{}
}

// newVersionWaiter watches the Leases of c.
func newVersionWaiter(ctx context.Context, c cache.Cache) (*versionWaiter, error) {
	w := &versionWaiter{cached: c, waiting: map[types.NamespacedName][]versionWait{}}
	inf, err := c.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return nil, fmt.Errorf("failed to watch the Leases: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, o any) { w.observe(o) },
	}); err != nil {
		return nil, fmt.Errorf("failed to watch the Leases: %w", err)
	}
	return w, nil
}

// observe lets go the passes waiting for the version o is at.
func (w *versionWaiter) observe(o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.waiting[key]
	kept := ws[:0]
	for _, x := range ws {
		if x.version == obj.GetResourceVersion() {
			close(x.done)
			continue
		}
		kept = append(kept, x)
	}
	if len(kept) == 0 {
		delete(w.waiting, key)
	} else {
		w.waiting[key] = kept
	}
}

// Synced waits up to leaseSyncTimeout for the cache to hold the Lease at
// key at version; false when it does not in time (or the pass ends).
func (w *versionWaiter) Synced(ctx context.Context, key types.NamespacedName, version string) bool {
	x := versionWait{version: version, done: make(chan struct{})}
	w.mu.Lock()
	w.waiting[key] = append(w.waiting[key], x)
	w.mu.Unlock()
	defer w.forget(key, x)
	// Registered first, so a version that arrives meanwhile is not missed.
	cur := &coordinationv1.Lease{}
	if err := w.cached.Get(ctx, key, cur); err == nil && cur.ResourceVersion == version {
		return true
	}
	t := time.NewTimer(leaseSyncTimeout)
	defer t.Stop()
	select {
	case <-x.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// forget drops a wait that ended.
func (w *versionWaiter) forget(key types.NamespacedName, x versionWait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.waiting[key]
	for i := range ws {
		if ws[i].done == x.done {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(w.waiting, key)
	} else {
		w.waiting[key] = ws
	}
}
