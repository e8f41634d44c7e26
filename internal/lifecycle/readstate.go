package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// durablePrefix starts every durable inputs Secret's name.
const durablePrefix = "captf-inputs-"

// DurableName is the durable inputs Secret's name:
// captf-inputs-<kindshort>-<name>.
func DurableName(kind infrav1.WorkloadKind, name string) string {
	return durablePrefix + kind.Short() + "-" + name
}

// ParseDurableName is DurableName's inverse: the kind and object name a
// durable inputs Secret's name stands for.
func ParseDurableName(secret string) (infrav1.WorkloadKind, string, bool) {
	for _, k := range infrav1.WorkloadKinds() {
		if name, ok := strings.CutPrefix(secret, durablePrefix+k.Short()+"-"); ok && name != "" {
			return k, name, true
		}
	}
	return "", "", false
}

// durableSecret reads the durable inputs Secret through r: the cache (it
// carries captf.io/managed) or the API server; nil when missing.
func (f *Flow) durableSecret(ctx context.Context, r client.Reader, p *Pass) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: DurableName(p.Kind, p.Obj.GetName())}
	err := r.Get(ctx, key, s)
	if err == nil && state.DataDropped(s) {
		// Cached without its data (see state.DataDroppedAnnotation).
		s = &corev1.Secret{}
		err = f.APIReader.Get(ctx, key, s)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read the durable inputs Secret: %w", err)
	}
	return s, nil
}

// passDurable is the durable inputs Secret as the pass knows it: what its
// own write returned when it wrote it (bookkeeping's digest pin, which also
// clears an interrupted apply's mark, or that mark recorded), else the
// cache's copy. The cache may not hold the pass's write yet, and an old
// copy would bring back what the write changed: a cleared interrupted mark
// read again starts a second apply.
func (f *Flow) passDurable(ctx context.Context, p *Pass) (*corev1.Secret, error) {
	if p.durableWritten {
		return p.Durable, nil
	}
	return f.durableSecret(ctx, f.Client, p)
}

// readState reads the state, takes a backup of a new serial, adopts the
// state of a successful apply, classifies the lock, and hands the outputs to
// the kind.
func (f *Flow) readState(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return nil
	}
	durable, err := f.passDurable(ctx, p)
	if err != nil {
		return err
	}
	p.Durable = durable

	// The serial read before the Job this pass may have booked ran.
	before := p.Status().ObservedStateSerial
	st, readErr := state.Read(ctx, f.Client, p.Obj.GetNamespace(), p.Suffix, state.DefaultLimits)
	if readErr == nil && stateBehindBooking(p.sampleOp, st, before) {
		// A Job booked this pass wrote the state, yet the cache shows the
		// state from before it ran: the Secrets' watch is behind the Jobs'
		// (each watch reconnects on its own schedule after the API server
		// was out of reach). Its outputs are read from the API server, so
		// that the Job's health reading counts as its sample now.
		st, readErr = state.Read(ctx, f.APIReader, p.Obj.GetNamespace(), p.Suffix, state.DefaultLimits)
	}
	if errors.Is(readErr, state.ErrNotCached) {
		// The cache keeps a state Secret's data only once it has seen the
		// object it belongs to (setup's Secret transform): one written
		// before its object reached the cache is read live.
		st, readErr = state.Read(ctx, f.APIReader, p.Obj.GetNamespace(), p.Suffix, state.DefaultLimits)
	}
	if errors.Is(readErr, state.ErrNotFound) && p.wroteState() {
		// A finished apply or restore wrote the state, but the Secret
		// cache does not show it: the Job's watch and the Secrets' watch
		// are not in step, and the cache may also hold the durable inputs
		// from before this object's last digest pin. Deciding on that
		// would apply a second time (NoState), so both are read from the
		// API server instead.
		if durable, err = f.durableSecret(ctx, f.APIReader, p); err != nil {
			return err
		}
		p.Durable = durable
		st, readErr = state.Read(ctx, f.APIReader, p.Obj.GetNamespace(), p.Suffix, state.DefaultLimits)
	}
	reason := state.ReasonOf(readErr)
	switch {
	case readErr == nil:
		p.State = st
		p.StateStatus = decide.StateRead
		p.facts.state = &stateReading{outcome: stateFound}
		if st.Serial > 0 {
			p.Status().ObservedStateSerial = int64(st.Serial)
		}
	case errors.Is(readErr, state.ErrNotFound):
		p.StateStatus = decide.StateNotFound
		p.neverWritten = errors.Is(readErr, state.ErrNeverWritten)
		p.facts.state = &stateReading{outcome: stateNotFound}
		if p.everApplied() {
			p.facts.state = &stateReading{outcome: stateLost, neverWritten: p.neverWritten}
		}
	case reason != "":
		p.StateStatus = decide.StateUnreadable
		p.facts.state = &stateReading{outcome: stateUnreadable, reason: reason, detail: readErr.Error()}
	default:
		return fmt.Errorf("failed to read the state: %w", readErr)
	}
	p.Status().StateSecretSuffix = p.Suffix

	if err := f.checkLock(ctx, p); err != nil {
		return err
	}
	if err := f.backups(ctx, p, readErr); err != nil {
		return err
	}
	if p.State != nil {
		if err := f.adopt(ctx, p); err != nil {
			return err
		}
		return f.Adapter.ObserveOutputs(ctx, p)
	}
	return nil
}

