package decide

import (
	"slices"
)

// Prune returns the finished Jobs to delete, oldest first (book: The
// Reconcile Lifecycle, "Job names and history"; Tuning Jobs, "History
// limits"). Each operation is pruned on its own: successes beyond
// limits.Successful and unsuccessful Jobs beyond limits.Failed go, oldest
// first, while these are always kept:
//   - the operation's newest success;
//   - while no success is newer, its newest unsuccessful Job, its newest
//     failure that counts toward backoff, and, when the newest unsuccessful
//     Jobs are interruptions, InterruptedStreak of them (so that a limit of
//     0 still keeps what retry backoff and the remediation cap read).
//
// A plan Job whose plan could not be read is kept as a failure. Jobs of an
// unknown operation are never pruned. Negative limits count as 0.
func Prune(jobs []JobRecord, limits HistoryLimits) []JobRecord {
	var out []JobRecord
	idx := make([]int, 0, len(jobs))
	for _, op := range jobOps {
		idx = idx[:0]
		for i := range jobs {
			if jobs[i].Op == op {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		// Newest first.
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case newer(&jobs[a], &jobs[b]):
				return -1
			case newer(&jobs[b], &jobs[a]):
				return 1
			}
			return 0
		})
		successes, failures := 0, 0
		seenSuccess, keptUnsuccessful, keptCounted := false, false, false
		leadingInterrupted, streakOpen := 0, true
		for _, i := range idx {
			j := &jobs[i]
			keep := false
			if o := j.Outcome(); o == OutcomeSucceeded {
				successes++
				keep = successes <= limits.Successful || !seenSuccess
				seenSuccess = true
			} else {
				failures++
				keep = failures <= limits.Failed
				if !seenSuccess {
					streakOpen = streakOpen && o != OutcomeFailed
					if streakOpen && o == OutcomeInterrupted {
						leadingInterrupted++
					}
					keep = keep || !keptUnsuccessful || (o == OutcomeFailed && !keptCounted) ||
						(streakOpen && o == OutcomeInterrupted && leadingInterrupted <= InterruptedStreak)
				}
				if keep {
					keptUnsuccessful = true
					keptCounted = keptCounted || o == OutcomeFailed
				}
			}
			if !keep {
				out = append(out, *j)
			}
		}
	}
	slices.SortFunc(out, func(a, b JobRecord) int {
		switch {
		case newer(&b, &a):
			return -1
		case newer(&a, &b):
			return 1
		}
		return 0
	})
	return out
}
