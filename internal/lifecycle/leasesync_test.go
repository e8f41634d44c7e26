package lifecycle

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestVersionWaiter checks when a pass may read the cluster lease from the
// cache (lease.Leases.Synced): once the cache holds its own run lease write,
// whether it held it already or receives it while the pass waits, and never
// on another version.
func TestVersionWaiter(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "captf-run-x"}
	at := func(rv string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: rv}}
	}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(at("7")).Build()
	held := &coordinationv1.Lease{}
	if err := cached.Get(context.Background(), key, held); err != nil {
		t.Fatal(err)
	}
	w := &versionWaiter{cached: cached, waiting: map[types.NamespacedName][]versionWait{}}

	t.Run("the cache holds the write already", func(t *testing.T) {
		if !w.Synced(context.Background(), key, held.ResourceVersion) {
			t.Fatal("not synced")
		}
	})
	t.Run("the write arrives while the pass waits", func(t *testing.T) {
		done := make(chan bool)
		go func() { done <- w.Synced(context.Background(), key, "9") }()
		deadline := time.Now().Add(time.Second)
		for {
			w.mu.Lock()
			n := len(w.waiting[key])
			w.mu.Unlock()
			if n == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		w.observe(at("8"))
		select {
		case <-done:
			t.Fatal("let go on another version")
		case <-time.After(50 * time.Millisecond):
		}
		w.observe(at("9"))
		if !<-done {
			t.Fatal("not synced")
		}
		if len(w.waiting) != 0 {
			t.Errorf("waits left: %v", w.waiting)
		}
	})
	t.Run("the pass ends first", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if w.Synced(ctx, key, "10") {
			t.Fatal("synced on a version the cache never held")
		}
		if len(w.waiting) != 0 {
			t.Errorf("waits left: %v", w.waiting)
		}
	})
}
