package identity

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// liveSecretReads counts the Secret reads that reach the API server.
type liveSecretReads struct {
	client.Reader
	n atomic.Int32
}

func (r *liveSecretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		r.n.Add(1)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestSourceWatchServesTheSourceFromItsWatch checks how passes read an
// identity's source Secret (book: Identities and Credentials, "Rotate
// credentials"): from a watch of that one Secret, so a pass costs the API
// server no read, and an edit or a deletion is seen, and reported, without
// any read of the pass's own. Another Secret of the namespace is never
// served.
func TestSourceWatchServesTheSourceFromItsWatch(t *testing.T) {
	ns := namespace(t, nil)
	src := sourceSecret(t, ns, "cloud-credentials", map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("v1")})
	sourceSecret(t, ns, "other", map[string][]byte{"k": []byte("other")})
	clients, err := corev1client.NewForConfig(testCfg)
	must(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	live := &liveSecretReads{Reader: k8s}
	w := NewSourceWatch(wctx, clients, live)
	var mu sync.Mutex
	changed := map[client.ObjectKey]int{}
	w.Changed = func(key client.ObjectKey) {
		mu.Lock()
		changed[key]++
		mu.Unlock()
	}
	key := client.ObjectKeyFromObject(src)
	read := func() (*corev1.Secret, error) {
		s := &corev1.Secret{}
		return s, w.Get(ctx, key, s)
	}

	for range 20 {
		s, err := read()
		must(t, err)
		if string(s.Data["AWS_ACCESS_KEY_ID"]) != "v1" {
			t.Fatalf("data = %q", s.Data)
		}
	}
	if n := live.n.Load(); n != 0 {
		t.Errorf("20 reads of the source went to the API server %d times, want 0", n)
	}

	src.Data["AWS_ACCESS_KEY_ID"] = []byte("v2")
	must(t, k8s.Update(ctx, src))
	waitFor(t, "the edit", func() bool {
		s, err := read()
		return err == nil && string(s.Data["AWS_ACCESS_KEY_ID"]) == "v2"
	})
	waitFor(t, "the edit reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changed[key] >= 2 // the first list, then the edit
	})

	must(t, k8s.Delete(ctx, src))
	waitFor(t, "the deletion", func() bool {
		_, err := read()
		return apierrors.IsNotFound(err)
	})
	if n := live.n.Load(); n != 0 {
		t.Errorf("the source was read from the API server %d times, want 0", n)
	}
	mu.Lock()
	if changed[client.ObjectKey{Namespace: ns, Name: "other"}] != 0 {
		t.Error("a change of another Secret of the namespace was reported")
	}
	mu.Unlock()

	// A Secret of another name is a watch of its own, by name.
	other := &corev1.Secret{}
	must(t, w.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, other))
	if string(other.Data["k"]) != "other" {
		t.Errorf("other = %q", other.Data)
	}
}

// TestSourceWatchReadsLiveWithoutAWatch checks the fallback: a manager
// that may get but not list and watch Secrets still reads the source,
// from the API server.
func TestSourceWatchReadsLiveWithoutAWatch(t *testing.T) {
	ns := namespace(t, nil)
	src := sourceSecret(t, ns, "cloud-credentials", map[string][]byte{"k": []byte("v")})
	cfg := rest.CopyConfig(testCfg)
	cfg.Host = "https://127.0.0.1:1" // nothing listens: the watch never syncs
	cfg.Timeout = time.Second
	clients, err := corev1client.NewForConfig(cfg)
	must(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	live := &liveSecretReads{Reader: k8s}
	w := NewSourceWatch(wctx, clients, live)
	for i := range 3 {
		s := &corev1.Secret{}
		must(t, w.Get(ctx, client.ObjectKeyFromObject(src), s))
		if string(s.Data["k"]) != "v" {
			t.Fatalf("read %d: data = %q", i, s.Data)
		}
	}
	if n := live.n.Load(); n != 3 {
		t.Errorf("%d live reads, want 3", n)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
