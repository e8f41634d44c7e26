package terraformclusteridentity

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Name is the controller's name (the controller label of
// controller_runtime_* series).
const Name = "terraformclusteridentity"

// eventAction is the action of the events this controller emits.
const eventAction = "ObserveIdentity"

// DefaultSyncPeriod is how often an identity's Secret is re-read when
// Options.SyncPeriod is unset.
const DefaultSyncPeriod = 10 * time.Minute

// Options configure the controller.
type Options struct {
	// WatchFilter, when set, restricts reconciles to identities labeled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilter string
	// SyncPeriod is how often each identity's Secret is re-read (it is not
	// watched). Default DefaultSyncPeriod.
	SyncPeriod time.Duration
	// Live reads the source Secret (default mgr.GetAPIReader()).
	Live client.Reader
	// Recorder emits the events (default mgr.GetEventRecorder("captf.io/manager")).
	Recorder events.EventRecorder
	// Concurrency is the number of workers (default 1).
	Concurrency int
	// Sources serves the identities' source Secrets from watches; a
	// change it sees wakes the identities that name the Secret (nil: the
	// source is read live at each pass and seen at the next sync).
	Sources *identity.SourceWatch
}

// Reconciler reconciles TerraformClusterIdentities.
type Reconciler struct {
	// Client is the manager's cached client: identities and the mirrors
	// (labeled captf.io/managed=true) are read from the cache.
	Client client.Client
	Live   client.Reader
	// Sources reads the source Secret (Options.Sources, or Live).
	Sources    client.Reader
	Recorder   events.EventRecorder
	SyncPeriod time.Duration
}

// Setup registers the controller with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	r := &Reconciler{
		Client:     mgr.GetClient(),
		Live:       o.Live,
		Recorder:   o.Recorder,
		SyncPeriod: o.SyncPeriod,
	}
	if r.Live == nil {
		r.Live = mgr.GetAPIReader()
	}
	r.Sources = o.Sources.Reader(r.Live)
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("captf.io/manager")
	}
	if r.SyncPeriod <= 0 {
		r.SyncPeriod = DefaultSyncPeriod
	}
	workers := o.Concurrency
	if workers < 1 {
		workers = 1
	}
	log := mgr.GetLogger().WithValues("controller", Name)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers,
			NewQueue: watches.Shard{Filter: o.WatchFilter}.Queue(mgr.GetCache(), func() client.Object { return &infrav1.TerraformClusterIdentity{} })}).
		For(&infrav1.TerraformClusterIdentity{}, builder.WithPredicates(
			predicate.GenerationChangedPredicate{},
			predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, o.WatchFilter),
		)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(mirrorToIdentity),
			builder.WithPredicates(predicate.NewPredicateFuncs(isMirror)))
	if o.Sources != nil {
		changed := make(chan event.GenericEvent, sourceChangesBuffer)
		o.Sources.Changed = func(key client.ObjectKey) {
			select {
			case changed <- event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
			default:
				// Full: the sync period looks again.
			}
		}
		b = b.WatchesRawSource(source.Channel(changed, handler.EnqueueRequestsFromMapFunc(r.namingSecret)))
	}
	err := b.Complete(r)
	if err != nil {
		return fmt.Errorf("failed to set up the %s controller: %w", Name, err)
	}
	return nil
}

// isMirror selects credential mirrors among the cached Secrets.
func isMirror(o client.Object) bool {
	return o.GetLabels()[infrav1.MirroredLabel] == identity.TrueValue && o.GetAnnotations()[infrav1.IdentityAnnotation] != ""
}

// mirrorToIdentity maps a mirror to the identity it copies.
func mirrorToIdentity(_ context.Context, o client.Object) []reconcile.Request {
	if !isMirror(o) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetAnnotations()[infrav1.IdentityAnnotation]}}}
}

// Reconcile sets one identity's Ready condition and status.namespaces.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	id := &infrav1.TerraformClusterIdentity{}
	if err := r.Client.Get(ctx, req.NamespacedName, id); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(id, r.Client)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create a patch helper for TerraformClusterIdentity %s: %w", id.Name, err)
	}
	observed, err := identity.ObserveIdentity(ctx, r.Client, r.Sources, id)
	if err != nil {
		return ctrl.Result{}, err
	}
	evs := identity.SetIdentityStatus(id, observed)
	if err := helper.Patch(ctx, id, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}}); err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to patch the status of TerraformClusterIdentity %s: %w", id.Name, err)
	}
	// Events only once the transition is recorded, so a failed patch that
	// is retried does not emit twice.
	for _, e := range evs {
		r.Recorder.Eventf(id, nil, e.Type, e.Reason, eventAction, "%s", e.Message)
	}
	return ctrl.Result{RequeueAfter: r.SyncPeriod}, nil
}

// sourceChangesBuffer is how many source Secret changes wait for the
// controller before more are dropped (the sync period catches those).
const sourceChangesBuffer = 256

// namingSecret maps a changed source Secret to the identities whose
// spec.secretRef names it.
func (r *Reconciler) namingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	ids := &infrav1.TerraformClusterIdentityList{}
	if err := r.Client.List(ctx, ids); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the identities of a changed source Secret", "Secret", client.ObjectKeyFromObject(o))
		return nil
	}
	var out []reconcile.Request
	for _, id := range ids.Items {
		if id.Spec.SecretRef.Namespace == o.GetNamespace() && id.Spec.SecretRef.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: id.Name}})
		}
	}
	return out
}
