package terraformcluster

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Setup registers the TerraformCluster controller: the shared flow, woken
// by the object, its Jobs and state, and by Watches.
func Setup(ctx context.Context, mgr ctrl.Manager, flow lifecycle.Flow, opts lifecycle.ControllerOptions, src watches.Sources) error {
	f := &flow
	a := &Adapter{Client: mgr.GetClient()}
	f.Adapter = a
	opts.Extra = Watches(ctx, mgr, src)
	return f.Setup(ctx, mgr, opts)
}

// Watches are the TerraformCluster's own watches: its Cluster, the
// deletion of the cluster's machines and pools, its variablesFrom sources
// and its TerraformClusterIdentity.
func Watches(ctx context.Context, mgr ctrl.Manager, src watches.Sources) func(b *builder.Builder) *builder.Builder {
	gvk := infrav1.GroupVersion.WithKind(string(infrav1.KindTerraformCluster))
	c := mgr.GetClient()
	return func(b *builder.Builder) *builder.Builder {
		b = b.
			Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(
				util.ClusterToInfrastructureMapFunc(ctx, gvk, c, &infrav1.TerraformCluster{}))).
			Watches(&infrav1.TerraformMachine{}, handler.EnqueueRequestsFromMapFunc(
				watches.ByClusterName(c, infrav1.KindTerraformCluster))).
			Watches(&infrav1.TerraformMachinePool{}, handler.EnqueueRequestsFromMapFunc(
				watches.ByClusterName(c, infrav1.KindTerraformCluster)))
		b = watches.VariablesFrom(b, c, &infrav1.TerraformClusterList{}, src)
		return watches.IdentityOfClusters(b, c, src)
	}
}
