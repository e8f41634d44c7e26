package scale

import (
	"math"
	"testing"
	"time"
)

// These tests start nothing: they check the pure parts of the reaction and
// shard measurements.

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 … 1, unsorted on purpose
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    float64 // ms; NaN for none
	}{
		{"no samples", nil, 50, math.NaN()},
		{"p out of range (0)", ms(1, 2), 0, math.NaN()},
		{"p out of range (above 100)", ms(1, 2), 101, math.NaN()},
		{"one sample is every percentile (p50)", ms(7), 50, 7},
		{"one sample is every percentile (p99)", ms(7), 99, 7},
		{"two: p50 is the lower", ms(20, 10), 50, 10},
		{"two: p51 is the upper", ms(20, 10), 51, 20},
		{"four: p50 is the second", ms(4, 1, 3, 2), 50, 2},
		{"four: p75 is the third", ms(4, 1, 3, 2), 75, 3},
		{"four: p95 is the largest", ms(4, 1, 3, 2), 95, 4},
		{"hundred: p50", ms(hundred...), 50, 50},
		{"hundred: p95", ms(hundred...), 95, 95},
		{"hundred: p99", ms(hundred...), 99, 99},
		{"hundred: p100 is the largest", ms(hundred...), 100, 100},
		{"ties", ms(5, 5, 5, 9), 75, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tc.samples...)
			got := percentile(tc.samples, tc.p) / float64(time.Millisecond)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
				t.Errorf("percentile(p%v) = %v ms, want %v ms", tc.p, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.samples[i] {
					t.Fatalf("percentile reordered its input: %v, was %v", tc.samples, in)
				}
			}
		})
	}
}

func TestPairReactions(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		finishes []jobFinish
		steps    map[string][]time.Time
		want     []time.Duration
		unpaired int
	}{
		{
			name:     "Ready after the Job finished",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			steps:    map[string][]time.Time{"ns/a": {at(1040)}},
			want:     []time.Duration{40 * time.Millisecond},
		},
		{
			name:     "a step before the finish is not its reaction",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			steps:    map[string][]time.Time{"ns/a": {at(900), at(1250)}},
			want:     []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "a step at the very moment of the finish is not after it",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			steps:    map[string][]time.Time{"ns/a": {at(1000), at(1001)}},
			want:     []time.Duration{time.Millisecond},
		},
		{
			name:     "the first of several later steps, whatever order they were recorded in",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			steps:    map[string][]time.Time{"ns/a": {at(1300), at(1100), at(1200)}},
			want:     []time.Duration{100 * time.Millisecond},
		},
		{
			name:     "another machine's step does not count",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			steps:    map[string][]time.Time{"ns/b": {at(1010)}},
			unpaired: 1,
		},
		{
			name:     "no step yet",
			finishes: []jobFinish{{"ns/a", at(1000)}},
			unpaired: 1,
		},
		{
			name:     "two Jobs of one machine: each pairs with the first step after it (a follow-up Job seen, then Ready)",
			finishes: []jobFinish{{"ns/a", at(1000)}, {"ns/a", at(3000)}},
			steps:    map[string][]time.Time{"ns/a": {at(1020), at(3070)}},
			want:     []time.Duration{20 * time.Millisecond, 70 * time.Millisecond},
		},
		{
			name:     "several machines, in the order of the finishes",
			finishes: []jobFinish{{"ns/b", at(2000)}, {"ns/a", at(1000)}, {"ns/c", at(500)}},
			steps:    map[string][]time.Time{"ns/a": {at(1005)}, "ns/b": {at(2500)}},
			want:     []time.Duration{500 * time.Millisecond, 5 * time.Millisecond},
			unpaired: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unpaired := pairReactions(tc.finishes, tc.steps)
			if len(got) != len(tc.want) {
				t.Fatalf("samples %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("samples %v, want %v", got, tc.want)
					break
				}
			}
			if unpaired != tc.unpaired {
				t.Errorf("unpaired %d, want %d", unpaired, tc.unpaired)
			}
		})
	}
}

// TestReactionLogUntil: samples pairs only the Jobs finished up to the end
// of the bring-up, with steps seen at any time.
func TestReactionLogUntil(t *testing.T) {
	t0 := time.Now()
	l := &reactionLog{}
	l.finished("ns/a", t0)
	l.finished("ns/b", t0.Add(2*time.Second))
	l.stepSeen("ns/a", t0.Add(3*time.Second))
	l.stepSeen("ns/b", t0.Add(2100*time.Millisecond))
	got, unpaired := l.samples(t0.Add(time.Second))
	if len(got) != 1 || got[0] != 3*time.Second || unpaired != 0 {
		t.Errorf("samples %v (unpaired %d), want [3s] (0)", got, unpaired)
	}
	var none *reactionLog
	none.finished("ns/a", t0) // a nil log records nothing and does not fail
	none.stepSeen("ns/a", t0)
}

func TestReactionOf(t *testing.T) {
	if r := reactionOf(nil, 2); r.Samples != 0 || r.Unpaired != 2 || r.P50Ms != 0 || r.P99Ms != 0 {
		t.Errorf("no samples: %+v", r)
	}
	s := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 1234567 * time.Microsecond}
	if r := reactionOf(s, 0); r.Samples != 4 || r.P50Ms != 20 || r.P95Ms != 1234.6 || r.P99Ms != 1234.6 {
		t.Errorf("four samples: %+v", r)
	}
}
