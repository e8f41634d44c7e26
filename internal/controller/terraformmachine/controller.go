package terraformmachine

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

// Setup registers the TerraformMachine controller: the shared flow, woken
// by the object, its Jobs and state, its Machine, its Cluster and the
// cluster's TerraformCluster.
func Setup(ctx context.Context, mgr ctrl.Manager, flow lifecycle.Flow, opts lifecycle.ControllerOptions) error {
	f := &flow
	f.Adapter = &Adapter{Client: mgr.GetClient(), Flow: f}
	gvk := infrav1.GroupVersion.WithKind("TerraformMachine")
	opts.Extra = func(b *builder.Builder) *builder.Builder {
		return b.
			Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(gvk))).
			Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(
				lifecycle.ByClusterName(mgr.GetClient(), &infrav1.TerraformMachineList{}))).
			Watches(&infrav1.TerraformCluster{}, handler.EnqueueRequestsFromMapFunc(
				lifecycle.ByClusterName(mgr.GetClient(), &infrav1.TerraformMachineList{})))
	}
	return f.Setup(ctx, mgr, opts)
}
