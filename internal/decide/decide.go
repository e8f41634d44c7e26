package decide

import (
	"fmt"
	"time"
)

// Decide picks the object's next operation, the reason for it and when to
// look again. It reads nothing but the Observation and never fails on a
// valid one; an invalid Observation (a caller error) returns an error
// naming the offending field and a Decision that does nothing.
//
// The order of the rules is described in the package documentation.
func Decide(obs Observation) (Decision, error) {
	if err := obs.Validate(); err != nil {
		return Decision{Op: OpNone}, err
	}
	d := newDecider(&obs)
	dec := d.decide()
	dec.DriftRequestAnswered = d.driftRequestAnswered()
	return dec, nil
}

// Validate reports the first field of the Observation that Decide cannot
// read.
func (o *Observation) Validate() error {
	switch {
	case !o.Kind.Valid():
		return fmt.Errorf("observation kind %q is not TerraformCluster, TerraformMachine or TerraformMachinePool", o.Kind)
	case o.Name == "":
		return fmt.Errorf("observation of %s has no object name", o.Kind)
	case o.Now.IsZero():
		return fmt.Errorf("observation of %s %s has no time (Now)", o.Kind, o.Name)
	}
	switch o.State {
	case StateNotFound, StateRead, StateUnreadable:
	default:
		return fmt.Errorf("observation of %s %s: state status %q is not NotFound, Read or Unreadable", o.Kind, o.Name, o.State)
	}
	switch o.Inputs {
	case InputsBuilt, InputsNotRendered, InputsWaiting, InputsTooLarge:
	default:
		return fmt.Errorf("observation of %s %s: inputs status %q is not Built, NotRendered, Waiting or TooLarge", o.Kind, o.Name, o.Inputs)
	}
	switch o.ApplyPolicy {
	case "", ApplyAutomatic, ApplyManual:
	default:
		return fmt.Errorf("observation of %s %s: applyPolicy %q is not Automatic or Manual", o.Kind, o.Name, o.ApplyPolicy)
	}
	switch o.Drift.Action {
	case "", DriftReport, DriftRemediate:
	default:
		return fmt.Errorf("observation of %s %s: drift action %q is not Report or Remediate", o.Kind, o.Name, o.Drift.Action)
	}
	if !o.Health.Valid() {
		return fmt.Errorf("observation of %s %s: health state %q is not in the module contract's enum", o.Kind, o.Name, o.Health)
	}
	if o.History.Successful < 0 || o.History.Failed < 0 {
		return fmt.Errorf("observation of %s %s: history limits %d/%d are negative", o.Kind, o.Name, o.History.Successful, o.History.Failed)
	}
	for i := range o.Jobs {
		j := &o.Jobs[i]
		if !j.Op.IsJob() {
			return fmt.Errorf("observation of %s %s: Job %q has operation %q, not a Job operation", o.Kind, o.Name, j.Name, j.Op)
		}
		if j.Attempt < 0 {
			return fmt.Errorf("observation of %s %s: Job %q has negative attempt %d", o.Kind, o.Name, j.Name, j.Attempt)
		}
	}
	return nil
}

// decider holds one decision's derived facts.
type decider struct {
	o           *Observation
	h           history
	failedLimit int
	// Times and the drift finding, each the newer of the Observation's
	// status and the retained Jobs, so a Job bookkept in this very pass is
	// already accounted for.
	lastApply      time.Time
	lastRefresh    time.Time
	lastDriftCheck time.Time
	driftFound     bool
}

func newDecider(o *Observation) decider {
	d := decider{o: o, h: summarize(o.Jobs), failedLimit: FailedLimit(o.History.Failed)}
	d.lastApply, d.lastRefresh, d.lastDriftCheck, d.driftFound = o.LastApply, o.LastRefresh, o.LastDriftCheck, o.DriftFound
	if j := d.h.newestSuccess(OpApply); j != nil && j.Finished.After(d.lastApply) {
		d.lastApply = j.Finished
	}
	if j := d.h.newestSuccess(OpRefresh); j != nil && j.Finished.After(d.lastRefresh) {
		d.lastRefresh = j.Finished
	}
	if j := d.h.newestSuccess(OpDrift); j != nil && j.Finished.After(d.lastDriftCheck) {
		d.lastDriftCheck = j.Finished
		d.driftFound = j.DriftDetected
	}
	return d
}

func wait(r Reason, after time.Duration) Decision {
	return Decision{Op: OpNone, Reason: r, RequeueAfter: max(after, 0)}
}

