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
)

// Setup registers the TerraformCluster controller: the shared flow, woken
// by the object, its Jobs and state, its Cluster, and the deletion of the
// cluster's machines and pools.
func Setup(ctx context.Context, mgr ctrl.Manager, flow lifecycle.Flow, opts lifecycle.ControllerOptions) error {
	f := &flow
	a := &Adapter{Client: mgr.GetClient(), Flow: f}
	f.Adapter = a
	gvk := infrav1.GroupVersion.WithKind("TerraformCluster")
	opts.Extra = func(b *builder.Builder) *builder.Builder {
		return b.
			Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(
				util.ClusterToInfrastructureMapFunc(ctx, gvk, mgr.GetClient(), &infrav1.TerraformCluster{}))).
			Watches(&infrav1.TerraformMachine{}, handler.EnqueueRequestsFromMapFunc(
				lifecycle.ByClusterName(mgr.GetClient(), &infrav1.TerraformClusterList{}))).
			Watches(&infrav1.TerraformMachinePool{}, handler.EnqueueRequestsFromMapFunc(
				lifecycle.ByClusterName(mgr.GetClient(), &infrav1.TerraformClusterList{})))
	}
	return f.Setup(ctx, mgr, opts)
}
