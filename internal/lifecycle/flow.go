package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// Options are the manager settings the flow reads.
type Options struct {
	// RunnerImage is the init container's image holding /runner.
	RunnerImage string
	// DriftDefaultInterval is --drift-default-interval.
	DriftDefaultInterval time.Duration
	// StateBackups is --state-backups.
	StateBackups int
	// ClusterOperationGate is --cluster-operation-gate.
	ClusterOperationGate bool
	// RunnerEvents is --runner-events.
	RunnerEvents bool
}

// Flow reconciles one workload kind.
type Flow struct {
	// Client reads through the manager's cache and writes.
	Client client.Client
	// APIReader reads live, for what no cache holds.
	APIReader client.Reader
	// Recorder emits events.k8s.io/v1 events.
	Recorder events.EventRecorder
	// Adapter is the kind's part of the flow.
	Adapter Adapter
	// Options are the manager settings.
	Options Options
	// Clock returns the time; time.Now when nil.
	Clock func() time.Time
	// ServiceAccounts remembers each namespace's runner ServiceAccounts
	// between passes, forgotten on the cache's events (nil lists them at
	// every pass).
	ServiceAccounts *identity.ServiceAccountMemo
	// Sources reads the identities' source Secrets (the manager's
	// SourceWatch); nil reads them live, like every Secret no cache holds.
	Sources client.Reader

	// written guards against deciding on a cached version older than
	// this manager's own last write (set by Setup).
	written *written
	// exports caches each cluster's exports by its state's version (set
	// by Setup; nil reads the state every time).
	exports *exportsCache
	// sources shares live reads of the Secrets the credentials step reads
	// live (a mirror the cache holds without its data; the identity's
	// source Secret when Sources is nil) among concurrent passes (set by
	// Setup; nil reads each with its own request).
	sources *identity.SharedReads
	// leaseSync tells when the cache holds a Lease write of this manager
	// (set by Setup; nil reads the cluster lease live).
	leaseSync *versionWaiter
	// own remembers the Secrets and Jobs the flow wrote, whose events wake
	// nothing (set by Setup).
	own *ownWrites
	// shard is --watch-filter's shard (set by Setup; the zero Shard holds
	// every object).
	shard watches.Shard
}

// kind is the workload kind the flow reconciles: its adapter's.
func (f *Flow) kind() infrav1.WorkloadKind { return f.Adapter.Kind() }

func (f *Flow) now() time.Time {
	if f.Clock != nil {
		return f.Clock()
	}
	return time.Now()
}

// objectGone is what a pass does for an object not found (gone, also when
// its finalizer was removed by hand): its per-object series go with it.
// The shard queue does the same for a request whose object is not cached.
func (f *Flow) objectGone(req ctrl.Request) {
	metrics.ObjectDeleted(f.kind(), req.Namespace, req.Name)
}

// errStop ends a pass early without an error.
var errStop = errors.New("stop")

// Reconcile runs one pass over one object: the preamble, then the paused
// branch or the steps of an unpaused pass, then one status patch. A pass
// that fails returns its error and an empty Result (controller-runtime
// backs it off); one that waits returns the soonest requeue any step asked
// for.
func (f *Flow) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	obj := f.kind().NewObject()
	if err := f.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			f.objectGone(req)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !f.shard.Holds(obj.GetLabels()) {
		// Queued before the cache held the object (watches.Shard.Queue
		// lets such a request through) and found another shard's now.
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues(string(f.kind()), client.ObjectKeyFromObject(obj))
	ctx = ctrl.LoggerInto(ctx, log)
	if f.written.stale(obj) {
		// The update this manager made is on its way and wakes the
		// object again; the requeue is a backstop.
		log.V(4).Info("The cache is behind this manager's own update; waiting for it")
		return ctrl.Result{RequeueAfter: staleRequeue}, nil
	}
	// Preamble, externally managed: nothing below runs, nothing is written.
	if externallyManaged(obj) {
		return ctrl.Result{}, nil
	}

	p := &Pass{Obj: obj, Kind: f.kind(), Now: f.now(), fromVersion: obj.GetResourceVersion(), flow: f}
	snapshotConditions(p)
	// The patch helper takes its snapshot before anything touches the
	// object, so whatever the pass records is written by its one patch.
	p.writes = &versionRecorder{Client: f.Client, Live: f.APIReader, wrote: func(v string) { f.written.wrote(obj.GetUID(), p.fromVersion, v) }}
	snap, err := takeSnapshot(obj, p.writes)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create a patch helper for %s: %w", req.NamespacedName, err)
	}
	p.snap = snap
	defer func() {
		if retErr == nil {
			consumeReconcileRequest(p)
		}
		if err := f.patchStatus(ctx, p, retErr == nil); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	steps := []func(context.Context, *Pass) error{f.preamble, f.passSteps}
	for _, step := range steps {
		err := step(ctx, p)
		switch {
		case err == nil:
			continue
		case errors.Is(err, errStop):
			return ctrl.Result{RequeueAfter: p.requeue}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// passSteps runs the paused branch or the steps of an unpaused pass. A
// paused object bookkeeps its finished Jobs, deletes a Job that can never
// start and, once no Job is active, adopts the state of an apply that
// finished meanwhile and clears the move block; internal/decide
// then waits on the pause. While a Job is active, state is not read and no
// inputs are built: decide waits on the Job.
func (f *Flow) passSteps(ctx context.Context, p *Pass) error {
	steps := []func(context.Context, *Pass) error{f.resolvePolicy, f.bookkeeping, f.pausedBranch, f.decide, f.planRecords, f.act}
	if !p.paused {
		steps = []func(context.Context, *Pass) error{
			f.credentials,
			f.resolvePolicy,
			f.bookkeeping,
			f.activeJob,
			f.clearMoveBlock,
			f.readState,
			f.buildInputs,
			f.decide,
			f.planRecords,
			f.act,
			f.after,
		}
	}
	for _, step := range steps {
		if err := step(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// after runs the kind's own steps once the flow has decided and acted, not
// while a Job is active.
func (f *Flow) after(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return nil
	}
	return f.Adapter.After(ctx, p)
}

// staleRequeue backs up the wait for this manager's own update.
const staleRequeue = 2 * time.Second