func (d *decider) decide() Decision {
	o := d.o
	switch {
	case o.JobCacheStale:
		return wait(ReasonJobCacheStale, RequeueJobCacheStale)
	case o.ActiveJob != nil:
		return wait(ReasonJobRunning, RequeueJobRunning)
	case o.Paused:
		return wait(ReasonPaused, 0)
	}

	lost := d.stateLost()
	if o.Deleting && d.destroyed() {
		// The destroy succeeded: clean up and drop the finalizer, whatever
		// the (now empty, or already deleted) state says.
		return Decision{Op: OpDropFinalizer, Reason: ReasonDestroySucceeded}
	}
	if o.Deleting {
		// Deleting with no state and nothing ever applied: nothing to
		// destroy, and no credentials or owner needed to drop the finalizer.
		if o.State == StateNotFound && !lost {
			return Decision{Op: OpDropFinalizer, Reason: ReasonNoStateToDestroy}
		}
		// Deleting with lost state, abandoned by the operator. While a
		// restore is requested too, the restore wins: it keeps the
		// infrastructure tracked, and removing the restore annotation is
		// all it takes to abandon instead.
		if lost && o.UID != "" && o.AbandonInfrastructure == o.UID && !d.restoreWanted(lost) {
			return Decision{Op: OpDropFinalizer, Reason: ReasonInfrastructureAbandoned}
		}
	} else if o.OwnerWait != "" {
		return wait(Reason(o.OwnerWait), RequeueNotReady)
	}
	if o.CredentialsWait != "" {
		return wait(Reason(o.CredentialsWait), RequeueNotReady)
	}

	// 1. A requested restore.
	if d.restoreWanted(lost) {
		if dec, ok := d.restore(); ok {
			return dec
		}
	}

	// 2. Being deleted.
	if o.Deleting {
		switch {
		case lost:
			return wait(ReasonStateLost, RequeueStateUnreadable)
		case o.Caps.HasMembers && o.DependentsExist:
			return wait(ReasonDependentsExist, RequeueNotReady)
		case o.DurableInputsMissing && (!o.Caps.MutableInputs || o.Inputs != InputsBuilt):
			// An immutable kind (a machine) has no live spec to fall back
			// to.
			return wait(ReasonDurableInputsMissing, RequeueFixInput)
		case o.DurableInputsMissing:
			// A mutable kind (a cluster or pool) destroys with its current
			// inputs when the durable ones are gone (Job Inputs).
			return d.start(OpDestroy, ReasonDeleting, jobOptions{})
		}
		return d.start(OpDestroy, ReasonDeleting, jobOptions{durable: true})
	}

	// No plan, apply, drift or refresh runs on a state that is lost or
	// cannot be read.
	if lost {
		return wait(ReasonStateLost, RequeueStateUnreadable)
	}
	if o.State == StateUnreadable {
		return wait(ReasonStateUnreadable, RequeueStateUnreadable)
	}
	// A module known to lack a contract output is not run again on the same
	// inputs (Module Contract, "Null semantics").
	if d.outputsMissing() {
		return wait(ReasonOutputsMissing, RequeueFixInput)
	}

	// 3 to 7, the apply reasons (applyReason).
	if r, ok := d.applyReason(); ok {
		return d.apply(r)
	}

	// The refresh, membership and drift schedule.
	return d.schedule(0, ReasonScheduled)
}

// destroyed: a destroy Job succeeded and no apply succeeded after it.
func (d *decider) destroyed() bool {
	destroy := d.h.newestSuccess(OpDestroy)
	if destroy == nil {
		return false
	}
	apply := d.h.newestSuccess(OpApply)
	return apply == nil || newer(destroy, apply)
}

// stateLost: an object that counts as applied has no state, or (an
// immutable kind, a TerraformMachine) an apply of it succeeded and its
// state lost the inputs hash every successful apply records. A machine
// whose first applies only failed has a state without the hash, backed up
// like any new serial, and retries (Retries and Backoff:
// StateWithoutInputsHash).
func (d *decider) stateLost() bool {
	o := d.o
	switch {
	case o.State == StateNotFound:
		return o.EverApplied || o.Provisioned
	case !o.Caps.MutableInputs && o.State == StateRead && o.StateInputsHash == "":
		return o.SucceededApply || o.Provisioned
	}
	return false
}

// restoreWanted: a restore request is honoured unless the object is being
// deleted. The one exception is a deleting object whose state is lost: it
// cannot be destroyed without its state, so the restore runs first and the
// destroy follows (book: Lifecycle Walkthroughs, "Lost state").
func (d *decider) restoreWanted(lost bool) bool {
	return d.o.Restore != nil && (!d.o.Deleting || lost)
}

