package decide

import (
	"fmt"
	"testing"
	"time"
)

func TestBackoffDelayLimitTables(t *testing.T) {
	// Book: Retries and Backoff, "The delay": delay after failure 1..5.
	tables := []struct {
		limits []int
		delays []time.Duration
	}{
		{[]int{0, 1}, []time.Duration{10 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute}},
		{[]int{3}, []time.Duration{time.Minute, 2 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute}},
		{[]int{5}, []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute}},
	}
	for _, tb := range tables {
		for _, limit := range tb.limits {
			for i, want := range tb.delays {
				n := i + 1
				name := fmt.Sprintf("backoff/limit_%d/after_%d_failures_is_%s", limit, n, compactDur(want))
				t.Run(name, func(t *testing.T) {
					if got := BackoffDelay(n, limit); got != want {
						t.Fatalf("BackoffDelay(%d, %d) = %v, want %v", n, limit, got, want)
					}
				})
			}
		}
	}
	for _, c := range []struct {
		name     string
		n, limit int
		want     time.Duration
	}{
		{"backoff/no_failures_no_delay", 0, 3, 0},
		{"backoff/min_of_1m_doubling_and_10m_below_a_high_limit", 5, 100, 10 * time.Minute},
		{"backoff/4_failures_below_a_high_limit_is_8m", 4, 100, 8 * time.Minute},
		{"backoff/a_huge_count_is_the_cap_without_overflow", 1 << 40, 1 << 50, 10 * time.Minute},
		{"backoff/a_negative_count_is_no_delay", -3, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := BackoffDelay(c.n, c.limit); got != c.want {
				t.Fatalf("BackoffDelay(%d, %d) = %v, want %v", c.n, c.limit, got, c.want)
			}
		})
	}
}

func TestOutcomeCounting(t *testing.T) {
	// Book: Retries and Backoff, "Counting failures".
	for _, c := range []struct {
		name string
		job  JobRecord
		want Outcome
	}{
		{"counts/failed_a_step_failed_counts", JobRecord{Op: OpApply}, OutcomeFailed},
		{"counts/killed_by_activeDeadlineSeconds_counts", JobRecord{Op: OpApply, DeadlineExceeded: true}, OutcomeFailed},
		{"counts/deadline_counts_even_if_the_runner_reported_interrupted", JobRecord{Op: OpDrift, DeadlineExceeded: true, Interrupted: true}, OutcomeFailed},
		{"counts/stopped_from_outside_drain_eviction_deletion_does_not_count", JobRecord{Op: OpApply, Interrupted: true}, OutcomeInterrupted},
		{"counts/apply_blocked_before_a_destructive_plan_does_not_count", JobRecord{Op: OpApply, Blocked: true}, OutcomeBlocked},
		{"counts/approved_apply_whose_plan_changed_does_not_count", JobRecord{Op: OpApply, PlanChanged: true}, OutcomePlanChanged},
		{"counts/plan_Job_succeeded_but_plan_unreadable_counts", JobRecord{Op: OpPlan, Succeeded: true, PlanUnreadable: true}, OutcomeFailed},
		{"counts/success_does_not_count", JobRecord{Op: OpRefresh, Succeeded: true}, OutcomeSucceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.job.Outcome(); got != c.want {
				t.Fatalf("outcome %s, want %s", got, c.want)
			}
		})
	}
	for o, s := range map[Outcome]string{OutcomeSucceeded: "succeeded", OutcomeFailed: "failed", OutcomeInterrupted: "interrupted",
		OutcomeBlocked: "blocked", OutcomePlanChanged: "plan-changed", Outcome(99): "unknown"} {
		if o.String() != s {
			t.Fatalf("Outcome(%d).String() = %q", o, o.String())
		}
	}
}

func rec(op Operation, attempt int, finished time.Duration, ok bool) JobRecord {
	return JobRecord{Name: fmt.Sprintf("%s-%d", op, attempt), Op: op, Attempt: attempt, Finished: ago(finished), Succeeded: ok}
}

