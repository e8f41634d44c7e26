package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
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

	// written guards against deciding on a cached version older than
	// this manager's own last write (set by Setup).
	written *written
}

func (f *Flow) now() time.Time {
	if f.Clock != nil {
		return f.Clock()
	}
	return time.Now()
}

// errStop ends a pass early without an error.
var errStop = errors.New("stop")

// Reconcile runs one pass over one object.
func (f *Flow) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	obj := f.Adapter.New()
	if err := f.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone, also when its finalizer was removed by hand: its
			// per-object series go with it.
			metrics.ObjectDeleted(string(f.Adapter.Kind()), req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues(string(f.Adapter.Kind()), client.ObjectKeyFromObject(obj))
	ctx = ctrl.LoggerInto(ctx, log)
	if f.written.stale(obj) {
		// The update this manager made is on its way and wakes the
		// object again; the requeue is a backstop.
		log.V(4).Info("The cache is behind this manager's own update; waiting for it")
		return ctrl.Result{RequeueAfter: staleRequeue}, nil
	}
	p := &Pass{Obj: obj, Kind: f.Adapter.Kind(), Now: f.now(), fromVersion: obj.GetResourceVersion()}
	snapshotConditions(p)

	// Preamble.
	if externallyManaged(p) {
		return ctrl.Result{}, nil
	}
	if err := f.lookupOwner(ctx, p); err != nil {
		return ctrl.Result{}, err
	}
	if added, err := f.ensureFinalizer(ctx, p); added || err != nil {
		return ctrl.Result{}, err
	}

	p.writes = &versionRecorder{Client: f.Client}
	helper, err := patch.NewHelper(obj, p.writes)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create a patch helper for %s: %w", req.NamespacedName, err)
	}
	gone := false
	defer func() {
		if gone {
			return
		}
		if err := f.patchStatus(ctx, p, helper); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	steps := []func(context.Context, *Pass) error{}
	if f.paused(p) {
		steps = append(steps, f.bookkeeping, f.pausedBranch)
	} else {
		steps = append(steps,
			f.credentials,
			f.bookkeeping,
			f.activeJob,
			f.clearMoveBlock,
			f.readState,
			f.buildInputs,
			f.decide,
			f.act,
			f.Adapter.After,
		)
	}
	for _, step := range steps {
		if err := step(ctx, p); err != nil {
			if errors.Is(err, errStop) {
				break
			}
			if errors.Is(err, errGone) {
				gone = true
				f.written.forget(obj.GetUID())
				return ctrl.Result{}, nil
			}
			return ctrl.Result{RequeueAfter: p.requeue}, err
		}
	}
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// staleRequeue backs up the wait for this manager's own update.
const staleRequeue = 2 * time.Second

// errGone: the object's finalizer was removed; it may be gone already.
var errGone = errors.New("finalizer removed")

// externallyManaged: an object carrying Cluster API's externally-managed
// annotation is left alone entirely.
func externallyManaged(p *Pass) bool {
	return annotations.IsExternallyManaged(p.Obj)
}

// lookupOwner finds the owner, the Cluster and the TerraformCluster.
func (f *Flow) lookupOwner(ctx context.Context, p *Pass) error {
	suffix, err := state.Suffix(p.Obj.GetNamespace(), string(p.Kind), p.Obj.GetName())
	if err != nil {
		return fmt.Errorf("failed to derive the state suffix: %w", err)
	}
	p.Suffix = suffix
	wait, err := f.Adapter.LookupOwner(ctx, p)
	if err != nil {
		return err
	}
	p.OwnerWait = wait
	if wait != nil {
		status := metav1ConditionUnknown
		if wait.False {
			status = metav1ConditionFalse
		}
		setCondition(p, infrav1.DependenciesReadyCondition, status, wait.Reason, wait.Message)
	}
	return nil
}

// ensureFinalizer adds the finalizer; the pass stops after adding it so the
// write is visible before anything else happens.
func (f *Flow) ensureFinalizer(ctx context.Context, p *Pass) (bool, error) {
	if !p.Obj.GetDeletionTimestamp().IsZero() || controllerutil.ContainsFinalizer(p.Obj, f.Adapter.Finalizer()) {
		return false, nil
	}
	base := p.Obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(p.Obj, f.Adapter.Finalizer())
	if err := f.Client.Patch(ctx, p.Obj, client.MergeFrom(base)); err != nil {
		return false, fmt.Errorf("failed to add the finalizer: %w", err)
	}
	return true, nil
}

// paused: the object or its Cluster is paused.
func (f *Flow) paused(p *Pass) bool {
	var cluster *clusterv1.Cluster
	if p.Cluster != nil {
		cluster = p.Cluster
	} else {
		cluster = &clusterv1.Cluster{}
	}
	paused := annotations.IsPaused(cluster, p.Obj)
	if paused {
		setCondition(p, infrav1.PausedCondition, metav1ConditionTrue, infrav1.PausedReason, "")
	} else {
		setCondition(p, infrav1.PausedCondition, metav1ConditionFalse, infrav1.NotPausedReason, "")
	}
	return paused
}

// pausedBranch: a paused object processes its finished Jobs (bookkeeping ran
// before it), deletes a Job that can never start, and clears the move block
// once no Job is active; it starts nothing new.
func (f *Flow) pausedBranch(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return f.deleteIfStuck(ctx, p)
	}
	return f.clearMoveBlock(ctx, p)
}

// decide fills the Observation and asks internal/decide.
func (f *Flow) decide(ctx context.Context, p *Pass) error {
	if p.Kind == decide.KindCluster && !p.Obj.GetDeletionTimestamp().IsZero() {
		exist, err := f.dependentsExist(ctx, p)
		if err != nil {
			return err
		}
		p.dependentsExist = exist
	}
	obs := f.observe(p)
	d, err := decide.Decide(obs)
	if err != nil {
		return fmt.Errorf("failed to decide the next operation: %w", err)
	}
	p.Decision = d
	metrics.Decision(string(p.Kind), string(d.Op), string(d.Reason))
	ctrl.LoggerFrom(ctx).V(4).Info("Decided", "op", d.Op, "reason", d.Reason, "requeueAfter", d.RequeueAfter)
	return nil
}

// dependentsExist: TerraformMachines or TerraformMachinePools carrying the
// cluster's name remain in the namespace.
func (f *Flow) dependentsExist(ctx context.Context, p *Pass) (bool, error) {
	name := p.ClusterName
	if name == "" {
		name = p.Obj.GetLabels()[clusterv1.ClusterNameLabel]
	}
	if name == "" {
		return false, nil
	}
	sel := client.MatchingLabels{clusterv1.ClusterNameLabel: name}
	var machines infrav1.TerraformMachineList
	if err := f.Client.List(ctx, &machines, client.InNamespace(p.Obj.GetNamespace()), sel); err != nil {
		return false, fmt.Errorf("failed to list TerraformMachines: %w", err)
	}
	var pools infrav1.TerraformMachinePoolList
	if err := f.Client.List(ctx, &pools, client.InNamespace(p.Obj.GetNamespace()), sel); err != nil {
		return false, fmt.Errorf("failed to list TerraformMachinePools: %w", err)
	}
	return len(machines.Items)+len(pools.Items) > 0, nil
}
