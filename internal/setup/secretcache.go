package setup

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// The manager's Secret informer selects captf.io/managed=true, a label
// anyone who may create a Secret can set. What it keeps of a Secret is
// therefore decided by what the Secret is, not by its label: the data stays
// only in a Secret CAPTF reads the data of from the cache and whose name is
// bound to an object that exists when the Secret is cached:
//
//   - a state chunk: the backend's labels, a chunk name of its suffix, and a
//     live TerraformCluster, TerraformMachine or TerraformMachinePool of the
//     namespace whose suffix it is;
//   - a durable inputs Secret: captf-inputs-<kind>-<name> of a live object of
//     the namespace, which it names in an owner reference;
//   - a credential mirror: the mirror label and the name of an existing
//     identity's mirror.
//
// Every other Secret is cached as metadata only (state.DropData), per-run
// Secrets and state backups as before. So the memory the cache holds
// grows with the objects CAPTF serves, at most 32 state chunks, one durable
// Secret and a mirror per object, never with what a tenant labels. A reader
// that meets a dropped copy reads the Secret live (state.ErrNotCached).

// stateSuffixIndex indexes the three workload kinds by their state suffix.
const stateSuffixIndex = "captf.stateSuffix"

// liveLookupTimeout bounds a transform's wait for the workload and identity
// informers to sync; past it the Secret is cached without its data.
const liveLookupTimeout = 2 * time.Minute

// liveness answers whether what a Secret is bound to exists.
type liveness interface {
	suffixLive(namespace, suffix string) bool
	objectLive(kind infrav1.WorkloadKind, namespace, name string) bool
	identityLive(name string) bool
}

// keepsData decides whether the cache keeps s's data (see above). Per-run
// Secrets and backups are not decided here: their transforms drop what the
// cache must not hold.
func keepsData(s *corev1.Secret, live liveness) bool {
	switch {
	case s.Labels[state.BackendStateLabel] == "true":
		suffix := s.Labels[state.BackendSuffixLabel]
		return suffix != "" && state.IsChunkName(suffix, s.Name) && live.suffixLive(s.Namespace, suffix)
	case s.Labels[infrav1.MirroredLabel] == identity.TrueValue:
		id := s.Annotations[infrav1.IdentityAnnotation]
		return id != "" && s.Name == identity.MirrorName(id) && live.identityLive(id)
	}
	kind, name, ok := lifecycle.ParseDurableName(s.Name)
	if !ok || !slices.ContainsFunc(s.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == string(kind) && r.Name == name && r.APIVersion == infrav1.GroupVersion.String()
	}) {
		return false
	}
	return live.objectLive(kind, s.Namespace, name)
}

// secretGate is the Secret cache's transform; it answers liveness from the
// manager's cache, set once the cache exists (before it starts).
type secretGate struct {
	reader atomic.Pointer[client.Reader]
}

// transform drops managed fields, the data of per-run Secrets and backups
// (their own transforms) and the data of any Secret keepsData refuses.
func (g *secretGate) transform(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	s, ok := obj.(*corev1.Secret)
	if !ok || err != nil {
		return obj, err
	}
	if jobs.IsRunSecret(s) {
		return jobs.RunSecretForCache(s), nil
	}
	if s.Labels[infrav1.StateBackupLabel] == "true" {
		return state.StripBackupData(s), nil
	}
	if (s.Data == nil && s.StringData == nil) || keepsData(s, g) {
		return s, nil
	}
	return state.DropData(s), nil
}

// lookup runs fn against the manager's cache, false when there is none yet
// or it fails.
func (g *secretGate) lookup(fn func(ctx context.Context, r client.Reader) bool) bool {
	r := g.reader.Load()
	if r == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveLookupTimeout)
	defer cancel()
	return fn(ctx, *r)
}

func (g *secretGate) suffixLive(namespace, suffix string) bool {
	kind, ok := state.KindOfSuffix(suffix)
	if !ok {
		return false
	}
	return g.lookup(func(ctx context.Context, r client.Reader) bool {
		list := kind.NewList()
		err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{stateSuffixIndex: suffix})
		return err == nil && meta.LenList(list) > 0
	})
}

func (g *secretGate) objectLive(kind infrav1.WorkloadKind, namespace, name string) bool {
	return g.lookup(func(ctx context.Context, r client.Reader) bool {
		return r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, kind.NewObject()) == nil
	})
}

func (g *secretGate) identityLive(name string) bool {
	return g.lookup(func(ctx context.Context, r client.Reader) bool {
		return r.Get(ctx, client.ObjectKey{Name: name}, &infrav1.TerraformClusterIdentity{}) == nil
	})
}

// indexStateSuffixes registers stateSuffixIndex on c.
func indexStateSuffixes(ctx context.Context, c cache.Cache) error {
	for _, kind := range infrav1.WorkloadKinds() {
		kind := kind
		err := c.IndexField(ctx, kind.NewObject(), stateSuffixIndex, func(o client.Object) []string {
			s, err := state.Suffix(o.GetNamespace(), kind, o.GetName())
			if err != nil {
				return nil
			}
			return []string{s}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// newCache is the manager's NewCache: the label-indexed cache with
// stateSuffixIndex, which the transform then reads.
func (g *secretGate) newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := newLabelIndexedCache(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := indexStateSuffixes(context.Background(), c); err != nil {
		return nil, fmt.Errorf("failed to index the workloads by state suffix: %w", err)
	}
	var r client.Reader = c
	g.reader.Store(&r)
	return c, nil
}
