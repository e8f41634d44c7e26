package lifecycle

import (
	"context"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// ControllerOptions are what every workload controller is set up with.
type ControllerOptions struct {
	// Concurrency is the number of workers.
	Concurrency int
	// WatchFilter is --watch-filter.
	WatchFilter string
	// Extra adds the kind's own watches.
	Extra func(b *builder.Builder) *builder.Builder
}

// Setup registers the flow as a controller for its kind: the object, its
// Jobs (a Job that just finished first), and the Secrets that carry its
// owner labels, each without the events of the flow's own writes. With --watch-filter, its queue admits only the
// objects of the manager's shard, however they are woken (watches.Shard).
func (f *Flow) Setup(ctx context.Context, mgr ctrl.Manager, opts ControllerOptions) error {
	f.written = &written{}
	f.shard = watches.Shard{Filter: opts.WatchFilter, Gone: f.objectGone}
	f.own = &ownWrites{}
	f.Client = recordingClient{Client: f.Client, own: f.own}
	f.exports = &exportsCache{}
	f.sources = identity.NewSharedReads(f.APIReader)
	leaseSync, err := newVersionWaiter(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	f.leaseSync = leaseSync
	kind := f.kind()
	obj := f.kind().NewObject()
	log := ctrl.LoggerFrom(ctx)
	b := ctrl.NewControllerManagedBy(mgr).
		For(obj, builder.WithPredicates(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, opts.WatchFilter), f.notOwnWrite())).
		Watches(&batchv1.Job{}, FinishedJobsFirst(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), obj, handler.OnlyControllerOwner())),
			builder.WithPredicates(f.own.predicate())).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(byOwnerLabels(kind)),
			builder.WithPredicates(managedOnly(), f.own.predicate())).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(opts.Concurrency, 1),
			NewQueue:                f.shard.Queue(mgr.GetCache(), func() client.Object { return kind.NewObject() }),
		}).
		Named(strings.ToLower(string(kind)))
	if opts.Extra != nil {
		b = opts.Extra(b)
	}
	return b.Complete(OrdinaryRequeues(f.Reconcile))
}

// notOwnWrite drops the update of an object that is this manager's own
// write (written.ownUpdate): its status, or the metadata and spec a pass
// wrote as it went on (the clusterctl move block before a Job, the
// provider ID and the block's removal after one). The pass that wrote it
// already acted on all of it. Each watch event is one write, so a write of
// anyone else in between is an update of its own and passes. An update
// that adds or removes a finalizer or starts the deletion always passes:
// the pass that adds the finalizer stops there and the next one starts
// from this update (book: The Reconcile Lifecycle, "Finalizer"). So does
// one a pass waits for.
func (f *Flow) notOwnWrite() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil || finalizersOrDeletionChanged(e.ObjectOld, e.ObjectNew) {
			return true
		}
		return !f.written.ownUpdate(e.ObjectNew)
	}}
}

// finalizersOrDeletionChanged reports whether an update added or removed a
// finalizer or set the deletion timestamp.
func finalizersOrDeletionChanged(o, n client.Object) bool {
	return (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}

func managedOnly() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[infrav1.ManagedLabel] == "true"
	})
}

// byOwnerLabels maps an object carrying CAPTF's owner labels to its owner.
func byOwnerLabels(kind infrav1.WorkloadKind) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[infrav1.OwnerKindLabel] != string(kind) || l[infrav1.OwnerNameLabel] == "" {
			return nil
		}
		name := l[infrav1.OwnerNameLabel]
		if name != owner.LabelValue(name) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	}
}

// JobFinishedPriority is the workqueue priority of an object whose Job has
// just finished: the pass that reads the result (and sets Ready, or starts
// the retry) goes before passes woken by anything else. Other events have
// priority 0, and the initial list and resyncs controller-runtime's low
// priority.
const JobFinishedPriority = 10

// FinishedJobsFirst wraps the handler that maps a Job to its owner: the
// update in which a Job finishes (Complete or Failed) enqueues the owner
// at JobFinishedPriority. With thousands of objects queued, the passes
// that turn a finished Job into a result would otherwise wait behind every
// other pass in the queue.
func FinishedJobsFirst(h handler.EventHandler) handler.EventHandler {
	return finishedJobsFirst{h}
}

type finishedJobsFirst struct{ handler.EventHandler }

func (h finishedJobsFirst) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	o, ok1 := e.ObjectOld.(*batchv1.Job)
	n, ok2 := e.ObjectNew.(*batchv1.Job)
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && ok1 && ok2 && jobs.IsFinished(n) && !jobs.IsFinished(o) {
		q = withPriority{PriorityQueue: pq, priority: JobFinishedPriority}
	}
	h.EventHandler.Update(ctx, e, q)
}

// withPriority adds items at least at priority.
type withPriority struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (w withPriority) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil || *o.Priority < w.priority {
		o.Priority = &w.priority
	}
	w.PriorityQueue.AddWithOpts(o, items...)
}

func (w withPriority) Add(item reconcile.Request) {
	w.AddWithOpts(priorityqueue.AddOpts{}, item)
}

// OrdinaryRequeues wraps a reconciler so that its requeues (a wait, the
// next drift check, a retry) go back at the ordinary priority: a pass
// woken at JobFinishedPriority would otherwise keep it for every later
// requeue, and thousands of objects' drift checks would then go before the
// first applies still queued.
func OrdinaryRequeues(r reconcile.Func) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r(ctx, req)
		res.Priority = new(int)
		return res, err
	}
}