// restore decides a requested restore. ok is false when the request was
// already carried out successfully and the order continues past step 1 (the
// reconcile removes the annotation).
//
// A failed restore is not retried for the same serial. A serial counts as
// tried when status.lastRestoredSerial names it and the newest retained
// restore Job of that serial failed; removing the annotation (which clears
// lastRestoredSerial) and setting it again, or deleting the failed Job,
// allows a new attempt. An interrupted restore counts as not tried. While a
// failed restore's annotation stays, nothing else runs against the state it
// asked to replace.
func (d *decider) restore() (Decision, bool) {
	r := d.o.Restore
	if !r.BackupFound || r.Serial <= 0 {
		return wait(ReasonRestoreBackupNotFound, RequeueFixInput), true
	}
	if d.o.LastRestoredSerial == r.Serial {
		var last *JobRecord
		for i := range d.h.jobs {
			j := &d.h.jobs[i]
			if j.Op == OpRestore && j.RestoreSerial == r.Serial && (last == nil || newer(j, last)) {
				last = j
			}
		}
		if last != nil {
			switch last.Outcome() {
			case OutcomeSucceeded:
				return Decision{}, false
			case OutcomeInterrupted:
			default:
				return wait(ReasonRestoreFailed, RequeueFixInput), true
			}
		}
	}
	opts := jobOptions{restoreSerial: r.Serial, durable: d.o.Inputs != InputsBuilt}
	if opts.durable && d.o.DurableInputsMissing {
		return wait(ReasonDurableInputsMissing, RequeueFixInput), true
	}
	return d.start(OpRestore, ReasonRestoreRequested, opts), true
}

// applyReason walks steps 3 to 7 of the order.
func (d *decider) applyReason() (Reason, bool) {
	o := d.o
	switch {
	case o.State == StateNotFound:
		// 3. No state yet.
		return ReasonNoState, true
	case o.StateInputsHash == "":
		// 4. State without an inputs hash.
		return ReasonStateWithoutInputsHash, true
	case !o.Caps.MutableInputs:
		// Steps 5 to 7 are a mutable kind's.
		return "", false
	case o.Inputs == InputsBuilt && o.CurrentInputsHash != o.StateInputsHash:
		// 5. A mutable kind's changed inputs.
		return ReasonInputsChanged, true
	case d.h.lastApplyFailed():
		// 6. A mutable kind's failed newest apply.
		return ReasonLastApplyFailed, true
	case o.InterruptedApply:
		// An apply Job deleted while it ran may have applied part of its
		// change: an apply of the current inputs stays due (book: Retries
		// and Backoff). It sits with step 6, the other "may have changed
		// reality without recording it" case.
		return ReasonApplyInterrupted, true
	case d.remediationDue():
		// 7. Drift found with action Remediate.
		return ReasonDriftRemediation, true
	}
	return "", false
}

// remediationDue is step 7: drift found by the last successful check, not
// yet resolved by an apply that succeeded after it, action Remediate, and
// fewer failed applies since that check than the failed-Jobs limit.
func (d *decider) remediationDue() bool {
	if EffectiveDriftAction(d.o.Caps, d.o.Drift.Action) != DriftRemediate || !d.driftFound {
		return false
	}
	if d.lastApply.After(d.lastDriftCheck) {
		return false
	}
	return d.h.remediationFailures(d.lastDriftCheck) < d.failedLimit
}

// apply places the wait for a plan, an approval or the destructive-plan
// guard, then starts the apply.
func (d *decider) apply(r Reason) Decision {
	o := d.o
	switch o.Inputs {
	case InputsBuilt:
	case InputsWaiting:
		if o.InputsReason != "" {
			return wait(Reason(o.InputsReason), RequeueNotReady)
		}
		return wait(ReasonInputsNotRendered, RequeueNotReady)
	case InputsTooLarge:
		return wait(ReasonInputsTooLarge, RequeueFixInput)
	default:
		return wait(ReasonInputsNotRendered, RequeueNotReady)
	}
	opts := jobOptions{remediation: r == ReasonDriftRemediation}
	// The first apply (no state yet) is never gated: there is nothing to
	// break. Neither gate exists for a kind that does not guard its applies
	// (outside TerraformCluster).
	if o.Caps.GuardsApplies && r != ReasonNoState {
		if o.ApplyPolicy == ApplyManual {
			p := o.Plan
			switch {
			case p == nil || p.InputsHash != o.CurrentInputsHash:
				return d.start(OpPlan, r, jobOptions{})
			case p.NoChanges || (o.ApprovePlan != "" && o.ApprovePlan == p.PlanHash):
				opts.expectPlan = p.PlanHash
			default:
				return wait(ReasonPlanAwaitingApproval, RequeueApprovalWait)
			}
		} else if d.blocked() {
			// A blocked drift remediation keeps drift and health checks
			// running; a blocked input change pauses them, since they
			// would render the unapplied inputs.
			if r == ReasonDriftRemediation {
				return d.schedule(RequeueApprovalWait, ReasonDestructivePlanBlocked)
			}
			return wait(ReasonDestructivePlanBlocked, RequeueApprovalWait)
		}
	}
	return d.start(OpApply, r, opts)
}

