package identity

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SourceWatch serves the identities' source Secrets from a watch of each
// one, by name: a pass reads the credentials it mirrors without a request
// of its own, and an edit of the Secret is seen as soon as the API server
// sends it, whatever object reconciles next. The manager's cache cannot
// hold these Secrets (it selects only what CAPTF labels as its own, and a
// user's credentials Secret carries no CAPTF label), so each source gets a
// watch of its own, started the first time it is read, with a field
// selector on its name: the manager never lists or holds any other Secret
// of the namespace.
//
// Until a source's watch has synced (the first read waits up to
// SourceSyncTimeout for it), and whenever it cannot sync (RBAC without
// list and watch on Secrets), reads go to Live. Changed is called with the
// Secret's key on every change the watch sees, so whoever mirrors it can
// act at once. Other kinds, and lists, go straight to Live.
type SourceWatch struct {
	// Live reads what no watch serves.
	Live client.Reader
	// Changed, when set, is told of each change of a watched source.
	Changed func(key client.ObjectKey)

	ctx     context.Context
	clients corev1client.SecretsGetter

	mu      sync.Mutex
	sources map[client.ObjectKey]*sourceInformer
}

// SourceSyncTimeout bounds how long the first read of a source waits for
// its watch to sync before it reads live.
const SourceSyncTimeout = 5 * time.Second

type sourceInformer struct {
	informer toolscache.SharedIndexInformer
}

// NewSourceWatch returns a SourceWatch whose watches run until ctx ends.
func NewSourceWatch(ctx context.Context, clients corev1client.SecretsGetter, live client.Reader) *SourceWatch {
	return &SourceWatch{Live: live, ctx: ctx, clients: clients}
}

// Get reads obj; a Secret from its watch as described on SourceWatch.
func (s *SourceWatch) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	secret, ok := obj.(*corev1.Secret)
	if !ok || len(opts) > 0 || s.clients == nil {
		return s.Live.Get(ctx, key, obj, opts...)
	}
	inf, started := s.informer(key)
	if !inf.HasSynced() {
		if !started {
			return s.Live.Get(ctx, key, obj)
		}
		wait, cancel := context.WithTimeout(ctx, SourceSyncTimeout)
		synced := toolscache.WaitForCacheSync(wait.Done(), inf.HasSynced)
		cancel()
		if !synced {
			return s.Live.Get(ctx, key, obj)
		}
	}
	item, exists, err := inf.GetStore().GetByKey(key.Namespace + "/" + key.Name)
	if err != nil {
		return s.Live.Get(ctx, key, obj)
	}
	if !exists {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	got, ok := item.(*corev1.Secret)
	if !ok {
		return s.Live.Get(ctx, key, obj)
	}
	got.DeepCopyInto(secret)
	return nil
}

// List lists live.
func (s *SourceWatch) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.Live.List(ctx, list, opts...)
}

// Reader returns s, or live when s is nil.
func (s *SourceWatch) Reader(live client.Reader) client.Reader {
	if s == nil {
		return live
	}
	return s
}

// informer returns the watch of key, starting it when there is none
// (started says this call started it).
func (s *SourceWatch) informer(key client.ObjectKey) (toolscache.SharedIndexInformer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if si := s.sources[key]; si != nil {
		return si.informer, false
	}
	if s.sources == nil {
		s.sources = map[client.ObjectKey]*sourceInformer{}
	}
	byName := fields.OneTermEqualSelector("metadata.name", key.Name).String()
	secrets := s.clients.Secrets(key.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return secrets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return secrets.Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, toolscache.Indexers{})
	if s.Changed != nil {
		changed := func(any) { s.Changed(key) }
		_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    changed,
			UpdateFunc: func(_, o any) { changed(o) },
			DeleteFunc: changed,
		})
	}
	s.sources[key] = &sourceInformer{informer: inf}
	go inf.RunWithContext(s.ctx)
	return inf, true
}
