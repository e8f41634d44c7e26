package watches

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Members adds to b the watches a member kind of a cluster
// (TerraformMachine, TerraformMachinePool) shares: its Cluster and the
// cluster's TerraformCluster, each only for a change the member's pass
// reads, its variablesFrom sources and the TerraformClusterIdentity it
// resolves to.
func Members(b *builder.Builder, c client.Reader, kind infrav1.WorkloadKind, src Sources) *builder.Builder {
	b = b.
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(ByClusterName(c, kind)),
			builder.WithPredicates(ClusterChangesForMembers())).
		Watches(&infrav1.TerraformCluster{}, handler.EnqueueRequestsFromMapFunc(ByClusterName(c, kind)),
			builder.WithPredicates(TerraformClusterChangesForMembers()))
	b = VariablesFrom(b, c, kind.NewList(), src)
	return IdentityOfMembers(b, c, kind.NewList(), src)
}

// ByClusterName maps an object carrying the cluster-name label (or a
// Cluster) to every object of the kind in its namespace with that label.
func ByClusterName(c client.Reader, kind infrav1.WorkloadKind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[clusterv1.ClusterNameLabel]
		if cl, ok := o.(*clusterv1.Cluster); ok {
			name = cl.Name
		}
		if name == "" {
			return nil
		}
		l := kind.NewList()
		if err := c.List(ctx, l, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(l, func(item runtime.Object) error {
			if o, ok := item.(client.Object); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
			return nil
		})
		return out
	}
}
