package decide

import (
	"fmt"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// benchObservation is a TerraformMachinePool with 20 retained Jobs across
// its operations and a drift check due: the decision walks every apply
// reason, the whole schedule and builds a Job name.
func benchObservation() Observation {
	o := steady(v1alpha1.KindTerraformMachinePool)
	o.Drift.Action = DriftRemediate
	o.LastDriftCheck = ago(40 * time.Minute)
	o.Jobs = o.Jobs[:0]
	add := func(op Operation, n int, ok func(i int) bool) {
		for i := range n {
			o.Jobs = append(o.Jobs, JobRecord{
				Name: fmt.Sprintf("captf-mp-web-%s-a%d-000000", op, i+1), Op: op, Attempt: i + 1,
				Finished: ago(time.Duration(20-i) * 3 * time.Hour), Succeeded: ok(i), InputsHash: hashA,
			})
		}
	}
	add(OpApply, 6, func(i int) bool { return i%2 == 1 })
	add(OpRefresh, 6, func(i int) bool { return i != 2 })
	add(OpDrift, 6, func(i int) bool { return i%3 != 0 })
	add(OpRestore, 2, func(i int) bool { return i == 1 })
	return o
}

func BenchmarkDecide(b *testing.B) {
	o := benchObservation()
	if len(o.Jobs) != 20 {
		b.Fatalf("%d Jobs", len(o.Jobs))
	}
	if d, err := Decide(o); err != nil || d.Op != OpDrift {
		b.Fatalf("decision %+v, %v", d, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decide(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrune(b *testing.B) {
	o := benchObservation()
	limits := HistoryLimits{Successful: 1, Failed: 1}
	b.ReportAllocs()
	for b.Loop() {
		Prune(o.Jobs, limits)
	}
}
