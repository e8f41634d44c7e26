package lifecycle

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// This file decides when the flow writes the captf_* series that are not
// plain per-object gauges (reference-facts §3): what a finished Job adds
// when it is bookkept, and which condition transitions a pass made.
// Failure counters count transitions, not reconciles: a pass compares the
// conditions the object had when the pass read it with the ones it
// patched, in transitionMetrics and nowhere else.

// enteredFalse reports whether a condition turned False in a pass: it is
// False now and was not False with the same reason before (unset, True,
// Unknown, or False for another reason). A condition that stays False with
// one reason for many passes enters False once.
func enteredFalse(before, after *metav1.Condition) bool {
	if after == nil || after.Status != metav1.ConditionFalse {
		return false
	}
	return before == nil || before.Status != metav1.ConditionFalse || before.Reason != after.Reason
}

// stateErrorLabels maps StateReadable's False reasons onto the reason label
// of captf_state_read_errors_total. A corrupt state includes one of an
// unsupported version (the reader reports both as StateCorrupt).
var stateErrorLabels = map[string]string{
	infrav1.StateInconsistentReason: metrics.StateErrorInconsistent,
	infrav1.StateEncryptedReason:    metrics.StateErrorEncrypted,
	infrav1.StateCorruptReason:      metrics.StateErrorCorrupt,
	infrav1.StateLostReason:         metrics.StateErrorLost,
	infrav1.StateLockedReason:       metrics.StateErrorLocked,
}

// stateErrorLabel is the reason label of a StateReadable reason, "" for a
// reason that is not an unreadable state.
func stateErrorLabel(reason string) string { return stateErrorLabels[reason] }

// transitions are the counters one pass's condition changes add to.
type transitions struct {
	// stateReadError is the captf_state_read_errors_total reason, "" for
	// none.
	stateReadError string
	// outputsInvalid is the captf_outputs_invalid_total reason, "" for
	// none.
	outputsInvalid string
	// identityDenied is the captf_identity_denied_total reason, "" for
	// none.
	identityDenied string
	// backupSkipped: a state turned unreadable in this pass was not backed
	// up (captf_state_backups_total{result="skipped"}, once per
	// transition).
	backupSkipped bool
	// restoreNotFound: a restore request names no backup
	// (captf_state_restores_total{result="not_found"}).
	restoreNotFound bool
}

// passTransitions compares the conditions of a pass before and after it.
// unreadableSkipped says the backup step skipped a state it could not read.
func passTransitions(before, after func(string) *metav1.Condition, unreadableSkipped bool) transitions {
	var t transitions
	sb, sa := before(infrav1.StateReadableCondition), after(infrav1.StateReadableCondition)
	if enteredFalse(sb, sa) {
		t.stateReadError = stateErrorLabel(sa.Reason)
		t.backupSkipped = unreadableSkipped && t.stateReadError != ""
	}
	if ob, oa := before(infrav1.OutputsValidCondition), after(infrav1.OutputsValidCondition); enteredFalse(ob, oa) {
		t.outputsInvalid = oa.Reason
	}
	if rb, ra := before(infrav1.RestoreJobSucceededCondition), after(infrav1.RestoreJobSucceededCondition); enteredFalse(rb, ra) {
		t.restoreNotFound = ra.Reason == infrav1.RestoreBackupNotFoundReason
	}
	if ia := after(infrav1.IdentityAllowedCondition); ia != nil {
		t.identityDenied = identity.DeniedTransition(before(infrav1.IdentityAllowedCondition), identity.Verdict{Status: ia.Status, Reason: ia.Reason, Message: ia.Message})
	}
	return t
}

// transitionMetrics counts the transitions the pass made; it runs once the
// status patch holding them succeeded, so a failed patch counts nothing
// and the next pass sees the same transition again.
func (f *Flow) transitionMetrics(p *Pass) {
	kind := p.Kind
	t := passTransitions(p.Before, func(c string) *metav1.Condition { return condition(p, c) }, p.backupSkippedUnreadable)
	if t.stateReadError != "" {
		metrics.StateReadError(kind, t.stateReadError)
	}
	if t.backupSkipped {
		metrics.StateBackup(kind, metrics.BackupSkipped)
	}
	if t.outputsInvalid != "" {
		metrics.OutputsInvalid(kind, t.outputsInvalid)
	}
	if t.identityDenied != "" {
		metrics.IdentityDenied(t.identityDenied)
	}
	if t.restoreNotFound {
		metrics.StateRestore(kind, "not_found")
	}
}

// finishedJobCounts are the series a finished Job adds beyond
// captf_jobs_total and captf_job_duration_seconds.
type finishedJobCounts struct {
	// steps are the runner steps and their durations, as status.lastRun
	// lists them.
	steps []stepDuration
	// queued is the time from the Job's creation to its source container's
	// start; hasQueued is false when the start is unknown.
	queued    time.Duration
	hasQueued bool
	// attempts is the retry number of a succeeded Job (0 otherwise).
	attempts int
	// changes are an apply's or destroy's summary counts by action.
	changes map[string]int
	// drift are a drift Job's detected add/change/destroy counts.
	drift map[string]int
	// forceUnlocked: the runner cleared a stale state lock.
	forceUnlocked bool
}