// stateBehindBooking reports whether a state read from the cache may be
// older than what the Job booked this pass wrote: sampleOp is the
// operation of that Job (an apply, refresh or drift check, each of which
// writes the state; "" when none was booked), before the serial read
// before it ran. A state with no outputs is what a runtime's init writes
// before the first apply; a serial no newer than before is the state the
// Job started from (or one the Job did not change, which reads the same).
func stateBehindBooking(sampleOp decide.Operation, st *state.State, before int64) bool {
	if sampleOp == "" || st == nil {
		return false
	}
	return len(st.Outputs) == 0 || int64(st.Serial) <= before
}

// wroteState: a finished apply or restore of the object's Job history
// succeeded, so a state Secret exists unless something deleted it.
func (p *Pass) wroteState() bool {
	for i := range p.Records {
		r := &p.Records[i]
		if (r.Op == decide.OpApply || r.Op == decide.OpRestore) && r.Outcome() == decide.OutcomeSucceeded {
			return true
		}
	}
	return false
}

// everApplied: provisioned, the durable inputs record a successful apply or
// a pinned digest, or a backup exists.
func (p *Pass) everApplied() bool {
	f := state.AppliedFacts{Provisioned: p.Provisioned(), Backups: len(p.Status().StateBackups)}
	if p.Durable != nil {
		f.DurableInputsAnnotations = p.Durable.Annotations
	}
	return state.EverApplied(f)
}

// succeededApply: provisioned, or the durable inputs record a successful
// apply or a pinned digest (everApplied without the backups).
func (p *Pass) succeededApply() bool {
	f := state.AppliedFacts{Provisioned: p.Provisioned()}
	if p.Durable != nil {
		f.DurableInputsAnnotations = p.Durable.Annotations
	}
	return state.EverApplied(f)
}

// checkLock classifies the state lock: a stale lock of one of the object's
// own runners is cleared by the next Job, or by the manager when no state
// was ever written; any other holder is reported.
func (f *Flow) checkLock(ctx context.Context, p *Pass) error {
	lock, err := state.ReadLock(ctx, f.Client, p.Obj.GetNamespace(), p.Suffix)
	if err != nil {
		return fmt.Errorf("failed to read the state lock: %w", err)
	}
	if !lock.Held() {
		return nil
	}
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, client.InNamespace(p.Obj.GetNamespace()), client.MatchingLabels(p.owner().Labels())); err != nil {
		return fmt.Errorf("failed to list runner pods: %w", err)
	}
	owners := state.LockOwners{}
	for i := range pods.Items {
		owners.Pods = append(owners.Pods, state.RunnerPodOf(&pods.Items[i]))
	}
	for _, j := range p.Jobs {
		owners.Jobs = append(owners.Jobs, j.Name)
	}
	v := state.ClassifyLock(lock, owners)
	switch {
	case v.Holder == state.LockStale && p.StateStatus == decide.StateNotFound:
		// No state was ever written: the runtime's init takes the lock to
		// write the first one, so the next Job would fail before it could
		// force-unlock. The manager clears the stale lock itself.
		cleared, err := state.ClearStaleLock(ctx, f.Client, p.Obj.GetNamespace(), p.Suffix, v.ID)
		if err != nil {
			return err
		}
		if cleared {
			metrics.LockForceUnlocked(p.Kind)
			f.event(p, nil, corev1.EventTypeWarning, infrav1.ForceUnlockedEvent,
				"Cleared stale state lock "+v.ID+" of runner pod "+v.Pod+", taken before any state was written")
		}
	case v.Holder == state.LockStale:
		p.ForceUnlock = v.ID
	case v.Holder == state.LockOwnRunner && p.neverWritten:
		// reference-facts §1.8: a base Secret without tfstate while one of
		// the object's runners holds the lock is a state mid-write.
		p.StateStatus = decide.StateUnreadable
		p.facts.state = &stateReading{outcome: stateUnreadable, reason: infrav1.StateInconsistentReason,
			detail: "the state Secret " + state.SecretName(p.Suffix) + " has no tfstate key yet while runner pod " + v.Pod + " holds the state lock; it may be mid-write"}
	case v.Holder == state.LockForeign:
		p.StateStatus = decide.StateUnreadable
		p.State = nil
		p.facts.state = &stateReading{outcome: stateUnreadable, reason: infrav1.StateLockedReason, detail: v.Message()}
		f.event(p, nil, corev1.EventTypeWarning, infrav1.StateLockedEvent, v.Message())
	}
	return nil
}

