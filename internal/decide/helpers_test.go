package decide

import (
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testUID  = "0c4ee5a2-71f3-4b8c-9a55-6f3c1d2e7a10"
	hashA    = "h2:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB    = "h2:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	planHash = "p2:1111111111111111111111111111111111111111111111111111111111111111"
)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

// steady is a provisioned object of kind with nothing due right now: its
// state carries the current inputs hash, its last apply succeeded two hours
// ago, it was refreshed ten seconds ago and drift-checked five minutes ago
// (drift every 30 minutes by the manager's default).
func steady(kind v1alpha1.WorkloadKind) Observation {
	o := Observation{
		Kind:              kind,
		Caps:              kind.Capabilities(),
		Name:              "web",
		UID:               testUID,
		Now:               t0,
		State:             StateRead,
		StateInputsHash:   hashA,
		EverApplied:       true,
		Provisioned:       true,
		Inputs:            InputsBuilt,
		CurrentInputsHash: hashA,
		DurableInputsHash: hashA,
		History:           HistoryLimits{Successful: 3, Failed: 3},
		Drift:             DriftSettings{ManagerDefault: 30 * time.Minute},
		LastApply:         ago(2 * time.Hour),
		LastRefresh:       ago(10 * time.Second),
		LastDriftCheck:    ago(5 * time.Minute),
		Health:            HealthRunning,
		Jobs: []JobRecord{
			{Name: "apply-1", Op: OpApply, Attempt: 1, Finished: ago(2 * time.Hour), Succeeded: true, InputsHash: hashA},
		},
	}
	if kind == v1alpha1.KindTerraformMachine {
		o.Inputs = InputsNotRendered
		o.CurrentInputsHash = ""
	}
	return o
}

// failedApply is a failed apply Job of hashA finished d ago.
func failedApply(attempt int, d time.Duration) JobRecord {
	return JobRecord{Name: "apply-f", Op: OpApply, Attempt: attempt, Finished: ago(d), InputsHash: hashA}
}

func mustDecide(t *testing.T, o Observation) Decision {
	t.Helper()
	d, err := Decide(o)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if d.RequeueAfter < 0 {
		t.Fatalf("negative requeue %v", d.RequeueAfter)
	}
	if d.Op.IsJob() != (d.Job != nil) {
		t.Fatalf("op %s with Job plan %+v", d.Op, d.Job)
	}
	return d
}
