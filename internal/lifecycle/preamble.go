package lifecycle

import (
	"context"
	"errors"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// preamble looks up the owner, reads the pause and adds the finalizer. An
// owner wait ends the pass before credentials unless the object is being
// deleted (deletion proceeds from the durable inputs); adding the
// finalizer ends it too, so the write is visible before anything else
// happens.
func (f *Flow) preamble(ctx context.Context, p *Pass) error {
	if err := f.lookupOwner(ctx, p); err != nil {
		return err
	}
	// Paused is read on every pass that finds the object, from the first
	// on: also while it waits for its owner, and on the pass that adds the
	// finalizer (Cluster API's paused.EnsurePausedCondition).
	p.paused = annotations.IsPaused(clusterOrEmpty(p.Cluster), p.Obj)
	p.facts.pausedRead = true
	if p.OwnerWait != nil && !p.deleting() {
		p.Requeue(decide.RequeueNotReady)
		return errStop
	}
	if !p.deleting() && !controllerutil.ContainsFinalizer(p.Obj, p.Kind.Finalizer()) {
		if err := f.addFinalizer(ctx, p); err != nil {
			return err
		}
		return errStop
	}
	return nil
}

// addFinalizer adds the kind's finalizer with its own patch under an
// optimistic lock: a merge patch carries the whole finalizers list, so
// without the lock a finalizer another controller added since the read
// would be dropped. A conflict fails the pass (the object is read again)
// and leaves the object as read. The patch helper then takes its snapshot
// again, so the status patch does not write the finalizer a second time;
// nothing is recorded on the object before this step.
func (f *Flow) addFinalizer(ctx context.Context, p *Pass) error {
	base := p.Obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(p.Obj, p.Kind.Finalizer())
	if err := p.writes.Patch(ctx, p.Obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		controllerutil.RemoveFinalizer(p.Obj, p.Kind.Finalizer())
		return fmt.Errorf("failed to add the finalizer %s: %w", p.Kind.Finalizer(), err)
	}
	snap, err := takeSnapshot(p.Obj, p.writes)
	if err != nil {
		return fmt.Errorf("failed to create a patch helper: %w", err)
	}
	p.snap = snap
	return nil
}

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
// before it), deletes a Job that can never start, and once no Job is active
// adopts the state of an apply that finished while paused and clears the
// move block; it starts nothing new.
func (f *Flow) pausedBranch(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return f.deleteIfStuck(ctx, p)
	}
	if err := f.adoptWhilePaused(ctx, p); err != nil {
		return err
	}
	return f.clearMoveBlock(ctx, p)
}

// adoptWhilePaused adopts the state of an apply that finished while the
// object was paused, before the move block clears: clusterctl move pauses
// the Cluster and then waits for the block, so the state it carries away
// must already record that apply's inputs hash (and be owned by the
// object), or the target, which has no Jobs to read it from, would apply
// the same inputs again. A state that cannot be read is left to the next
// unpaused pass; an API error fails the pass and keeps the block.
func (f *Flow) adoptWhilePaused(ctx context.Context, p *Pass) error {
	st, err := state.Read(ctx, f.Client, p.Obj.GetNamespace(), p.Suffix, state.DefaultLimits)
	switch {
	case err == nil:
	case errors.Is(err, state.ErrNotFound) || state.ReasonOf(err) != "":
		return nil
	default:
		return fmt.Errorf("failed to read the state: %w", err)
	}
	p.State = st
	defer func() { p.State = nil }()
	return f.adopt(ctx, p)
}
