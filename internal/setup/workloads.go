package setup

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformcluster"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachine"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachinepool"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// WorkloadControllers are the workload controllers New sets up, after the
// TerraformClusterIdentity and TerraformMachineTemplate controllers: each
// maps Wiring onto its kind's Setup, with the kind's concurrency flag.
var WorkloadControllers = []WorkloadController{
	func(ctx context.Context, mgr ctrl.Manager, w Wiring) error {
		return terraformcluster.Setup(ctx, mgr, flow(mgr, w), controllerOptions(w, w.Options.TerraformClusterConcurrency), sources(w))
	},
	func(ctx context.Context, mgr ctrl.Manager, w Wiring) error {
		return terraformmachine.Setup(ctx, mgr, flow(mgr, w), controllerOptions(w, w.Options.TerraformMachineConcurrency), sources(w))
	},
	func(ctx context.Context, mgr ctrl.Manager, w Wiring) error {
		return terraformmachinepool.Setup(ctx, mgr, flow(mgr, w), controllerOptions(w, w.Options.TerraformMachinePoolConcurrency), sources(w))
	},
}

// flow is the shared reconcile flow with the manager's settings; each
// kind's Setup plugs its adapter in.
func flow(mgr ctrl.Manager, w Wiring) lifecycle.Flow {
	return lifecycle.Flow{
		Client:          mgr.GetClient(),
		APIReader:       w.Live,
		Recorder:        w.Recorder,
		ServiceAccounts: w.ServiceAccounts,
		Sources:         w.Sources.Reader(nil),
		Options: lifecycle.Options{
			RunnerImage:          w.Options.RunnerImage,
			DriftDefaultInterval: w.Options.DriftDefaultInterval,
			StateBackups:         w.Options.StateBackups,
			ClusterOperationGate: w.Options.ClusterOperationGate,
			RunnerEvents:         w.Options.RunnerEvents,
		},
	}
}

// sources are what wakes a workload object besides the manager's cache:
// the variables cache, within --watch-filter.
func sources(w Wiring) watches.Sources {
	return watches.Sources{Variables: w.Variables, WatchFilter: w.Options.WatchFilter}
}

func controllerOptions(w Wiring, concurrency int) lifecycle.ControllerOptions {
	return lifecycle.ControllerOptions{Concurrency: concurrency, WatchFilter: w.Options.WatchFilter}
}
