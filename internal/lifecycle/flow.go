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

// kind is the workload kind the flow reconciles: the one that runs its
// adapter's role.
func (f *Flow) kind() infrav1.WorkloadKind { return f.Adapter.Role().Kind() }

func (f *Flow) now() time.Time {
	if f.Clock != nil {
		return f.Clock()
	}
	return time.Now()
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
			// Gone, also when its finalizer was removed by hand: its
			// per-object series go with it.
			metrics.ObjectDeleted(f.kind(), req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
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
	p.writes = &versionRecorder{Client: f.Client}
	helper, err := patch.NewHelper(obj, p.writes)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to create a patch helper for %s: %w", req.NamespacedName, err)
	}
	defer func() {
		if err := f.patchStatus(ctx, p, helper, retErr == nil); err != nil {
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
// start and clears the move block once no Job is active; internal/decide
// then waits on the pause. While a Job is active, state is not read and no
// inputs are built: decide waits on the Job.
func (f *Flow) passSteps(ctx context.Context, p *Pass) error {
	steps := []func(context.Context, *Pass) error{f.bookkeeping, f.pausedBranch, f.decide, f.act}
	if !p.paused {
		steps = []func(context.Context, *Pass) error{
			f.credentials,
			f.bookkeeping,
			f.activeJob,
			f.clearMoveBlock,
			f.readState,
			f.buildInputs,
			f.decide,
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

// preamble looks up the owner, adds the finalizer and reads the pause. An
// owner wait ends the pass before credentials unless the object is being
// deleted (deletion proceeds from the durable inputs); adding the
// finalizer ends it too, so the write is visible before anything else
// happens.
func (f *Flow) preamble(ctx context.Context, p *Pass) error {
	if err := f.lookupOwner(ctx, p); err != nil {
		return err
	}
	if p.OwnerWait != nil && !p.deleting() {
		p.Requeue(decide.RequeueNotReady)
		return errStop
	}
	if !p.deleting() && controllerutil.AddFinalizer(p.Obj, p.Kind.Finalizer()) {
		return errStop
	}
	p.paused = annotations.IsPaused(clusterOrEmpty(p.Cluster), p.Obj)
	p.pausedSeen = true
	return nil
}

// staleRequeue backs up the wait for this manager's own update.
const staleRequeue = 2 * time.Second

// externallyManaged: an object carrying Cluster API's externally-managed
// annotation is left alone entirely.
func externallyManaged(obj client.Object) bool {
	return annotations.IsExternallyManaged(obj)
}

// lookupOwner finds the owner, the Cluster and the TerraformCluster.
func (f *Flow) lookupOwner(ctx context.Context, p *Pass) error {
	suffix, err := state.Suffix(p.Obj.GetNamespace(), p.Kind, p.Obj.GetName())
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
		p.record(fromReading, infrav1.DependenciesReadyCondition, status, wait.Reason, wait.Message)
	}
	return nil
}

// clusterOrEmpty is the Cluster, or an empty one when unknown.
func clusterOrEmpty(c *clusterv1.Cluster) *clusterv1.Cluster {
	if c != nil {
		return c
	}
	return &clusterv1.Cluster{}
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
	if p.Kind == infrav1.KindTerraformCluster && !p.Obj.GetDeletionTimestamp().IsZero() {
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
	metrics.Decision(p.Kind, string(d.Op), string(d.Reason))
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
