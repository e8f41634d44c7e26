package decide

import (
	"slices"
	"time"
)

// Retry timing, compiled in (book: Retries and Backoff, "The delay").
const (
	// BackoffBase is the delay after the first failure.
	BackoffBase = time.Minute
	// BackoffCap is the longest delay, and the delay once the failure count
	// reaches the failed-Jobs history limit.
	BackoffCap = 10 * time.Minute
	// DefaultHistoryLimit is the default of both spec.jobs history limits.
	DefaultHistoryLimit = 3
)

// FailedLimit is the failed-Jobs history limit as backoff and the
// remediation cap read it: at least 1, because pruning always keeps the
// newest unresolved failure.
func FailedLimit(limit int) int {
	if limit < 1 {
		return 1
	}
	return limit
}

// BackoffDelay is the delay after n consecutive failures of an operation:
// min(1m × 2^(n-1), 10m), and the 10-minute cap straight away once n
// reaches the failed-Jobs history limit. No failures, no delay.
func BackoffDelay(n, failedLimit int) time.Duration {
	if n <= 0 {
		return 0
	}
	if n >= FailedLimit(failedLimit) || n > 4 {
		// 1m × 2^4 = 16m is already past the cap; stop shifting before it
		// could overflow.
		return BackoffCap
	}
	return min(BackoffBase<<(n-1), BackoffCap)
}

// Failures is an operation's run of counted failures since its newest
// success.
type Failures struct {
	// Count is the number of failures that count toward backoff, newer than
	// the op's newest success.
	Count int
	// Newest is when the newest of them finished (zero when Count is 0).
	Newest time.Time
}

// ConsecutiveFailures walks the object's finished Jobs of op newest first
// and counts the failures until it meets a success of that same op.
// OutcomeFailed counts; blocked and plan-changed Jobs are passed over
// without ending the walk. An interrupted Job alone is passed over too (a
// drain or an eviction is free), but interruptions in a row (at least
// InterruptedStreak of them, blocked and plan-changed Jobs between them
// passed over) all count like failures: a module that kills its own runner,
// or a pod that is always evicted, must not retry at once forever.
func ConsecutiveFailures(jobs []JobRecord, op Operation) Failures {
	h := summarize(jobs)
	return h.failures(op)
}

// InterruptedStreak is how many interrupted Jobs of an operation in a row
// start counting toward backoff.
const InterruptedStreak = 2

// BackoffUntil is when op may start again after its counted failures, or
// the zero time when it is not backing off.
func BackoffUntil(jobs []JobRecord, op Operation, failedLimit int) time.Time {
	f := ConsecutiveFailures(jobs, op)
	if f.Count == 0 {
		return time.Time{}
	}
	return f.Newest.Add(BackoffDelay(f.Count, failedLimit))
}

// RemediationFailures counts the failed apply Jobs (any apply, remediation
// or not) that finished after the last successful drift check, walking
// newest first and stopping at an apply success. Blocked, plan-changed and
// interrupted applies do not count.
func RemediationFailures(jobs []JobRecord, lastDriftCheck time.Time) int {
	h := summarize(jobs)
	return h.remediationFailures(lastDriftCheck)
}

// RemediationCapReached reports whether drift remediation has failed as
// many times since the last successful drift check as the failed-Jobs
// history keeps (at least 1). At the cap no more remediation starts until
// the next successful drift check.
func RemediationCapReached(jobs []JobRecord, lastDriftCheck time.Time, failedLimit int) bool {
	return RemediationFailures(jobs, lastDriftCheck) >= FailedLimit(failedLimit)
}

// RetryNumber is the retry number of a Job of op about to be recorded as
// finished: one plus the counted failures of op since its last success
// (captf_job_attempts). Pass the history without the Job itself.
func RetryNumber(jobs []JobRecord, op Operation) int {
	return ConsecutiveFailures(jobs, op).Count + 1
}

// opHistory summarises one operation's retained Jobs.
type opHistory struct {
	newest        int // index of the newest record, -1 when none
	newestSuccess int // index of the newest success, -1 when none
	newestFailure int // index of the newest counted failure newer than newestSuccess
	failures      int // counted failures newer than newestSuccess
	maxAttempt    int
}

// history indexes the retained Jobs once per decision, without copying or
// sorting them.
type history struct {
	jobs []JobRecord
	ops  [len(jobOps)]opHistory
}