// blocked: the newest apply is blocked on a destructive plan of the current
// inputs hash, and no approval names that hash.
func (d *decider) blocked() bool {
	o := d.o
	j := d.h.newest(OpApply)
	return j != nil && j.Outcome() == OutcomeBlocked && j.InputsHash == o.CurrentInputsHash &&
		o.ApproveDestructivePlan != o.CurrentInputsHash
}

// candidate is one entry of the schedule.
type candidate struct {
	reason Reason
	op     Operation
	due    time.Time
}

// schedule walks the refresh, membership and drift schedule in its order
// and starts the first one due. When none is due it requeues at the soonest,
// bounded by limit when limit > 0, with idle as the reason.
func (d *decider) schedule(limit time.Duration, idle Reason) Decision {
	o := d.o
	var cands [6]candidate
	n := 0
	add := func(r Reason, op Operation, due time.Time) {
		cands[n] = candidate{r, op, due}
		n++
	}
	lastSample := later(d.lastRefresh, d.lastDriftCheck)
	base := later(lastSample, d.lastApply)
	jittered := func(from time.Time, every time.Duration) time.Time {
		return from.Add(every + Jitter(o.UID, every))
	}

	// 1. The post-apply refresh: a successful apply not yet followed by a
	// refresh (machine, pool).
	if o.Caps.RefreshesAfterApply && !d.lastApply.IsZero() && lastSample.Before(d.lastApply) {
		add(ReasonPostApplyRefresh, OpRefresh, d.lastApply)
	}
	if o.Caps.RefreshesMembership {
		// 2. Membership converging, or health pending: every 30 s flat (or
		// the membership interval when shorter).
		if o.MembershipConverging || o.Health == HealthPending {
			r := ReasonMembershipConverging
			if !o.MembershipConverging {
				r = ReasonHealthPending
			}
			add(r, OpRefresh, jittered(base, MembershipConvergeDelay(o.MembershipRefreshIntervalSeconds)))
		}
	} else if o.Health == HealthPending {
		// 3. Pending health (cluster, machine): 30s doubling to 5m.
		add(ReasonHealthPending, OpRefresh, jittered(base, PendingRefreshDelay(o.PendingRefreshes)))
	}
	// 4. The membership refresh interval of a pool.
	if o.Caps.RefreshesMembership {
		add(ReasonMembershipRefreshDue, OpRefresh, jittered(base, MembershipRefreshInterval(o.MembershipRefreshIntervalSeconds)))
	}
	// 5. The health-check interval of a remediated machine.
	if o.Caps.Remediated && o.Remediation.AnnotateMachine && o.Provisioned {
		add(ReasonHealthCheckDue, OpRefresh, jittered(base, HealthCheckInterval(o.Remediation.HealthCheckIntervalSeconds)))
	}
	// 6. The drift interval. The first check one interval after the last
	// successful apply, later ones one interval after the previous check.
	// It is not held back until the provisioned latch: an applied object
	// whose outputs are still pending would otherwise never be read again.
	if di := EffectiveDriftInterval(o.Caps, o.Drift); di.Enabled {
		from := d.lastDriftCheck
		if from.IsZero() {
			from = d.lastApply
		}
		due := jittered(from, di.Interval)
		if d.driftRequested() {
			// An operator's request makes the check due now; it keeps
			// its place in the schedule and every rule above it.
			due = o.Now
		}
		add(ReasonDriftDue, OpDrift, due)
	}

	var soonest time.Time
	for i := range n {
		c := &cands[i]
		if !c.due.After(o.Now) {
			return d.startScheduled(c.op, c.reason)
		}
		if soonest.IsZero() || c.due.Before(soonest) {
			soonest = c.due
		}
	}
	// 7. Otherwise, requeue at whichever is soonest.
	var after time.Duration
	if !soonest.IsZero() {
		after = soonest.Sub(o.Now)
	}
	if limit > 0 && (after == 0 || after > limit) {
		after = limit
	}
	if after == 0 && idle == ReasonScheduled {
		return wait(ReasonUpToDate, 0)
	}
	return wait(idle, after)
}

