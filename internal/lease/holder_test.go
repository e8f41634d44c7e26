package lease

import (
	"slices"
	"strings"
	"testing"
	"time"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestNames(t *testing.T) {
	if got := RunName("0f6a8e3b5c2d1e47-c"); got != "captf-run-0f6a8e3b5c2d1e47-c" {
		t.Errorf("RunName = %s", got)
	}
	// sha256("team-a/prod") computed independently with sha256sum.
	if got := ClusterName("team-a", "prod"); got != "captf-cluster-687e6377eb6e7c06" {
		t.Errorf("ClusterName = %s", got)
	}
	if ClusterHash("team-a", "prod") == ClusterHash("team-b", "prod") {
		t.Error("two namespaces share a cluster lease")
	}
	if n := len(ClusterName("ns", strings.Repeat("x", 300))); n > 63 {
		t.Errorf("cluster lease name is %d characters", n)
	}
}

func TestAssess(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	live := JobFacts{Exists: true, Started: now.Add(-10 * time.Minute), Deadline: time.Hour}
	tests := []struct {
		name string
		h    Holder
		want HolderState
	}{
		{"a lease without a holder is free", Holder{}, Free},
		{"a holder whose Job runs is live: wait", Holder{Name: "j", Job: live}, Live},
		{"a holder whose Job finished may be taken over", Holder{Name: "j", Job: JobFacts{Exists: true, Finished: true, Started: now.Add(-time.Hour)}}, Finished},
		{"a holder whose Job is not created yet, within the 2-minute grace, is pending: wait",
			Holder{Name: "j", Renewed: now.Add(-MissingHolderGrace + time.Second)}, Pending},
		{"a holder whose Job is missing past the grace may be taken over",
			Holder{Name: "j", Renewed: now.Add(-MissingHolderGrace - time.Second)}, Missing},
		{"a holder whose Job is gone but whose pod still terminates is pending: wait",
			Holder{Name: "j", Renewed: now.Add(-time.Hour), PodsActive: true}, Pending},
		{"a missing holder with no renewal time is pending (never guess a takeover)",
			Holder{Name: "j"}, Pending},
		{"a Job within its deadline plus the 15-minute backstop is live",
			Holder{Name: "j", Job: JobFacts{Exists: true, Started: now.Add(-time.Hour - DeadlineBackstop + time.Second), Deadline: time.Hour}}, Live},
		{"a Job past its deadline plus the 15-minute backstop may be taken over",
			Holder{Name: "j", Job: JobFacts{Exists: true, Started: now.Add(-time.Hour - DeadlineBackstop - time.Second), Deadline: time.Hour}}, Expired},
		{"a Job without a deadline never expires",
			Holder{Name: "j", Job: JobFacts{Exists: true, Started: now.Add(-1000 * time.Hour)}}, Live},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Assess(tt.h, now)
			if got != tt.want {
				t.Fatalf("Assess = %s, want %s", got, tt.want)
			}
			wantHeld := tt.want == Live || tt.want == Pending
			if got.Held() != wantHeld {
				t.Errorf("Held = %v", got.Held())
			}
		})
	}
}