type stepDuration struct {
	name string
	d    time.Duration
}

// countFinishedJob works out what a finished Job adds, from the Job, its
// newest pod (nil when gone), its classification and the object's finished
// Jobs that are older than it (history, without the Job itself).
func countFinishedJob(job *batchv1.Job, pod *corev1.Pod, op infrav1.Operation, c *jobs.Classification, history []decide.JobRecord) finishedJobCounts {
	var out finishedJobCounts
	for _, s := range c.Result.LastRun.Steps {
		out.steps = append(out.steps, stepDuration{name: s.Name, d: time.Duration(s.DurationMilliseconds) * time.Millisecond})
	}
	if start, ok := sourceStarted(pod); ok {
		if q := start.Sub(job.CreationTimestamp.Time); q >= 0 {
			out.queued, out.hasQueued = q, true
		}
	}
	succeeded := c.Outcome == jobs.OutcomeSucceeded
	if succeeded {
		out.attempts = decide.RetryNumber(history, decide.Operation(op))
	}
	if ch := c.Result.Changes; ch != nil && (op == infrav1.OperationApply || op == infrav1.OperationDestroy) {
		out.changes = map[string]int{"add": ch.Add, "change": ch.Change, "destroy": ch.Destroy, "import": ch.Import}
	}
	if d := c.Result.LastRun.Drift; succeeded && op == infrav1.OperationDrift && c.Result.DriftDetected && d != nil {
		out.drift = map[string]int{"add": int(deref(d.Add)), "change": int(deref(d.Change)), "destroy": int(deref(d.Destroy))}
	}
	out.forceUnlocked = forceUnlocked(c.Result)
	return out
}

// sourceStarted is when the pod's source container started (running or
// terminated); false when the pod is gone or the container never started.
func sourceStarted(pod *corev1.Pod) (time.Time, bool) {
	if pod == nil {
		return time.Time{}, false
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.Name != jobs.SourceContainer {
			continue
		}
		switch {
		case cs.State.Running != nil && !cs.State.Running.StartedAt.IsZero():
			return cs.State.Running.StartedAt.Time, true
		case cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero():
			return cs.State.Terminated.StartedAt.Time, true
		}
	}
	return time.Time{}, false
}

// forceUnlocked reports whether the result document says the runner
// force-unlocked the state: its force-unlock step exited 0. A lock another
// holder had already released is accepted by the runner with a non-zero
// exit, and is not counted.
func forceUnlocked(r jobs.Result) bool {
	if r.Document != nil {
		for _, s := range r.Document.Steps {
			if s.Name == "force-unlock" && s.Exit == 0 {
				return true
			}
		}
		return false
	}
	for _, s := range r.LastRun.Steps {
		if s.Name == "force-unlock" && s.ExitCode == 0 {
			return true
		}
	}
	return false
}

// finishedJobMetrics records what countFinishedJob found.
func (f *Flow) finishedJobMetrics(p *Pass, job *batchv1.Job, op infrav1.Operation, c *jobs.Classification) {
	kind := p.Kind
	n := countFinishedJob(job, p.pods[job.Name], op, c, p.Records)
	for _, s := range n.steps {
		metrics.JobStep(kind, string(op), s.name, s.d)
	}
	if n.hasQueued {
		metrics.JobQueued(kind, string(op), n.queued)
	}
	if n.attempts > 0 {
		metrics.JobAttempts(kind, string(op), n.attempts)
	}
	for action, v := range n.changes {
		metrics.ResourcesChanged(kind, string(op), action, v)
	}
	for action, v := range n.drift {
		metrics.DriftResources(kind, action, v)
	}
	if n.forceUnlocked {
		metrics.LockForceUnlocked(kind)
		f.event(p, job, corev1.EventTypeWarning, infrav1.ForceUnlockedEvent, "Job "+job.Name+" force-unlocked a stale state lock")
	}
}

// scheduled reports whether op runs on a schedule for the object, which is
// when its captf_last_success_timestamp_seconds series is exported: drift
// while the effective drift interval is on (driftOn, as the decide step
// found it); refresh for a kind that refreshes its membership (a pool) and
// for a provisioned remediated kind (a machine) that annotates its Machine
// (its health check). Other operations always export theirs.
func scheduled(caps infrav1.Capabilities, op decide.Operation, driftOn, annotateMachine, provisioned bool) bool {
	switch op {
	case decide.OpDrift:
		return driftOn
	case decide.OpRefresh:
		return caps.RefreshesMembership || (caps.Remediated && annotateMachine && provisioned)
	}
	return true
}

// scheduleMetrics removes the drift and refresh last-success series of an
// object whose schedule for that operation is off, on a pass that decided
// (the decide step found the drift schedule).
func (f *Flow) scheduleMetrics(p *Pass) {
	if p.driftOn == nil {
		return
	}
	kind, ns, name := p.Kind, p.Obj.GetNamespace(), p.Obj.GetName()
	annotate := f.Adapter.Fields(p.Obj).AnnotateMachine
	for _, op := range []decide.Operation{decide.OpDrift, decide.OpRefresh} {
		if !scheduled(p.Obj.Capabilities(), op, *p.driftOn, annotate, p.Provisioned()) {
			metrics.DeleteLastSuccess(kind, ns, name, string(op))
		}
	}
}
