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
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Setup registers the TerraformMachine controller: the shared flow, woken
// by the object, its Jobs and state, and by Watches.
func Setup(ctx context.Context, mgr ctrl.Manager, flow lifecycle.Flow, opts lifecycle.ControllerOptions, src watches.Sources) error {
	f := &flow
	f.Adapter = NewAdapter(mgr.GetClient())
	opts.Extra = Watches(mgr, src)
	return f.Setup(ctx, mgr, opts)
}

// Watches are the TerraformMachine's own watches: its Machine, its
// Cluster, the cluster's TerraformCluster, its variablesFrom sources until
// it is provisioned, and the TerraformClusterIdentity it resolves to.
func Watches(mgr ctrl.Manager, src watches.Sources) func(b *builder.Builder) *builder.Builder {
	gvk := infrav1.GroupVersion.WithKind(string(infrav1.KindTerraformMachine))
	c := mgr.GetClient()
	return func(b *builder.Builder) *builder.Builder {
		return watches.Members(b.Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(gvk))), c, infrav1.KindTerraformMachine, src)
	}
}
