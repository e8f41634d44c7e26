package scale

import (
	"math"
	"strings"
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

func TestLayout(t *testing.T) {
	one, two := layout{shards: 1}, layout{shards: 2}
	if got := one.clusters(); len(got) != 1 || got[0] != ClusterName {
		t.Errorf("one shard: clusters %v", got)
	}
	if _, ok := one.labels(0)["cluster.x-k8s.io/watch-filter"]; ok {
		t.Errorf("one shard: labels %v carry a watch-filter", one.labels(0))
	}
	if got := two.clusters(); len(got) != 2 || got[0] != "scale-0" || got[1] != "scale-1" {
		t.Errorf("two shards: clusters %v", got)
	}
	if l := two.labels(1); l["cluster.x-k8s.io/watch-filter"] != "scale-shard-1" || l["cluster.x-k8s.io/cluster-name"] != "scale-1" {
		t.Errorf("two shards: labels of shard 1 %v", l)
	}
	for _, tc := range []struct {
		l     layout
		name  string
		shard int
		ok    bool
	}{
		{two, MachineName(0), 0, true},
		{two, MachineName(1), 1, true},
		{two, MachineName(12345), 1, true},
		{layout{shards: 3}, MachineName(5), 2, true},
		{one, MachineName(7), 0, true},
		{two, BombMachine, 0, false},
		{two, "m-7", 0, false},
		{two, "m-00007-bootstrap", 0, false},
	} {
		if s, ok := tc.l.shardOf(tc.name); s != tc.shard || ok != tc.ok {
			t.Errorf("%d shards: shardOf(%q) = %d, %v; want %d, %v", tc.l.shards, tc.name, s, ok, tc.shard, tc.ok)
		}
	}
}

func TestCountLog(t *testing.T) {
	// Lines as the manager writes them (klog text, one per line).
	const log = `I1205 12:16:53.826752   22433 flags.go:64] FLAG: --watch-filter="scale-shard-0"
I1205 12:16:56.212105   22433 controller.go:477] "Reconciling" controller="terraformmachine" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachine" TerraformMachine="captf-scale/m-00000" namespace="captf-scale" name="m-00000" reconcileID="id-1"
I1205 12:16:56.212105   22433 warning_handler.go:64] "metadata.finalizers: prefer a domain-qualified finalizer name" controller="terraformmachine" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachine" TerraformMachine="captf-scale/m-00000" namespace="captf-scale" name="m-00000" reconcileID="id-1"
I1205 12:16:56.300000   22433 controller.go:477] "Reconciling" controller="terraformmachine" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachine" TerraformMachine="captf-scale/m-00002" namespace="captf-scale" name="m-00002" reconcileID="id-2"
I1205 12:16:56.400000   22433 controller.go:477] "Reconciling" controller="terraformmachine" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachine" TerraformMachine="captf-scale/m-00003" namespace="captf-scale" name="m-00003" reconcileID="id-3"
I1205 12:16:56.500000   22433 controller.go:477] "Reconciling" controller="terraformmachinepool" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachinePool" TerraformMachinePool="captf-scale/m-00005" namespace="captf-scale" name="m-00005" reconcileID="id-4"
I1205 12:16:56.600000   22433 controller.go:477] "Reconciling" controller="terraformmachine" controllerGroup="infrastructure.cluster.x-k8s.io" controllerKind="TerraformMachine" TerraformMachine="captf-scale/tenant-bomb" namespace="captf-scale" name="tenant-bomb" reconcileID="id-5"
I1205 12:16:56.700000   22433 event_broadcaster.go:338] "Event occurred" logger="events" object="captf-scale/m-00001" kind="TerraformMachine" apiVersion="infrastructure.cluster.x-k8s.io/v1alpha1" type="Normal" reason="ProviderIDSet"
I1205 12:16:56.800000   22433 event_broadcaster.go:338] "Event occurred" logger="events" object="captf-scale/m-00004" kind="TerraformMachine" apiVersion="infrastructure.cluster.x-k8s.io/v1alpha1" type="Normal" reason="ProviderIDSet"
I1205 12:16:56.900000   22433 event_broadcaster.go:338] "Event occurred" logger="events" object="captf-scale/scale-1" kind="TerraformCluster" apiVersion="infrastructure.cluster.x-k8s.io/v1alpha1" type="Normal" reason="Applied"
`
	got, err := countLog(strings.NewReader(log), 0, layout{shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Shard 0 holds the even machines: passes id-1 (two lines, one pass)
	// and id-2 are its own, id-3 (m-00003) is shard 1's; the pool and the
	// tenant's machine are not fleet machines; m-00001's event is shard 1's.
	if want := (logCount{Passes: 3, CrossPasses: 1, CrossEvents: 1}); got != want {
		t.Errorf("countLog = %+v, want %+v", got, want)
	}
	got, err = countLog(strings.NewReader(log), 1, layout{shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := (logCount{Passes: 3, CrossPasses: 2, CrossEvents: 1}); got != want {
		t.Errorf("as shard 1: countLog = %+v, want %+v", got, want)
	}
}

func TestMergeResultKeepsShardsAndPaceApart(t *testing.T) {
	rs := MergeResult(nil, Result{N: 100, When: "a"})
	rs = MergeResult(rs, Result{N: 100, Shards: 2, When: "b"})
	rs = MergeResult(rs, Result{N: 100, PaceSeconds: 0.2, When: "c"})
	rs = MergeResult(rs, Result{N: 50, When: "d"})
	rs = MergeResult(rs, Result{N: 100, Shards: 1, When: "e"}) // replaces "a": shards 0 is one
	var got []string
	for _, r := range rs {
		got = append(got, r.When+":"+r.Size())
	}
	want := "d:50 e:100 c:100 (paced, 200ms) b:2×50"
	if strings.Join(got, " ") != want {
		t.Errorf("merged %q, want %q", strings.Join(got, " "), want)
	}
	if s := (Result{N: 101, Shards: 2}).Size(); s != "2×50…51" {
		t.Errorf("Size of 101 on 2 shards = %q", s)
	}
}