func TestConsecutiveFailures(t *testing.T) {
	interrupted := rec(OpApply, 6, time.Minute, false)
	interrupted.Interrupted = true
	blocked := rec(OpApply, 7, 30*time.Second, false)
	blocked.Blocked = true
	for _, c := range []struct {
		name        string
		jobs        []JobRecord
		op          Operation
		wantN       int
		wantNewest  time.Duration
		wantAttempt int
	}{
		{"counts/newest_first_until_a_success_of_the_same_op",
			[]JobRecord{rec(OpApply, 1, 5*time.Hour, false), rec(OpApply, 2, 4*time.Hour, true), rec(OpApply, 3, 3*time.Hour, false), rec(OpApply, 4, 2*time.Hour, false)},
			OpApply, 2, 2 * time.Hour, 5},
		{"counts/a_success_of_the_op_resets_the_count",
			[]JobRecord{rec(OpApply, 1, 3*time.Hour, false), rec(OpApply, 2, time.Hour, true)},
			OpApply, 0, 0, 3},
		{"counts/each_operation_separately_a_failing_drift_never_delays_an_apply",
			[]JobRecord{rec(OpDrift, 1, time.Minute, false), rec(OpDrift, 2, 30*time.Second, false), rec(OpApply, 1, time.Hour, true)},
			OpApply, 0, 0, 2},
		{"counts/drift_failures_count_for_drift",
			[]JobRecord{rec(OpDrift, 1, time.Minute, false), rec(OpDrift, 2, 30*time.Second, false), rec(OpApply, 1, time.Hour, true)},
			OpDrift, 2, 30 * time.Second, 3},
		{"counts/interrupted_and_blocked_are_passed_over_without_ending_the_walk",
			[]JobRecord{rec(OpApply, 5, 2*time.Minute, false), interrupted, blocked},
			OpApply, 1, 2 * time.Minute, 8},
		{"counts/interruptions_in_a_row_count_like_failures",
			[]JobRecord{intr(OpApply, 1, 3*time.Minute), intr(OpApply, 2, 2*time.Minute)},
			OpApply, 2, 2 * time.Minute, 3},
		{"counts/a_third_interruption_in_a_row_counts_too",
			[]JobRecord{intr(OpApply, 1, 3*time.Minute), intr(OpApply, 2, 2*time.Minute), intr(OpApply, 3, time.Minute)},
			OpApply, 3, time.Minute, 4},
		{"counts/a_failure_between_two_interruptions_breaks_the_row",
			[]JobRecord{intr(OpApply, 1, 3*time.Minute), rec(OpApply, 2, 2*time.Minute, false), intr(OpApply, 3, time.Minute)},
			OpApply, 1, 2 * time.Minute, 4},
		{"counts/a_blocked_apply_between_two_interruptions_is_passed_over",
			[]JobRecord{intr(OpApply, 5, 2*time.Minute), blocked, intr(OpApply, 8, 10*time.Second)},
			OpApply, 2, 10 * time.Second, 9},
		{"counts/interruptions_older_than_the_newest_success_do_not_count",
			[]JobRecord{intr(OpApply, 1, 3*time.Minute), intr(OpApply, 2, 2*time.Minute), rec(OpApply, 3, time.Minute, true), intr(OpApply, 4, 10*time.Second)},
			OpApply, 0, 0, 5},
		{"counts/interruptions_of_another_operation_do_not_make_a_row",
			[]JobRecord{intr(OpDrift, 1, 3*time.Minute), intr(OpApply, 1, 2*time.Minute)},
			OpApply, 0, 0, 2},
		{"counts/Jobs_of_an_unknown_operation_are_ignored",
			[]JobRecord{rec("other", 4, time.Minute, false), rec(OpPlan, 1, time.Hour, false)},
			OpPlan, 1, time.Hour, 2},
		{"counts/no_Jobs_no_failures",
			nil, OpPlan, 0, 0, 1},
		{"counts/a_non_Job_operation_has_no_failures",
			[]JobRecord{rec(OpApply, 1, time.Minute, false)}, OpNone, 0, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := ConsecutiveFailures(c.jobs, c.op)
			if f.Count != c.wantN {
				t.Fatalf("count %d, want %d", f.Count, c.wantN)
			}
			if c.wantN > 0 && !f.Newest.Equal(ago(c.wantNewest)) {
				t.Fatalf("newest %v, want %v", f.Newest, ago(c.wantNewest))
			}
			if got := NextAttempt(c.jobs, c.op); got != c.wantAttempt {
				t.Fatalf("next attempt %d, want %d", got, c.wantAttempt)
			}
			if got := RetryNumber(c.jobs, c.op); got != c.wantN+1 {
				t.Fatalf("retry number %d, want %d", got, c.wantN+1)
			}
		})
	}
}

