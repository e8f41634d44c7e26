package watches

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Sources are what the watches of this package read besides the manager's
// cache.
type Sources struct {
	// Variables is the cache of the ConfigMaps and Secrets labeled
	// captf.io/variables=true (metadata only). Nil: variablesFrom sources
	// wake nothing.
	Variables cache.Cache
	// WatchFilter is --watch-filter: an object without the
	// cluster.x-k8s.io/watch-filter label of this value is never woken.
	WatchFilter string
}

// VariablesFrom adds to b the watches that wake the objects of list's kind
// (a TerraformClusterList, TerraformMachineList or
// TerraformMachinePoolList) when a labeled ConfigMap or Secret their
// spec.variablesFrom names is created, changed, deleted, labeled or
// unlabeled. c reads the objects (the manager's cache, where AddIndexes
// put the indexes).
func VariablesFrom(b *builder.Builder, c client.Reader, list client.ObjectList, src Sources) *builder.Builder {
	if src.Variables == nil {
		return b
	}
	return b.
		WatchesRawSource(source.Kind(src.Variables, &corev1.ConfigMap{},
			handler.TypedEnqueueRequestsFromMapFunc(typed[*corev1.ConfigMap](SourceToUsers(c, list, ConfigMapSourceIndex, src.WatchFilter))),
			changed[*corev1.ConfigMap]())).
		WatchesRawSource(source.Kind(src.Variables, &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(typed[*corev1.Secret](SourceToUsers(c, list, SecretSourceIndex, src.WatchFilter))),
			changed[*corev1.Secret]()))
}

// IdentityOfClusters adds to b the watch that wakes the TerraformClusters
// whose spec.identityRef names a TerraformClusterIdentity that changed.
func IdentityOfClusters(b *builder.Builder, c client.Reader, src Sources) *builder.Builder {
	return b.Watches(&infrav1.TerraformClusterIdentity{},
		handler.EnqueueRequestsFromMapFunc(IdentityToClusters(c, src.WatchFilter)),
		builder.WithPredicates(IdentityChanged()))
}

// IdentityOfMembers adds to b the watch that wakes the TerraformMachines or
// TerraformMachinePools (list's kind) that resolve to a
// TerraformClusterIdentity that changed.
func IdentityOfMembers(b *builder.Builder, c client.Reader, list client.ObjectList, src Sources) *builder.Builder {
	return b.Watches(&infrav1.TerraformClusterIdentity{},
		handler.EnqueueRequestsFromMapFunc(IdentityToMembers(c, list, src.WatchFilter)),
		builder.WithPredicates(IdentityChanged()))
}

// SourceToUsers maps a ConfigMap (field ConfigMapSourceIndex) or Secret
// (field SecretSourceIndex) to the objects of list's kind in its namespace
// that name it in spec.variablesFrom.
func SourceToUsers(c client.Reader, list client.ObjectList, field, watchFilter string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return lookup(ctx, c, list, watchFilter, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()})
	}
}

// IdentityToClusters maps a TerraformClusterIdentity to the
// TerraformClusters whose spec.identityRef names it, in every namespace.
func IdentityToClusters(c client.Reader, watchFilter string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return lookup(ctx, c, &infrav1.TerraformClusterList{}, watchFilter, client.MatchingFields{IdentityIndex: o.GetName()})
	}
}

// IdentityToMembers maps a TerraformClusterIdentity to the objects of
// list's kind (machines or pools) that resolve to it: those whose own
// identityRef names it, and those without one whose TerraformCluster
// passes it down. The second set is found the way a machine or pool finds
// its cluster, backwards: the TerraformClusters passing the identity, the
// Clusters whose spec.infrastructureRef names each, and the members whose
// cluster-name label names such a Cluster.
func IdentityToMembers(c client.Reader, list client.ObjectList, watchFilter string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		out := lookup(ctx, c, list, watchFilter, client.MatchingFields{IdentityIndex: o.GetName()})
		tcs := &infrav1.TerraformClusterList{}
		if err := c.List(ctx, tcs, client.MatchingFields{PassedIdentityIndex: o.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to find the TerraformClusters passing down an identity", "TerraformClusterIdentity", o.GetName())
			return out
		}
		for i := range tcs.Items {
			tc := &tcs.Items[i]
			cls := &clusterv1.ClusterList{}
			if err := c.List(ctx, cls, client.InNamespace(tc.Namespace), client.MatchingFields{TerraformClusterIndex: tc.Name}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Failed to find the Clusters of a TerraformCluster", "TerraformCluster", client.ObjectKeyFromObject(tc).String())
				continue
			}
			for j := range cls.Items {
				out = append(out, lookup(ctx, c, list, watchFilter,
					client.InNamespace(tc.Namespace), client.MatchingFields{InheritsIdentityIndex: cls.Items[j].Name})...)
			}
		}
		slices.SortFunc(out, func(a, b reconcile.Request) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		return slices.Compact(out)
	}
}

// lookup lists the objects of list's kind matching opts and requests a
// reconcile of each that --watch-filter admits.
func lookup(ctx context.Context, c client.Reader, list client.ObjectList, watchFilter string, opts ...client.ListOption) []reconcile.Request {
	l := list.DeepCopyObject().(client.ObjectList)
	if err := c.List(ctx, l, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to look up the objects to wake", "list", l.GetObjectKind().GroupVersionKind().Kind)
		return nil
	}
	var out []reconcile.Request
	_ = meta.EachListItem(l, func(item runtime.Object) error {
		o, ok := item.(client.Object)
		if !ok {
			return nil
		}
		if watchFilter != "" && o.GetLabels()[clusterv1.WatchLabel] != watchFilter {
			return nil
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		return nil
	})
	return out
}

// IdentityChanged passes an identity's creation and deletion, a change of
// its spec (generation: secretRef, allowedNamespaces), and a change of its
// Ready condition's status or reason (its Secret found or gone). A status
// update of status.namespaces alone, or a resync, wakes nothing.
func IdentityChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				return true
			}
			return readyOf(e.ObjectOld) != readyOf(e.ObjectNew)
		},
	}
}

// readyOf is the status and reason of an identity's Ready condition.
func readyOf(o client.Object) [2]string {
	id, ok := o.(*infrav1.TerraformClusterIdentity)
	if !ok {
		return [2]string{}
	}
	c := meta.FindStatusCondition(id.Status.Conditions, infrav1.ReadyCondition)
	if c == nil {
		return [2]string{}
	}
	return [2]string{string(c.Status), c.Reason}
}

// changed passes every creation and deletion and every update that moved
// the object's resourceVersion: a resync of the cache wakes nothing.
func changed[T client.Object]() predicate.TypedPredicate[T] {
	return predicate.TypedFuncs[T]{
		UpdateFunc: func(e event.TypedUpdateEvent[T]) bool {
			return e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
		},
	}
}

// typed adapts a MapFunc to a typed source.
func typed[T client.Object](fn handler.MapFunc) handler.TypedMapFunc[T, reconcile.Request] {
	return func(ctx context.Context, o T) []reconcile.Request { return fn(ctx, o) }
}