func summarize(jobs []JobRecord) history {
	h := history{jobs: jobs}
	for i := range h.ops {
		h.ops[i] = opHistory{newest: -1, newestSuccess: -1, newestFailure: -1}
	}
	for i := range jobs {
		j := &jobs[i]
		k := opIndex(j.Op)
		if k < 0 {
			continue
		}
		o := &h.ops[k]
		if o.newest < 0 || newer(j, &jobs[o.newest]) {
			o.newest = i
		}
		if j.Outcome() == OutcomeSucceeded && (o.newestSuccess < 0 || newer(j, &jobs[o.newestSuccess])) {
			o.newestSuccess = i
		}
		o.maxAttempt = max(o.maxAttempt, j.Attempt)
	}
	var interrupted [len(jobOps)]int
	for i := range jobs {
		j := &jobs[i]
		k := opIndex(j.Op)
		if k < 0 {
			continue
		}
		o := &h.ops[k]
		if o.newestSuccess >= 0 && !newer(j, &jobs[o.newestSuccess]) {
			continue
		}
		switch j.Outcome() {
		case OutcomeFailed:
			o.countFailure(jobs, i)
		case OutcomeInterrupted:
			interrupted[k]++
		}
	}
	for k, n := range interrupted {
		if n >= InterruptedStreak {
			h.countInterruptedStreaks(k)
		}
	}
	return h
}

func (o *opHistory) countFailure(jobs []JobRecord, i int) {
	o.failures++
	if o.newestFailure < 0 || newer(&jobs[i], &jobs[o.newestFailure]) {
		o.newestFailure = i
	}
}

// countInterruptedStreaks counts, as failures, the interrupted Jobs of the
// op at index k newer than its newest success that stand in a row of at
// least InterruptedStreak. Rare (at least two interruptions since the last
// success), so it may sort.
func (h *history) countInterruptedStreaks(k int) {
	o := &h.ops[k]
	var idx []int
	for i := range h.jobs {
		j := &h.jobs[i]
		if opIndex(j.Op) != k || (o.newestSuccess >= 0 && !newer(j, &h.jobs[o.newestSuccess])) {
			continue
		}
		if out := j.Outcome(); out == OutcomeFailed || out == OutcomeInterrupted {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		if newer(&h.jobs[a], &h.jobs[b]) {
			return -1
		}
		return 1
	})
	var run []int
	flush := func() {
		if len(run) >= InterruptedStreak {
			for _, i := range run {
				o.countFailure(h.jobs, i)
			}
		}
		run = run[:0]
	}
	for _, i := range idx {
		if h.jobs[i].Outcome() == OutcomeInterrupted {
			run = append(run, i)
			continue
		}
		flush()
	}
	flush()
}

func (h *history) op(op Operation) *opHistory {
	return &h.ops[opIndex(op)]
}

func (h *history) failures(op Operation) Failures {
	if opIndex(op) < 0 {
		return Failures{}
	}
	o := h.op(op)
	if o.failures == 0 {
		return Failures{}
	}
	return Failures{Count: o.failures, Newest: h.jobs[o.newestFailure].Finished}
}

// newest returns the newest record of op, or nil.
func (h *history) newest(op Operation) *JobRecord {
	if i := h.op(op).newest; i >= 0 {
		return &h.jobs[i]
	}
	return nil
}

// newestSuccess returns the newest successful record of op, or nil.
func (h *history) newestSuccess(op Operation) *JobRecord {
	if i := h.op(op).newestSuccess; i >= 0 {
		return &h.jobs[i]
	}
	return nil
}

// lastApplyFailed is step 6's test: the newest finished apply, passing over
// drift remediations that did not succeed (LastApplyFailed ignores them),
// failed or was interrupted. Blocked and plan-changed applies wait for a
// person instead, and a success means the apply converged.
func (h *history) lastApplyFailed() bool {
	var pick *JobRecord
	for i := range h.jobs {
		j := &h.jobs[i]
		if j.Op != OpApply || (j.DriftRemediation && j.Outcome() != OutcomeSucceeded) {
			continue
		}
		if pick == nil || newer(j, pick) {
			pick = j
		}
	}
	if pick == nil {
		return false
	}
	switch pick.Outcome() {
	case OutcomeFailed, OutcomeInterrupted:
		return true
	}
	return false
}

func (h *history) remediationFailures(lastDriftCheck time.Time) int {
	success := h.newestSuccess(OpApply)
	n := 0
	for i := range h.jobs {
		j := &h.jobs[i]
		if j.Op != OpApply || j.Outcome() != OutcomeFailed || !j.Finished.After(lastDriftCheck) {
			continue
		}
		if success != nil && !newer(j, success) {
			continue
		}
		n++
	}
	return n
}
