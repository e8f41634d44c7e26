package identity

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedReads is a live reader of Secrets that lets concurrent passes
// share one request per Secret without ever answering with a copy older
// than the request: a Get joins a read of the same Secret only when that
// read has not been sent yet; while one is in flight (sent before the Get
// came, so possibly before a rotation the caller must see), the Get waits
// for it to finish and then sends the next one, which every Get arriving
// meanwhile joins. So each answer was read from the API server after the
// Get was called, exactly as a Get of its own would be, and a Secret that
// every pass reads live (the identity's source Secret where no SourceWatch
// serves it; book: Identities and Credentials, "Rotate credentials") costs
// at most two reads in flight per Secret however many passes want it at
// once.
//
// Other kinds, and lists, go straight to Live. A nil *SharedReads reads
// every Secret with its own request.
type SharedReads struct {
	// Live is the API server reader.
	Live client.Reader

	mu sync.Mutex
	// sent is the read in flight per Secret; next is the read that waits
	// for it and that later Gets join.
	sent, next map[client.ObjectKey]*sharedRead
}

// sharedReadTimeout bounds one shared read.
const sharedReadTimeout = 30 * time.Second

type sharedRead struct {
	done   chan struct{}
	secret *corev1.Secret
	err    error
}

// NewSharedReads returns a SharedReads reading through live.
func NewSharedReads(live client.Reader) *SharedReads { return &SharedReads{Live: live} }

// Reader returns s, or live when s is nil.
func (s *SharedReads) Reader(live client.Reader) client.Reader {
	if s == nil {
		return live
	}
	return s
}

// Get reads obj; a Secret is read through a shared request as described on
// SharedReads.
func (s *SharedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok || len(opts) > 0 {
		return s.Live.Get(ctx, key, obj, opts...)
	}
	r := s.join(ctx, key)
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	r.secret.DeepCopyInto(secret)
	return nil
}

// List lists live.
func (s *SharedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.Live.List(ctx, list, opts...)
}

// join returns the read whose answer the caller takes: the one not sent yet
// if there is one, else a new one, sent at once when none is in flight or
// after the one in flight finished.
func (s *SharedReads) join(ctx context.Context, key client.ObjectKey) *sharedRead {
	s.mu.Lock()
	if s.sent == nil {
		s.sent, s.next = map[client.ObjectKey]*sharedRead{}, map[client.ObjectKey]*sharedRead{}
	}
	if r := s.next[key]; r != nil {
		s.mu.Unlock()
		return r
	}
	r := &sharedRead{done: make(chan struct{})}
	inFlight := s.sent[key]
	if inFlight == nil {
		s.sent[key] = r
	} else {
		s.next[key] = r
	}
	s.mu.Unlock()
	go s.send(ctx, key, r, inFlight)
	return r
}

// send waits for the read in flight before r (if any), then reads for r.
// The read outlives the context of the Get that started it, since others
// may have joined it, and is bounded by sharedReadTimeout instead, so a
// read that hangs never holds up later reads of the Secret for long.
func (s *SharedReads) send(ctx context.Context, key client.ObjectKey, r, inFlight *sharedRead) {
	if inFlight != nil {
		<-inFlight.done
		s.mu.Lock()
		delete(s.next, key)
		s.sent[key] = r
		s.mu.Unlock()
	}
	secret := &corev1.Secret{}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
	err := s.Live.Get(rctx, key, secret)
	cancel()
	r.secret, r.err = secret, err
	s.mu.Lock()
	if s.sent[key] == r {
		delete(s.sent, key)
	}
	s.mu.Unlock()
	close(r.done)
}
