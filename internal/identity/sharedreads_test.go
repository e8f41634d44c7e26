package identity

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gatedReader answers a Secret Get with the data the Secret held when the
// request was sent, after the test releases it.
type gatedReader struct {
	client.Reader
	mu      sync.Mutex
	value   string
	calls   int
	sent    chan struct{}
	release chan struct{}
}

func (g *gatedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	g.mu.Lock()
	g.calls++
	v := g.value
	g.mu.Unlock()
	g.sent <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	obj.(*corev1.Secret).Data = map[string][]byte{"key": []byte(v)}
	return nil
}

func (g *gatedReader) set(v string) {
	g.mu.Lock()
	g.value = v
	g.mu.Unlock()
}

// TestSharedReadsNeverAnswerOlderThanTheGet checks the rule the identity's
// source Secret is read by (book: Identities and Credentials, "Rotate
// credentials": an edit reaches the mirror the next time an object that
// uses the identity reconciles): a Get made while a read of the same Secret
// is in flight does not take that read's answer, which may predate an
// edit, but waits for the next read; every Get arriving meanwhile shares
// that next read.
func TestSharedReadsNeverAnswerOlderThanTheGet(t *testing.T) {
	g := &gatedReader{value: "old", sent: make(chan struct{}, 8), release: make(chan struct{})}
	s := NewSharedReads(g)
	key := client.ObjectKey{Namespace: "captf-system", Name: "creds"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	get := func() <-chan string {
		out := make(chan string, 1)
		go func() {
			sec := &corev1.Secret{}
			if err := s.Get(ctx, key, sec); err != nil {
				t.Errorf("Get: %v", err)
			}
			out <- string(sec.Data["key"])
		}()
		return out
	}
	first := get()
	<-g.sent // the first read is in flight, reading "old"
	g.set("rotated")
	later := []<-chan string{get(), get(), get()}
	// The later Gets have all joined the next read before the first ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		queued := s.next[key] != nil
		s.mu.Unlock()
		if queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	g.release <- struct{}{}
	if got := <-first; got != "old" {
		t.Errorf("the first Get read %q, want old", got)
	}
	select {
	case <-g.sent: // the next read, sent after the first finished
	case <-ctx.Done():
		t.Fatal("no second read was sent")
	}
	g.release <- struct{}{}
	for i, c := range later {
		if got := <-c; got != "rotated" {
			t.Errorf("Get %d, made after the edit, read %q: an answer older than the Get", i+1, got)
		}
	}
	if g.calls != 2 {
		t.Errorf("the API server was read %d times for four Gets, want 2 (the later three share one read)", g.calls)
	}
	// With nothing in flight, a Get reads at once.
	third := get()
	<-g.sent
	g.release <- struct{}{}
	if got := <-third; got != "rotated" || g.calls != 3 {
		t.Errorf("a lone Get read %q in %d calls, want rotated in 3", got, g.calls)
	}
}

// TestSharedReadsNilReadsLive checks that a nil SharedReads leaves every
// read to the live reader.
func TestSharedReadsNilReadsLive(t *testing.T) {
	var s *SharedReads
	g := &gatedReader{}
	if s.Reader(g) != client.Reader(g) {
		t.Fatal("a nil SharedReads does not read through the live reader")
	}
}
