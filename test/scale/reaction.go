package scale

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Reaction time: CAPTF promises that the next step follows a finished Job
// quickly. For every TerraformMachine Job the executor finishes, the
// harness keeps the moment it sent the Job's finished status; the machine's
// next step is the first of these the harness sees after that moment:
//
//   - the fleet view (an informer watch) sees the TerraformMachine with its
//     Ready condition True,
//   - the fleet view sees the TerraformMachine removed,
//   - the executor's Job watch sees the machine's next Job created.
//
// The time between the two is one reaction sample. All times are the
// harness's clock (Go's monotonic time), so no two clocks are compared.

// reactionLog collects the times the pairing needs. It is safe for
// concurrent use: the executor's workers, its Job watch and the fleet
// view's watch all write to it.
type reactionLog struct {
	mu       sync.Mutex
	finishes []jobFinish
	// steps are each machine's next-step sightings (namespace/name →
	// times, in the order they were seen).
	steps map[string][]time.Time
}

// jobFinish is one finished Job of a TerraformMachine (namespace/name) and
// the moment its finished status was sent.
type jobFinish struct {
	Machine string
	At      time.Time
}

// finished records that machine's Job was finished at at.
func (l *reactionLog) finished(machine string, at time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finishes = append(l.finishes, jobFinish{Machine: machine, At: at})
}

// stepSeen records a next-step sighting of machine at at: its Ready
// condition True, its removal, or a new Job of it.
func (l *reactionLog) stepSeen(machine string, at time.Time) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.steps == nil {
		l.steps = map[string][]time.Time{}
	}
	l.steps[machine] = append(l.steps[machine], at)
}

// samples pairs the Jobs finished up to until (the end of the bring-up)
// with their machines' next steps; unpaired counts the finished Jobs whose
// machine has shown no next step yet.
func (l *reactionLog) samples(until time.Time) (samples []time.Duration, unpaired int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fs []jobFinish
	for _, f := range l.finishes {
		if !f.At.After(until) {
			fs = append(fs, f)
		}
	}
	return pairReactions(fs, l.steps)
}

// pairReactions pairs each finished Job with the first next step of its
// machine seen strictly after the Job was finished, and returns the
// differences (in the order of finishes) and how many finishes had no later
// step. steps need not be sorted.
func pairReactions(finishes []jobFinish, steps map[string][]time.Time) (samples []time.Duration, unpaired int) {
	for _, f := range finishes {
		var next time.Time
		for _, s := range steps[f.Machine] {
			if s.After(f.At) && (next.IsZero() || s.Before(next)) {
				next = s
			}
		}
		if next.IsZero() {
			unpaired++
			continue
		}
		samples = append(samples, next.Sub(f.At))
	}
	return samples, unpaired
}

// percentile is the p-th percentile (0 < p ≤ 100) of samples by the
// nearest-rank method: the smallest sample that at least p % of the
// samples are less than or equal to. NaN for no samples. samples is not
// changed.
func percentile(samples []time.Duration, p float64) float64 {
	if len(samples) == 0 || p <= 0 || p > 100 {
		return math.NaN()
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return float64(s[max(rank, 1)-1])
}

// Reaction is the reaction-time figures of a run, in milliseconds.
type Reaction struct {
	Samples  int     `json:"reactionSamples"`
	Unpaired int     `json:"reactionUnpaired,omitempty"`
	P50Ms    float64 `json:"reactionP50Ms"`
	P95Ms    float64 `json:"reactionP95Ms"`
	P99Ms    float64 `json:"reactionP99Ms"`
}

// reactionOf summarises samples; with none, the percentiles are 0 (JSON
// has no NaN) and Samples says there were none.
func reactionOf(samples []time.Duration, unpaired int) Reaction {
	r := Reaction{Samples: len(samples), Unpaired: unpaired}
	if len(samples) == 0 {
		return r
	}
	ms := func(p float64) float64 {
		return math.Round(percentile(samples, p)/float64(time.Millisecond)*10) / 10
	}
	r.P50Ms, r.P95Ms, r.P99Ms = ms(50), ms(95), ms(99)
	return r
}