// driftRequested: captf.io/drift-check-requested asks for a check newer
// than the last one, on an object an apply succeeded for (a drift check
// plans against an applied state). Drift checks off (intervalSeconds 0)
// stay off: the book's "turns drift checks off entirely" leaves no check
// for a request to start, and driftRequestAnswered removes it.
func (d *decider) driftRequested() bool {
	o := d.o
	return !o.DriftCheckRequested.IsZero() && o.DriftCheckRequested.After(d.lastDriftCheck) && !d.lastApply.IsZero()
}

// driftRequestAnswered: a drift request is present and nothing is left to
// run for it: a check finished after it, or drift checks are off.
func (d *decider) driftRequestAnswered() bool {
	o := d.o
	if o.DriftCheckRequested.IsZero() {
		return false
	}
	return !o.DriftCheckRequested.After(d.lastDriftCheck) || !EffectiveDriftInterval(o.Caps, o.Drift).Enabled
}

// startScheduled starts a refresh or drift on the inputs it runs: a
// mutable kind (a cluster or pool) on its freshly rendered inputs, falling
// back to the durable ones when they could not be built; an immutable one
// (a machine) always on its durable inputs.
func (d *decider) startScheduled(op Operation, r Reason) Decision {
	o := d.o
	durable := !o.Caps.MutableInputs || o.Inputs != InputsBuilt
	if durable && o.DurableInputsMissing {
		return wait(ReasonDurableInputsMissing, RequeueFixInput)
	}
	return d.start(op, r, jobOptions{durable: durable})
}

// jobOptions are the per-operation details of a Job to start.
type jobOptions struct {
	durable       bool
	remediation   bool
	expectPlan    string
	restoreSerial int64
}

// start starts a Job of op unless the Job policy is invalid or op is
// backing off, and fills in everything the reconcile needs to create it.
func (d *decider) start(op Operation, r Reason, opts jobOptions) Decision {
	o := d.o
	if o.JobPolicyInvalid {
		return wait(ReasonJobPolicyInvalid, RequeueFixInput)
	}
	// A restore counts toward no backoff: a failure of it is never retried
	// for the same serial at all.
	if op != OpRestore {
		if f := d.h.failures(op); f.Count > 0 {
			if until := f.Newest.Add(BackoffDelay(f.Count, d.failedLimit)); o.Now.Before(until) {
				return wait(r.Backoff(), until.Sub(o.Now))
			}
		}
	}

	p := &JobPlan{
		Attempt:          d.h.nextAttempt(op),
		DurableInputs:    opts.durable,
		DriftRemediation: opts.remediation,
		ExpectPlanHash:   opts.expectPlan,
		RestoreSerial:    opts.restoreSerial,
	}
	p.InputsHash = o.CurrentInputsHash
	if opts.durable {
		p.InputsHash = o.DurableInputsHash
		if p.InputsHash == "" {
			p.InputsHash = o.StateInputsHash
		}
	}
	// Ticks: refresh and drift change theirs each time the operation last
	// succeeded; a drift remediation carries the drift check it answers; a
	// restore carries its serial.
	switch {
	case op == OpRefresh:
		p.Tick = unixOrZero(d.lastRefresh)
	case op == OpDrift:
		p.Tick = unixOrZero(d.lastDriftCheck)
	case op == OpApply && opts.remediation:
		p.Tick = unixOrZero(d.lastDriftCheck)
	case op == OpRestore:
		p.Tick = opts.restoreSerial
	}
	if op == OpApply && o.Caps.GuardsApplies {
		// A plan approval covers the plan's deletes; without one the
		// destructive-plan guard is armed.
		p.GuardDeletes = p.ExpectPlanHash == ""
		if p.GuardDeletes && o.ApproveDestructivePlan != "" && o.ApproveDestructivePlan == p.InputsHash {
			p.AllowDeletesHash = o.ApproveDestructivePlan
		}
	}
	p.Name = JobName(o.Kind, o.Name, op, p.Attempt, p.InputsHash, p.Tick)
	return Decision{Op: op, Reason: r, RequeueAfter: RequeueJobRunning, Job: p}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
