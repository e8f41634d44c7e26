package lifecycle

import (
	"context"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written remembers, per object, the versions of this manager's last change
// to it: the resourceVersion the writing pass started from and the one its
// status patch produced. The cache may hand the next pass an older version
// (its own update not seen yet, while the Job it marked bookkept already
// is): that pass would decide on stale status, for example plan again for a
// plan it just recorded, or refresh a machine whose health it just read.
// It waits for the update instead.
type written struct{ m sync.Map }

type writtenVersions struct {
	// from is the version the writing pass started from; produced are the
	// versions its patches produced, in order (the last is the version
	// the pass left the object at).
	from     string
	produced []string
	// waiting: a pass found the cache behind this write and waits for
	// the update to wake it.
	waiting bool
}

// before says rv is a version the writing pass went through before its
// last patch: the one it started from, or one between its patches (the
// patch helper writes metadata and status in two requests).
func (wv writtenVersions) before(rv string) bool {
	return rv == wv.from || slices.Contains(wv.produced[:len(wv.produced)-1], rv)
}

// stale says obj is older than this manager's last change to it: its
// version is one the writing pass went through before its last patch.
// resourceVersions are opaque (Kubernetes API conventions), so they are
// compared for equality only: the cache holds an object's versions in the
// order they were written, and a version this manager's patches did not
// produce is the written one or a newer one. Seeing any such version
// forgets the mark.
func (w *written) stale(obj client.Object) bool {
	wv, ok := w.load(obj)
	if !ok {
		return false
	}
	older := wv.before(obj.GetResourceVersion())
	if !older {
		w.m.Delete(obj.GetUID())
	} else if !wv.waiting {
		wv.waiting = true
		w.m.Store(obj.GetUID(), wv)
	}
	return older
}

// ownUpdate says an update of obj to its version is this manager's own
// write, which no pass waits for: a version one of the writing pass's
// patches produced. The pass that wrote it acted on everything it wrote,
// so a pass woken by it would find nothing to do; at a few thousand
// objects these passes queue behind the ones with work. The mark stays for
// stale, which forgets it once a pass reads the written version.
func (w *written) ownUpdate(obj client.Object) bool {
	wv, ok := w.load(obj)
	if !ok {
		return false
	}
	return !wv.waiting && slices.Contains(wv.produced, obj.GetResourceVersion())
}

// load is the mark of obj, if any.
func (w *written) load(obj client.Object) (writtenVersions, bool) {
	if w == nil {
		return writtenVersions{}, false
	}
	v, ok := w.m.Load(obj.GetUID())
	if !ok {
		return writtenVersions{}, false
	}
	return v.(writtenVersions), true
}

// wrote records that a pass which started from version from changed the
// object to version to ("" when it wrote nothing). A pass calls it for
// each of its patches, in order, so the versions between them are known.
func (w *written) wrote(uid types.UID, from, to string) {
	if w == nil || from == "" || to == "" || to == from {
		return
	}
	if v, ok := w.m.Load(uid); ok {
		if wv := v.(writtenVersions); wv.from == from {
			if wv.produced[len(wv.produced)-1] != to {
				wv.produced = append(slices.Clip(wv.produced), to)
				w.m.Store(uid, wv)
			}
			return
		}
	}
	w.m.Store(uid, writtenVersions{from: from, produced: []string{to}})
}

// forget drops an object that is gone.
func (w *written) forget(uid types.UID) {
	if w != nil {
		w.m.Delete(uid)
	}
}

// versionRecorder is the client the pass's patch helper writes through: the
// helper patches copies of the object, so the version its requests
// produced is learnt here. It also answers the helper's read of the object
// before its conditions patch, an optimistic-lock patch on the latest
// version. After a write earlier in the pass (the finalizer's patch), the
// cache still hands back the version before it, so that patch would fail
// with a conflict and retry after a pause until the cache caught up. The
// first read after a patch gets the object as that patch left it (the API
// server's answer); a read after that, or after a conflict (someone else
// wrote in between, or the pass started from a version the cache had not
// updated yet), goes to the API server.
type versionRecorder struct {
	client.Client
	// Live reads the object after a conflict; nil reads the cache.
	Live client.Reader
	// version is the resourceVersion of the latest successful patch.
	version string
	// last is the object as the latest successful patch left it, until
	// one read takes it.
	last client.Object
	// live says the next read goes to the API server.
	live bool
	// wrote, when set, learns each version a patch produced as soon as
	// the patch returns.
	wrote func(version string)
}

// record keeps the version a successful patch of obj produced and the
// object as it left it; after a conflict the next read is live.
func (c *versionRecorder) record(obj client.Object, err error) error {
	switch {
	case err == nil:
		c.version = obj.GetResourceVersion()
		if c.wrote != nil {
			c.wrote(c.version)
		}
		if cp, ok := obj.DeepCopyObject().(client.Object); ok {
			c.last, c.live = cp, false
		}
	case apierrors.IsConflict(err):
		c.last, c.live = nil, true
	}
	return err
}

// Get reads the object as the pass's last patch left it, once; after that
// or after a conflict, live; else through the cache.
func (c *versionRecorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if last := c.last; last != nil && client.ObjectKeyFromObject(last) == key && reflect.TypeOf(last) == reflect.TypeOf(obj) {
		c.last, c.live = nil, true
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(last).Elem())
		return nil
	}
	if c.live && c.Live != nil {
		return c.Live.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *versionRecorder) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.record(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *versionRecorder) Status() client.SubResourceWriter {
	return &statusVersionRecorder{SubResourceWriter: c.Client.Status(), c: c}
}

type statusVersionRecorder struct {
	client.SubResourceWriter
	c *versionRecorder
}

func (s *statusVersionRecorder) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.record(obj, s.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}
