package decide

import (
	"reflect"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// missing is a finished Job of op on hash whose runner found the module
// lacking the named contract outputs.
func missing(name string, op Operation, hash string, d time.Duration, succeeded bool, outputs ...string) JobRecord {
	return JobRecord{Name: name, Op: op, Attempt: 1, Finished: ago(d), Succeeded: succeeded, InputsHash: hash,
		OutputsChecked: true, UndeclaredOutputs: outputs}
}

// TestDecideOutputsMissing: Module Contract, "Null semantics": an absent
// output (not declared in the module) is a hard error, OutputsMissing, with
// no retry until the module changes.
func TestDecideOutputsMissing(t *testing.T) {
	runCases(t, []dcase{
		{
			name: "null_semantics/undeclared_output_after_a_successful_apply_runs_nothing_more",
			kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) {
				// The post-apply refresh and the pending-health refresh would
				// otherwise both be due.
				o.Jobs = []JobRecord{missing("apply-1", OpApply, hashA, time.Minute, true, "instances")}
				o.LastApply, o.LastRefresh, o.LastDriftCheck = ago(time.Minute), time.Time{}, time.Time{}
				o.Provisioned = false
				o.Health = HealthPending
			},
			op: OpNone, reason: ReasonOutputsMissing, requeue: RequeueFixInput,
		},
		{
			name: "null_semantics/failed_apply_of_a_module_missing_outputs_is_not_retried",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.Jobs = append(o.Jobs, missing("apply-2", OpApply, hashA, 30*time.Minute, false, "exports"))
			},
			op: OpNone, reason: ReasonOutputsMissing, requeue: RequeueFixInput,
		},
		{
			name: "null_semantics/machine_refreshes_on_its_durable_inputs_stop_too",
			kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Jobs = []JobRecord{missing("apply-1", OpApply, hashA, 2*time.Hour, true, "interruptible")}
				o.Provisioned = false
				o.Health = HealthPending
				o.LastRefresh, o.LastDriftCheck = ago(2*time.Hour), ago(2*time.Hour)
			},
			op: OpNone, reason: ReasonOutputsMissing, requeue: RequeueFixInput,
		},
		{
			name: "null_semantics/a_plan_finding_them_holds_the_manual_apply",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.ApplyPolicy = ApplyManual
				o.CurrentInputsHash = hashB
				o.Jobs = append(o.Jobs, missing("plan-1", OpPlan, hashB, time.Minute, true, "health"))
			},
			op: OpNone, reason: ReasonOutputsMissing, requeue: RequeueFixInput,
		},
		{
			name: "null_semantics/a_new_image_is_new_inputs_and_applies",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.Jobs = append(o.Jobs, missing("refresh-1", OpRefresh, hashA, time.Minute, true, "exports"))
				o.CurrentInputsHash = hashB
			},
			op: OpApply, reason: ReasonInputsChanged,
		},
		{
			name: "null_semantics/a_newer_check_that_finds_every_output_clears_the_hold",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.Jobs = []JobRecord{
					missing("apply-1", OpApply, hashA, 3*time.Hour, true, "exports"),
					missing("apply-2", OpApply, hashA, 2*time.Hour, true),
				}
			},
			op: OpNone, reason: ReasonScheduled, requeue: -1,
		},
		{
			name: "null_semantics/a_run_that_did_not_check_says_nothing_either_way",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.Jobs = []JobRecord{
					missing("apply-1", OpApply, hashA, 3*time.Hour, true, "exports"),
					{Name: "restore-1", Op: OpRestore, Attempt: 1, Finished: ago(time.Hour), Succeeded: true, InputsHash: hashA, RestoreSerial: 3},
				}
			},
			op: OpNone, reason: ReasonOutputsMissing, requeue: RequeueFixInput,
		},
		{
			name: "null_semantics/deletion_still_destroys",
			kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Deleting = true
				o.Jobs = []JobRecord{missing("apply-1", OpApply, hashA, time.Hour, true, "provider_id")}
			},
			op: OpDestroy, reason: ReasonDeleting,
		},
		{
			name: "null_semantics/a_requested_restore_still_runs",
			kind: v1alpha1.KindTerraformCluster,
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 4, BackupFound: true}
				o.Jobs = append(o.Jobs, missing("apply-2", OpApply, hashA, time.Minute, true, "exports"))
			},
			op: OpRestore, reason: ReasonRestoreRequested,
		},
	})
}

// TestUndeclaredOutputs: the adapters read OutputsMissing off the module
// whose outputs the state holds: the newest apply, refresh, drift or
// destroy that checked.
func TestUndeclaredOutputs(t *testing.T) {
	tests := []struct {
		name string
		jobs []JobRecord
		want []string
	}{
		{"no_job_checked", []JobRecord{{Name: "a", Op: OpApply, Finished: ago(time.Hour)}}, nil},
		{"newest_apply_lists_them", []JobRecord{missing("a", OpApply, hashA, time.Hour, true, "exports", "health")}, []string{"exports", "health"}},
		{"a_newer_refresh_finding_none_wins", []JobRecord{
			missing("a", OpApply, hashA, time.Hour, true, "exports"),
			missing("r", OpRefresh, hashA, time.Minute, true),
		}, nil},
		{"a_newer_plan_does_not_touch_the_state", []JobRecord{
			missing("a", OpApply, hashA, time.Hour, true, "exports"),
			missing("p", OpPlan, hashB, time.Minute, true),
		}, []string{"exports"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UndeclaredOutputs(tc.jobs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("UndeclaredOutputs = %v, want %v", got, tc.want)
			}
		})
	}
}
