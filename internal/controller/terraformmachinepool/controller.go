package terraformmachinepool

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Setup registers the TerraformMachinePool controller: the shared flow,
// woken by the object, its Jobs and state, and by Watches.
func Setup(ctx context.Context, mgr ctrl.Manager, flow lifecycle.Flow, opts lifecycle.ControllerOptions, src watches.Sources) error {
	f := &flow
	f.Adapter = NewAdapter(mgr.GetClient())
	opts.Extra = Watches(mgr, src)
	return f.Setup(ctx, mgr, opts)
}

// Watches are the TerraformMachinePool's own watches: its MachinePool, its
// Cluster, the cluster's TerraformCluster, its variablesFrom sources and
// the TerraformClusterIdentity it resolves to.
func Watches(mgr ctrl.Manager, src watches.Sources) func(b *builder.Builder) *builder.Builder {
	c := mgr.GetClient()
	return func(b *builder.Builder) *builder.Builder {
		return watches.Members(b.Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(machinePoolToInfrastructure)), c, infrav1.KindTerraformMachinePool, src)
	}
}

func machinePoolToInfrastructure(_ context.Context, o client.Object) []reconcile.Request {
	mp, ok := o.(*clusterv1.MachinePool)
	if !ok {
		return nil
	}
	ref := mp.Spec.Template.Spec.InfrastructureRef
	if ref.Kind != string(infrav1.KindTerraformMachinePool) || ref.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: mp.Namespace, Name: ref.Name}}}
}