func TestGate(t *testing.T) {
	t.Run("apply, destroy and restore cross the gate; refresh, drift and plan do not", func(t *testing.T) {
		var gated []infrav1.Operation
		for _, op := range []infrav1.Operation{infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationRestore,
			infrav1.OperationRefresh, infrav1.OperationDrift, infrav1.OperationPlan} {
			if Gated(op) {
				gated = append(gated, op)
			}
		}
		if !slices.Equal(gated, []infrav1.Operation{infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationRestore}) {
			t.Errorf("gated = %v", gated)
		}
	})
	clusterJob := Holder{Name: "captf-c-prod-apply-a1-aaaaaa", Op: infrav1.OperationApply}
	member := []struct {
		name  string
		op    infrav1.Operation
		gate  bool
		state HolderState
		wait  bool
	}{
		{"a machine apply backs off while the cluster lease is live: WaitingForClusterOperation", infrav1.OperationApply, true, Live, true},
		{"a machine destroy backs off while the cluster's Job is about to be created", infrav1.OperationDestroy, true, Pending, true},
		{"a machine restore backs off too", infrav1.OperationRestore, true, Live, true},
		{"a machine refresh is not gated", infrav1.OperationRefresh, true, Live, false},
		{"a machine drift is not gated", infrav1.OperationDrift, true, Live, false},
		{"a free cluster lease lets the machine start", infrav1.OperationApply, true, Free, false},
		{"a cluster lease whose Job finished lets the machine start", infrav1.OperationApply, true, Finished, false},
		{"a cluster lease whose Job is missing past the grace lets the machine start", infrav1.OperationApply, true, Missing, false},
		{"without --cluster-operation-gate nothing waits", infrav1.OperationApply, false, Live, false},
	}
	for _, tt := range member {
		t.Run(tt.name, func(t *testing.T) {
			w := MemberMayStart(tt.op, tt.gate, clusterJob, tt.state)
			if (w != nil) != tt.wait {
				t.Fatalf("wait = %+v", w)
			}
			if w != nil {
				if w.Reason != infrav1.WaitingForClusterOperationReason || !strings.Contains(w.Message, clusterJob.Name) || w.MetricReason() != "cluster_operation" {
					t.Errorf("wait = %+v", w)
				}
			}
		})
	}
	inFlight := []InFlight{
		{Kind: "TerraformMachine", Name: "prod-cp-1", Job: "captf-m-prod-cp-1-apply-a1-111111", Op: infrav1.OperationApply},
		{Kind: "TerraformMachinePool", Name: "prod-pool", Job: "captf-mp-prod-pool-destroy-a1-222222", Op: infrav1.OperationDestroy},
	}
	cluster := []struct {
		name     string
		op       infrav1.Operation
		gate     bool
		inFlight []InFlight
		wait     bool
	}{
		{"a cluster apply waits for in-flight machine operations, keeping both leases: WaitingForMachineOperations", infrav1.OperationApply, true, inFlight, true},
		{"a cluster destroy waits likewise", infrav1.OperationDestroy, true, inFlight, true},
		{"a cluster restore takes part in the gate like its apply", infrav1.OperationRestore, true, inFlight, true},
		{"a cluster drift is not gated", infrav1.OperationDrift, true, inFlight, false},
		{"no machine operation in flight: start", infrav1.OperationApply, true, nil, false},
		{"without --cluster-operation-gate nothing waits", infrav1.OperationApply, false, inFlight, false},
	}
	for _, tt := range cluster {
		t.Run(tt.name, func(t *testing.T) {
			w := ClusterMayStart(tt.op, tt.gate, tt.inFlight)
			if (w != nil) != tt.wait {
				t.Fatalf("wait = %+v", w)
			}
			if w != nil {
				if w.Reason != infrav1.WaitingForMachineOperationsReason || len(w.Holders) != 2 || w.MetricReason() != "machine_operations" ||
					!strings.Contains(w.Message, "2 machine operation(s)") || !strings.Contains(w.Message, inFlight[1].Job) {
					t.Errorf("wait = %+v", w)
				}
			}
		})
	}
	t.Run("a long in-flight list names five Jobs and counts the rest", func(t *testing.T) {
		var many []InFlight
		for i := 0; i < 8; i++ {
			many = append(many, InFlight{Job: "job-" + string(rune('a'+i))})
		}
		w := ClusterMayStart(infrav1.OperationApply, true, many)
		if !strings.HasSuffix(w.Message, "job-e and 3 more") {
			t.Errorf("message = %q", w.Message)
		}
	})
	t.Run("the run lease wait names the holder", func(t *testing.T) {
		w := RunLeaseWait("captf-run-x", "captf-m-a-apply-a1-000000")
		if w.Reason != infrav1.WaitingForRunLeaseReason || !strings.Contains(w.Message, "captf-m-a-apply-a1-000000") || w.MetricReason() != "run_lease" {
			t.Errorf("wait = %+v", w)
		}
	})
}
