package lifecycle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written remembers, per object, the resourceVersion a pass started from
// when that pass changed the object. The cache may hand the next pass that
// same, older version (its own update not seen yet, while the Job it marked
// bookkept already is): that pass would decide on stale status, for example
// plan again for a plan it just recorded. It waits for the update instead.
type written struct{ m sync.Map }

// stale says obj is the version a pass of this manager started from and
// then changed; a newer version forgets the mark.
func (w *written) stale(obj client.Object) bool {
	if w == nil {
		return false
	}
	v, ok := w.m.Load(obj.GetUID())
	if !ok {
		return false
	}
	if v.(string) == obj.GetResourceVersion() {
		return true
	}
	w.m.Delete(obj.GetUID())
	return false
}

// wrote records that a pass which started from version from changed obj.
func (w *written) wrote(obj client.Object, from string) {
	if w == nil || from == "" || obj.GetResourceVersion() == from {
		return
	}
	w.m.Store(obj.GetUID(), from)
}

// forget drops an object that is gone.
func (w *written) forget(uid types.UID) {
	if w != nil {
		w.m.Delete(uid)
	}
}
