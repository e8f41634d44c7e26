package decide

import (
	"slices"
	"testing"
	"time"
)

func names(jobs []JobRecord) []string {
	out := make([]string, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].Name
	}
	return out
}

func TestPrune(t *testing.T) {
	ok := func(name string, op Operation, attempt int, d time.Duration) JobRecord {
		return JobRecord{Name: name, Op: op, Attempt: attempt, Finished: ago(d), Succeeded: true}
	}
	bad := func(name string, op Operation, attempt int, d time.Duration) JobRecord {
		return JobRecord{Name: name, Op: op, Attempt: attempt, Finished: ago(d)}
	}
	ibad := func(name string, attempt int, d time.Duration) JobRecord {
		j := bad(name, OpApply, attempt, d)
		j.Interrupted = true
		return j
	}
	interrupted := bad("i", OpApply, 5, time.Minute)
	interrupted.Interrupted = true
	unreadable := ok("pu", OpPlan, 2, time.Minute)
	unreadable.PlanUnreadable = true

	for _, c := range []struct {
		name   string
		jobs   []JobRecord
		limits HistoryLimits
		want   []string
	}{
		{"prune/successes_beyond_the_limit_go_oldest_first",
			[]JobRecord{ok("s1", OpRefresh, 1, 4*time.Hour), ok("s2", OpRefresh, 2, 3*time.Hour), ok("s3", OpRefresh, 3, 2*time.Hour), ok("s4", OpRefresh, 4, time.Hour)},
			HistoryLimits{Successful: 2, Failed: 2}, []string{"s1", "s2"}},
		{"prune/failures_beyond_the_limit_go_oldest_first",
			[]JobRecord{bad("f1", OpApply, 1, 4*time.Hour), bad("f2", OpApply, 2, 3*time.Hour), bad("f3", OpApply, 3, 2*time.Hour)},
			HistoryLimits{Successful: 3, Failed: 2}, []string{"f1"}},
		{"prune/each_operation_is_pruned_independently",
			[]JobRecord{ok("a1", OpApply, 1, 4*time.Hour), ok("d1", OpDrift, 1, 3*time.Hour), ok("d2", OpDrift, 2, 2*time.Hour), ok("r1", OpRefresh, 1, time.Hour)},
			HistoryLimits{Successful: 1, Failed: 1}, []string{"d1"}},
		{"prune/limit_0_keeps_the_newest_success",
			[]JobRecord{ok("s1", OpDrift, 1, 2*time.Hour), ok("s2", OpDrift, 2, time.Hour)},
			HistoryLimits{}, []string{"s1"}},
		{"prune/limit_0_keeps_the_newest_failure_while_no_success_is_newer",
			[]JobRecord{ok("s1", OpApply, 1, 3*time.Hour), bad("f1", OpApply, 2, 2*time.Hour), bad("f2", OpApply, 3, time.Hour)},
			HistoryLimits{}, []string{"f1"}},
		{"prune/a_failure_older_than_the_newest_success_goes_at_limit_0",
			[]JobRecord{bad("f1", OpApply, 1, 3*time.Hour), ok("s1", OpApply, 2, 2*time.Hour)},
			HistoryLimits{}, []string{"f1"}},
		{"prune/limit_0_keeps_the_newest_counted_failure_behind_an_interrupted_Job",
			[]JobRecord{bad("f0", OpApply, 3, 3*time.Hour), bad("f1", OpApply, 4, 2*time.Hour), interrupted},
			HistoryLimits{}, []string{"f0"}},
		{"prune/limit_0_keeps_two_interruptions_in_a_row_so_the_row_still_backs_off",
			[]JobRecord{ibad("i1", 1, 3*time.Minute), ibad("i2", 2, 2*time.Minute), ibad("i3", 3, time.Minute)},
			HistoryLimits{}, []string{"i1"}},
		{"prune/an_interruption_behind_a_failure_is_not_kept_at_limit_0",
			[]JobRecord{ibad("i1", 1, 3*time.Minute), bad("f2", OpApply, 2, 2*time.Minute), ibad("i3", 3, time.Minute)},
			HistoryLimits{}, []string{"i1"}},
		{"prune/an_unreadable_plan_is_kept_as_a_failure",
			[]JobRecord{ok("p1", OpPlan, 1, time.Hour), unreadable},
			HistoryLimits{Successful: 0, Failed: 1}, nil},
		{"prune/nothing_over_the_limits_prunes_nothing",
			[]JobRecord{ok("s1", OpApply, 1, time.Hour), bad("f1", OpApply, 2, time.Minute)},
			HistoryLimits{Successful: 3, Failed: 3}, nil},
		{"prune/Jobs_of_an_unknown_operation_are_never_pruned",
			[]JobRecord{ok("x1", "other", 1, 3*time.Hour), ok("x2", "other", 2, time.Hour)},
			HistoryLimits{}, nil},
		{"prune/pruned_Jobs_come_back_oldest_first_across_operations",
			[]JobRecord{ok("r1", OpRefresh, 1, 5*time.Hour), ok("r2", OpRefresh, 2, time.Hour), ok("a1", OpApply, 1, 6*time.Hour), ok("a2", OpApply, 2, 4*time.Hour), ok("a3", OpApply, 3, 2*time.Hour)},
			HistoryLimits{Successful: 1}, []string{"a1", "r1", "a2"}},
		{"prune/equal_finish_times_order_by_attempt",
			[]JobRecord{ok("s2", OpDrift, 2, time.Hour), ok("s1", OpDrift, 1, time.Hour), ok("s3", OpDrift, 3, time.Hour)},
			HistoryLimits{Successful: 1}, []string{"s1", "s2"}},
		{"prune/equal_finish_times_and_attempts_order_by_name",
			[]JobRecord{ok("b", OpDrift, 1, time.Hour), ok("a", OpDrift, 1, time.Hour)},
			HistoryLimits{Successful: 1}, []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := names(Prune(c.jobs, c.limits))
			if !slices.Equal(got, c.want) && (len(got) != 0 || len(c.want) != 0) {
				t.Fatalf("pruned %v, want %v", got, c.want)
			}
		})
	}

	t.Run("prune/backoff_reads_the_same_after_pruning", func(t *testing.T) {
		jobs := []JobRecord{ok("s1", OpApply, 1, 5*time.Hour)}
		for i := range 6 {
			jobs = append(jobs, bad("f", OpApply, 2+i, time.Duration(6-i)*time.Minute))
		}
		for _, limit := range []int{0, 1, 3, 5} {
			pruned := Prune(jobs, HistoryLimits{Successful: 1, Failed: limit})
			kept := slices.DeleteFunc(slices.Clone(jobs), func(j JobRecord) bool {
				return slices.ContainsFunc(pruned, func(p JobRecord) bool { return p.Attempt == j.Attempt })
			})
			if n := ConsecutiveFailures(kept, OpApply).Count; n != FailedLimit(limit) {
				t.Fatalf("limit %d: %d failures kept", limit, n)
			}
			if BackoffDelay(ConsecutiveFailures(kept, OpApply).Count, limit) != BackoffCap {
				t.Fatalf("limit %d: pruning shortened the backoff", limit)
			}
		}
	})
}
