package lease

import (
	"context"
	"sync/atomic"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// snapshot is a Hint frozen at one moment: the lease as it was then, or
// none, as a cache behind the API server would show it.
type snapshot struct {
	client.Reader
	lease *coordinationv1.Lease
}

func (s snapshot) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if s.lease == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, key.Name)
	}
	s.lease.DeepCopyInto(obj.(*coordinationv1.Lease))
	return nil
}

// countingReader counts the live reads.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestRunLeaseStaleHint checks that a run lease decided from a stale copy
// (the manager's cache) still has one holder (book: The Reconcile
// Lifecycle, "Run leases and the cluster operation gate": every write is a
// create or a resourceVersion-checked update, so of two acquirers exactly
// one wins), that a release never skips a hold the copy does not show yet,
// and that a current copy saves the live read of a first acquire and of a
// release.
func TestRunLeaseStaleHint(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	live := manager(t)
	a := claim(ns, infrav1.KindTerraformMachine, "prod-md-1", "captf-m-prod-md-1-apply-a1-aaaaaa", infrav1.OperationApply)
	b := rival(a, "captf-m-prod-md-1-apply-a2-bbbbbb")
	name := RunName(a.Suffix)
	hinted := func(lease *coordinationv1.Lease) (*Leases, *countingReader) {
		r := &countingReader{Reader: live.Reader}
		return &Leases{Client: live.Client, Reader: r, Hint: snapshot{lease: lease}}, r
	}

	t.Run("a copy that shows no lease: the first acquire creates it without a live read", func(t *testing.T) {
		l, r := hinted(nil)
		out, err := l.AcquireRun(ctx, a)
		if err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		if n := r.gets.Load(); n != 0 {
			t.Errorf("the acquire read the lease live %d times, want 0", n)
		}
	})
	t.Run("a copy that shows no lease while another Job holds it: the acquire waits", func(t *testing.T) {
		l, _ := hinted(nil)
		out, err := l.AcquireRun(ctx, b)
		if err != nil || out.Acquired || out.Holder.Name != a.Job {
			t.Fatalf("AcquireRun = %+v, %v; want a wait for %s", out, err, a.Job)
		}
	})
	t.Run("a copy that shows no lease: the release still gives the hold back", func(t *testing.T) {
		l, _ := hinted(nil)
		if err := l.ReleaseRun(ctx, ns, a.Suffix, a.Job); err != nil {
			t.Fatal(err)
		}
		if h := holderOf(getLease(t, ns, name)); h != "" {
			t.Errorf("holder after the release = %q, want none", h)
		}
	})
	t.Run("a copy that shows the lease free while another Job holds it: the acquire waits", func(t *testing.T) {
		free := getLease(t, ns, name)
		if out, err := live.AcquireRun(ctx, a); err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		l, _ := hinted(free)
		out, err := l.AcquireRun(ctx, b)
		if err != nil || out.Acquired || out.Holder.Name != a.Job {
			t.Fatalf("AcquireRun = %+v, %v; want a wait for %s", out, err, a.Job)
		}
		if h := holderOf(getLease(t, ns, name)); h != a.Job {
			t.Errorf("holder = %q, want %s", h, a.Job)
		}
		if err := live.ReleaseRun(ctx, ns, a.Suffix, a.Job); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a current copy of a free lease: the acquire takes it without a live read", func(t *testing.T) {
		l, r := hinted(getLease(t, ns, name))
		out, err := l.AcquireRun(ctx, b)
		if err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		if n := r.gets.Load(); n != 0 {
			t.Errorf("the acquire read the lease live %d times, want 0", n)
		}
	})
	bHold := getLease(t, ns, name)
	t.Run("a current copy of the hold: the release gives it back without a live read", func(t *testing.T) {
		l, r := hinted(bHold)
		if err := l.ReleaseRun(ctx, ns, b.Suffix, b.Job); err != nil {
			t.Fatal(err)
		}
		if h := holderOf(getLease(t, ns, name)); h != "" {
			t.Errorf("holder after the release = %q, want none", h)
		}
		if n := r.gets.Load(); n != 0 {
			t.Errorf("the release read the lease live %d times, want 0", n)
		}
	})
	t.Run("a stale copy of a hold: the release leaves the lease's new holder alone", func(t *testing.T) {
		if out, err := live.AcquireRun(ctx, a); err != nil || !out.Acquired {
			t.Fatalf("AcquireRun = %+v, %v", out, err)
		}
		l, _ := hinted(bHold) // the copy still shows b's hold
		if err := l.ReleaseRun(ctx, ns, b.Suffix, b.Job); err != nil {
			t.Fatal(err)
		}
		if h := holderOf(getLease(t, ns, name)); h != a.Job {
			t.Errorf("holder = %q, want %s (a release of b's hold from a stale copy gave a's back)", h, a.Job)
		}
	})
}
