package watches

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Shard is the part of the objects one manager reconciles when several
// share an API server: with --watch-filter, the objects labeled
// cluster.x-k8s.io/watch-filter=<Filter> (Cluster API's convention; the
// namespaces of --namespace confine the manager's cache, so objects outside
// them never reach it at all). The zero Shard holds every object.
type Shard struct {
	// Filter is --watch-filter ("" for every object).
	Filter string
	// Gone, when set, changes what happens to a request whose object the
	// cache does not hold when a worker takes it: instead of a pass, which
	// would find nothing, Gone does what that pass would have done for an
	// object not found. Such an object is deleted, or not cached yet, and
	// then the cache's add of it wakes it again through the controller's
	// own watch (the cache holds an object before its watch's handlers
	// hear of it), judged by its labels. So no worker ever takes a
	// request of another shard's object, not even one woken before its
	// object was cached.
	Gone func(reconcile.Request)
}

// Holds says whether an object with these labels is in the shard.
func (s Shard) Holds(labels map[string]string) bool {
	return s.Filter == "" || labels[clusterv1.WatchLabel] == s.Filter
}

// Queue returns a controller's NewQueue: controller-runtime's priority
// queue, through which only requests for objects of the shard pass. Every
// way a controller is woken (its object's own events, its Jobs and Secrets,
// Cluster API's objects, identities, variables sources, requeues) ends in
// an add to this queue, so an object of another shard is never reconciled,
// whatever watch maps to it. r reads the object (the manager's cache) as
// newObject makes it; a request whose object the reader cannot read (not
// found: deleted, or created a moment ago and not cached yet, as when a
// Machine's event comes before its TerraformMachine's) is let through, so
// that no wake-up of the shard's own objects is ever lost, and judged again
// when a worker takes it: one whose object is then another shard's is
// dropped there.
func (s Shard) Queue(r client.Reader, newObject func() client.Object) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q := priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl })
		if s.Filter == "" {
			return q
		}
		sq := shardQueue{PriorityQueue: q, admit: func(req reconcile.Request) bool {
			return s.admits(r, newObject, req) != refused
		}}
		sq.take = func(req reconcile.Request) bool {
			switch s.admits(r, newObject, req) {
			case refused:
				return false
			case unread:
				if s.Gone != nil {
					s.Gone(req)
					return false
				}
			}
			return true
		}
		return sq
	}
}

// admission is the shard's verdict on a request.
type admission int

const (
	admitted admission = iota
	refused
	// unread: the reader does not hold the object.
	unread
)

// admits reads the request's object and judges it.
func (s Shard) admits(r client.Reader, newObject func() client.Object, req reconcile.Request) admission {
	o := newObject()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Get(ctx, types.NamespacedName(req.NamespacedName), o); err != nil {
		if apierrors.IsNotFound(err) {
			return unread
		}
		return admitted
	}
	if !s.Holds(o.GetLabels()) {
		return refused
	}
	return admitted
}

// shardQueue drops, at every way in, the requests admit refuses, and on
// the way out those take refuses.
type shardQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	admit, take func(reconcile.Request) bool
}

// GetWithPriority hands a worker the next request of the shard, judging
// each again as it leaves the queue.
func (q shardQueue) GetWithPriority() (reconcile.Request, int, bool) {
	for {
		item, priority, shutdown := q.PriorityQueue.GetWithPriority()
		if shutdown || q.take(item) {
			return item, priority, shutdown
		}
		q.PriorityQueue.Forget(item)
		q.PriorityQueue.Done(item)
	}
}

// Get is GetWithPriority without the priority.
func (q shardQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

func (q shardQueue) keep(items []reconcile.Request) []reconcile.Request {
	out := items[:0:0]
	for _, it := range items {
		if q.admit(it) {
			out = append(out, it)
		}
	}
	return out
}

func (q shardQueue) Add(item reconcile.Request) {
	if q.admit(item) {
		q.PriorityQueue.Add(item)
	}
}

func (q shardQueue) AddAfter(item reconcile.Request, d time.Duration) {
	if q.admit(item) {
		q.PriorityQueue.AddAfter(item, d)
	}
}

func (q shardQueue) AddRateLimited(item reconcile.Request) {
	if q.admit(item) {
		q.PriorityQueue.AddRateLimited(item)
	}
}

func (q shardQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if items = q.keep(items); len(items) > 0 {
		q.PriorityQueue.AddWithOpts(o, items...)
	}
}

// Jobs returns r with every JobList it lists cut to the Jobs whose
// controller, read through r, is an object of the shard: what a manager
// counts of the Jobs it shares a namespace with (captf_jobs_active). A Job
// whose owner r cannot read is left out.
func (s Shard) Jobs(r client.Reader) client.Reader {
	if s.Filter == "" {
		return r
	}
	return shardJobs{Reader: r, s: s}
}

type shardJobs struct {
	client.Reader
	s Shard
}

func (j shardJobs) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := j.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	jl, ok := list.(*batchv1.JobList)
	if !ok {
		return nil
	}
	kept := jl.Items[:0]
	for _, job := range jl.Items {
		ref := metav1.GetControllerOf(&job)
		if ref == nil {
			continue
		}
		o := infrav1.WorkloadKind(ref.Kind).NewObject()
		if o == nil || j.Reader.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: ref.Name}, o) != nil || !j.s.Holds(o.GetLabels()) {
			continue
		}
		kept = append(kept, job)
	}
	jl.Items = kept
	return nil
}
