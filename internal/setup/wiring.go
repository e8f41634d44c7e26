package setup

import (
	"context"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	captfwebhook "github.com/captf-io/cluster-api-provider-terraform/internal/webhook"
)

// Wiring is what New hands each controller and webhook setup besides the
// manager itself.
type Wiring struct {
	// Options are the manager's options, completed and validated
	// (RunnerImage resolved).
	Options Options
	// Live reads straight from the API server: for every object no cache
	// holds (bootstrap, variablesFrom, identity source and image pull
	// Secrets; ServiceAccounts, RoleBindings, ConfigMaps, Namespaces).
	Live client.Reader
	// Variables caches the Secrets and ConfigMaps labeled
	// captf.io/variables=true, with their data stripped: watch it, e.g.
	// source.Kind(w.Variables, &corev1.Secret{}, handler, predicates), to be
	// woken when a variablesFrom source changes, and read values with Live.
	Variables cache.Cache
	// Recorder emits events.k8s.io/v1 events reported as EventSource.
	Recorder events.EventRecorder
	// ServiceAccounts remembers each namespace's runner ServiceAccounts,
	// forgotten on the manager cache's events (shared by the workload
	// controllers).
	ServiceAccounts *identity.ServiceAccountMemo
	// Sources serves the identities' source Secrets from a watch of each
	// (shared by the workload controllers and the identity controller).
	Sources *identity.SourceWatch
}

// WorkloadController sets up one workload controller (TerraformCluster,
// TerraformMachine or TerraformMachinePool) on mgr.
type WorkloadController func(ctx context.Context, mgr ctrl.Manager, w Wiring) error

// Webhook registers one kind's validating webhook on mgr's webhook server.
type Webhook func(mgr ctrl.Manager, w Wiring) error

// Webhooks are the validating webhooks New registers when
// Options.WebhookPort is not 0; the webhook server starts (and readiness
// waits for it) only when there is at least one.
var Webhooks = []Webhook{
	// The seven kinds' validators; the delete guards read live, so they see
	// every namespace whatever --namespace caches.
	func(mgr ctrl.Manager, w Wiring) error { return captfwebhook.Setup(mgr, w.Live) },
}