func TestBackoffUntil(t *testing.T) {
	jobs := []JobRecord{rec(OpApply, 1, 10*time.Minute, false), rec(OpApply, 2, 3*time.Minute, false)}
	t.Run("backoff/delay_counted_from_the_newest_failed_Job's_finish", func(t *testing.T) {
		if got, want := BackoffUntil(jobs, OpApply, 3), ago(3*time.Minute).Add(2*time.Minute); !got.Equal(want) {
			t.Fatalf("until %v, want %v", got, want)
		}
	})
	t.Run("backoff/no_failures_no_backoff", func(t *testing.T) {
		if got := BackoffUntil(jobs, OpDestroy, 3); !got.IsZero() {
			t.Fatalf("until %v", got)
		}
	})
}

func TestRemediationCap(t *testing.T) {
	check := ago(time.Hour)
	remediation := func(attempt int, d time.Duration) JobRecord {
		r := rec(OpApply, attempt, d, false)
		r.DriftRemediation = true
		return r
	}
	blocked := remediation(9, time.Minute)
	blocked.Blocked = true
	changedPlan := remediation(10, 50*time.Second)
	changedPlan.PlanChanged = true
	interrupted := remediation(11, 40*time.Second)
	interrupted.Interrupted = true
	for _, c := range []struct {
		name   string
		jobs   []JobRecord
		limit  int
		n      int
		capped bool
	}{
		{"remediation_cap/counts_failed_applies_after_the_last_successful_drift_check",
			[]JobRecord{remediation(1, 2*time.Hour), remediation(2, 30*time.Minute), remediation(3, 20*time.Minute)}, 3, 2, false},
		{"remediation_cap/stops_at_an_apply_success",
			[]JobRecord{remediation(1, 50*time.Minute), rec(OpApply, 2, 40*time.Minute, true), remediation(3, 20*time.Minute)}, 3, 1, false},
		{"remediation_cap/any_failed_apply_counts_not_only_remediations",
			[]JobRecord{rec(OpApply, 1, 30*time.Minute, false)}, 1, 1, true},
		{"remediation_cap/blocked_plan_changed_and_interrupted_do_not_count",
			[]JobRecord{blocked, changedPlan, interrupted}, 1, 0, false},
		{"remediation_cap/limit_3_reached_after_3_failures",
			[]JobRecord{remediation(1, 30*time.Minute), remediation(2, 20*time.Minute), remediation(3, 10*time.Minute)}, 3, 3, true},
		{"remediation_cap/limit_0_counts_as_1",
			[]JobRecord{remediation(1, 30*time.Minute)}, 0, 1, true},
		{"remediation_cap/drift_Job_failures_do_not_count",
			[]JobRecord{rec(OpDrift, 1, 30*time.Minute, false)}, 1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RemediationFailures(c.jobs, check); got != c.n {
				t.Fatalf("failures %d, want %d", got, c.n)
			}
			if got := RemediationCapReached(c.jobs, check, c.limit); got != c.capped {
				t.Fatalf("cap reached %v, want %v", got, c.capped)
			}
		})
	}
}

func TestNonBackoffRequeues(t *testing.T) {
	// Book: Retries and Backoff, "What does not back off".
	for _, c := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"requeue/a_lease_wait_is_30s", RequeueLeaseWait, 30 * time.Second},
		{"requeue/credentials_dependencies_or_an_owner_not_ready_is_30s", RequeueNotReady, 30 * time.Second},
		{"requeue/an_unreadable_or_lost_state_is_1m", RequeueStateUnreadable, time.Minute},
		{"requeue/a_Job_still_running_is_a_1m_fallback", RequeueJobRunning, time.Minute},
		{"requeue/the_Job_cache_behind_the_API_server_is_5s", RequeueJobCacheStale, 5 * time.Second},
		{"requeue/an_approval_for_a_blocked_apply_or_a_plan_is_at_most_10m", RequeueApprovalWait, 10 * time.Minute},
		{"requeue/JobPolicyInvalid_InputsTooLarge_missing_durable_inputs_is_10m", RequeueFixInput, 10 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("%v, want %v", c.got, c.want)
			}
		})
	}
}

func intr(op Operation, attempt int, d time.Duration) JobRecord {
	j := rec(op, attempt, d, false)
	j.Interrupted = true
	return j
}