// backups copies a never-seen serial into a backup set and prunes old sets.
func (f *Flow) backups(ctx context.Context, p *Pass, readErr error) error {
	out, err := state.SyncBackups(ctx, f.Client, p.owner(), p.State, readErr, state.BackupOptions{
		Keep:     f.Options.StateBackups,
		Deleting: !p.Obj.GetDeletionTimestamp().IsZero(),
		Now:      p.Now,
	})
	kind := p.Kind
	if out.Taken != nil {
		metrics.StateBackup(kind, metrics.BackupTaken)
	}
	for range out.Pruned {
		metrics.StateBackup(kind, metrics.BackupPruned)
	}
	if out.Skipped {
		ctrl.LoggerFrom(ctx).Info("State not backed up", "reason", out.SkipReason)
		if err != nil {
			// A failed copy is counted each time it fails; the next pass
			// copies the serial again.
			metrics.StateBackup(kind, metrics.BackupSkipped)
		} else {
			// An unreadable state is skipped on every pass; it is counted
			// once, when StateReadable turns False (transitionMetrics).
			p.backupSkippedUnreadable = true
		}
	}
	if err != nil {
		return fmt.Errorf("failed to back up the state: %w", err)
	}
	if out.Taken != nil {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.StateBackedUpEvent, "Backed up state serial "+strconv.FormatUint(out.Taken.Serial, 10))
	}
	if out.Backups != nil || readErr == nil {
		p.Status().StateBackups = state.StatusBackups(out.Backups)
	}
	return nil
}

// adopt makes the object own the state of its newest successful apply or
// restore and records that apply's inputs hash on the base state Secret.
func (f *Flow) adopt(ctx context.Context, p *Pass) error {
	var newest *decide.JobRecord
	for i := range p.Records {
		r := &p.Records[i]
		if (r.Op != decide.OpApply && r.Op != decide.OpRestore) || r.Outcome() != decide.OutcomeSucceeded {
			continue
		}
		if newest == nil || r.Finished.After(newest.Finished) {
			newest = r
		}
	}
	if newest == nil || newest.InputsHash == "" {
		return nil
	}
	// An apply newer than the newest success failed: its state may not be
	// the applied inputs' any more, so the hash is not re-recorded.
	for _, r := range p.Records {
		if r.Op == decide.OpApply && r.Finished.After(newest.Finished) {
			return nil
		}
	}
	// state.Adopt records the hash on p.State too: compare before it.
	recorded := p.State.InputsHash
	patched, err := state.Adopt(ctx, f.Client, p.owner(), p.State, newest.InputsHash)
	if err != nil {
		return fmt.Errorf("failed to adopt the state: %w", err)
	}
	if len(patched) > 0 && recorded != newest.InputsHash {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.StateAdoptedEvent, "Adopted state serial "+strconv.FormatUint(p.State.Serial, 10)+" with inputs hash "+newest.InputsHash)
	}
	p.State.InputsHash = newest.InputsHash
	return nil
}
