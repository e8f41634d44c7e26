package decide

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// j is the test object's jitter for an interval.
func j(d time.Duration) time.Duration { return Jitter(testUID, d) }

// dcase is one row of the decision table. want* fields are checked; a
// requeue of -1 is not checked.
type dcase struct {
	name    string
	kind    v1alpha1.WorkloadKind
	mut     func(o *Observation)
	op      Operation
	reason  Reason
	requeue time.Duration
	check   func(t *testing.T, d Decision, o Observation)
}

func runCases(t *testing.T, cases []dcase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			kind := c.kind
			if kind == "" {
				kind = v1alpha1.KindTerraformCluster
			}
			o := steady(kind)
			if c.mut != nil {
				c.mut(&o)
			}
			d := mustDecide(t, o)
			if d.Op != c.op || d.Reason != c.reason {
				t.Fatalf("got %s/%s (requeue %v), want %s/%s", d.Op, d.Reason, d.RequeueAfter, c.op, c.reason)
			}
			want := c.requeue
			if c.op.IsJob() && want == 0 {
				want = RequeueJobRunning
			}
			if want >= 0 && d.RequeueAfter != want {
				t.Fatalf("requeue %v, want %v", d.RequeueAfter, want)
			}
			if d.Job != nil {
				if n := len(d.Job.Name); n > MaxJobNameLength || !strings.HasPrefix(d.Job.Name, "captf-"+kind.Short()+"-") {
					t.Fatalf("bad Job name %q", d.Job.Name)
				}
				if want := JobName(o.Kind, o.Name, d.Op, d.Job.Attempt, d.Job.InputsHash, d.Job.Tick); d.Job.Name != want {
					t.Fatalf("Job name %q, want %q", d.Job.Name, want)
				}
			}
			if c.check != nil {
				c.check(t, d, o)
			}
		})
	}
}

func noState(o *Observation) {
	o.State = StateNotFound
	o.StateInputsHash = ""
	o.EverApplied = false
	o.Provisioned = false
	o.Jobs = nil
	o.LastApply, o.LastRefresh, o.LastDriftCheck = time.Time{}, time.Time{}, time.Time{}
	o.Inputs = InputsBuilt
	o.CurrentInputsHash = hashA
}

func changed(o *Observation) { o.CurrentInputsHash = hashB }

func deleting(o *Observation) { o.Deleting = true }

func lostState(o *Observation) {
	o.State = StateNotFound
	o.StateInputsHash = ""
}

func remediate(o *Observation) {
	o.Drift.Action = DriftRemediate
	o.DriftFound = true
}

func wantJob(f func(t *testing.T, p *JobPlan, o Observation)) func(t *testing.T, d Decision, o Observation) {
	return func(t *testing.T, d Decision, o Observation) {
		t.Helper()
		f(t, d.Job, o)
	}
}

func TestDecideOrder(t *testing.T) {
	runCases(t, []dcase{
		{name: "order/job_cache_behind_the_API_server_requeues_5s",
			mut: func(o *Observation) { o.JobCacheStale = true; changed(o) },
			op:  OpNone, reason: ReasonJobCacheStale, requeue: 5 * time.Second},
		{name: "order/a_Job_still_running_waits_with_a_1m_fallback",
			mut: func(o *Observation) { o.ActiveJob = &ActiveJob{Name: "x", Op: OpApply}; changed(o) },
			op:  OpNone, reason: ReasonJobRunning, requeue: time.Minute},
		{name: "order/paused_starts_nothing_new",
			mut: func(o *Observation) { o.Paused = true; changed(o) },
			op:  OpNone, reason: ReasonPaused, requeue: 0},
		{name: "order/deleting_with_no_state_drops_the_finalizer_at_once",
			mut: func(o *Observation) { noState(o); deleting(o) },
			op:  OpDropFinalizer, reason: ReasonNoStateToDestroy},
		{name: "order/deleting_with_no_state_drops_the_finalizer_without_owner_or_credentials",
			mut: func(o *Observation) {
				noState(o)
				deleting(o)
				o.OwnerWait = "OwnerNotFound"
				o.CredentialsWait = "IdentityNotFound"
			},
			op: OpDropFinalizer, reason: ReasonNoStateToDestroy},
		{name: "order/deleting_cluster_with_no_state_does_not_wait_for_dependents",
			mut: func(o *Observation) { noState(o); deleting(o); o.DependentsExist = true },
			op:  OpDropFinalizer, reason: ReasonNoStateToDestroy},
		{name: "deletion/a_succeeded_destroy_drops_the_finalizer",
			mut: func(o *Observation) {
				deleting(o)
				o.Jobs = append(o.Jobs, rec(OpDestroy, 1, time.Second, true))
			},
			op: OpDropFinalizer, reason: ReasonDestroySucceeded},
		{name: "deletion/a_succeeded_destroy_drops_the_finalizer_after_its_state_is_gone",
			mut: func(o *Observation) {
				deleting(o)
				o.State = StateNotFound
				o.EverApplied = true
				o.Jobs = append(o.Jobs, rec(OpDestroy, 1, time.Second, true))
			},
			op: OpDropFinalizer, reason: ReasonDestroySucceeded},
		{name: "deletion/a_failed_destroy_is_retried",
			mut: func(o *Observation) {
				deleting(o)
				o.Jobs = append(o.Jobs, rec(OpDestroy, 1, time.Hour, false))
			},
			op: OpDestroy, reason: ReasonDeleting},
		{name: "order/owner_not_ready_waits_30s_with_its_reason",
			mut: func(o *Observation) { o.OwnerWait = "WaitingForOwner"; changed(o) },
			op:  OpNone, reason: "WaitingForOwner", requeue: 30 * time.Second},
		{name: "order/an_owner_that_is_gone_does_not_stop_deletion",
			mut: func(o *Observation) { o.OwnerWait = "OwnerNotFound"; deleting(o) },
			op:  OpDestroy, reason: ReasonDeleting},
		{name: "order/credentials_not_ready_wait_30s_even_while_deleting",
			mut: func(o *Observation) { o.CredentialsWait = "NamespaceNotAllowed"; deleting(o) },
			op:  OpNone, reason: "NamespaceNotAllowed", requeue: 30 * time.Second},

		{name: "order/1_restore_named_by_the_annotation_runs_first",
			mut: func(o *Observation) { o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}; changed(o) },
			op:  OpRestore, reason: ReasonRestoreRequested,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.RestoreSerial != 7 || p.Tick != 7 || p.Attempt != 1 || p.InputsHash != hashB || p.DurableInputs {
					t.Fatalf("restore plan %+v", p)
				}
			})},
		{name: "order/1_restore_beats_a_due_drift_check",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "order/1_restore_of_a_provisioned_machine_runs_on_durable_inputs",
			kind: v1alpha1.KindTerraformMachine,
			mut:  func(o *Observation) { o.Restore = &RestoreRequest{Serial: 3, BackupFound: true} },
			op:   OpRestore, reason: ReasonRestoreRequested,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DurableInputs || p.InputsHash != hashA {
					t.Fatalf("restore plan %+v", p)
				}
			})},
		{name: "order/1_restore_without_inputs_to_run_on_holds_10m", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 3, BackupFound: true}
				o.DurableInputsMissing = true
			},
			op: OpNone, reason: ReasonDurableInputsMissing, requeue: 10 * time.Minute},
		{name: "order/1_restore_is_not_taken_while_deleting",
			mut: func(o *Observation) { o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}; deleting(o) },
			op:  OpDestroy, reason: ReasonDeleting},
		{name: "order/1_deleting_with_lost_state_restores_first",
			mut: func(o *Observation) {
				lostState(o)
				deleting(o)
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "order/1_restore_of_a_serial_without_a_backup_holds_10m",
			mut: func(o *Observation) { o.Restore = &RestoreRequest{Serial: 7}; changed(o) },
			op:  OpNone, reason: ReasonRestoreBackupNotFound, requeue: 10 * time.Minute},
		{name: "order/1_restore_value_that_is_not_a_serial_holds_10m",
			mut: func(o *Observation) { o.Restore = &RestoreRequest{BackupFound: true} },
			op:  OpNone, reason: ReasonRestoreBackupNotFound, requeue: 10 * time.Minute},
		{name: "order/1_restore_is_the_way_out_of_lost_state",
			mut: func(o *Observation) { lostState(o); o.Restore = &RestoreRequest{Serial: 2, BackupFound: true} },
			op:  OpRestore, reason: ReasonRestoreRequested},

		{name: "order/2_deleting_destroys_from_the_durable_inputs",
			mut: deleting,
			op:  OpDestroy, reason: ReasonDeleting,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DurableInputs || p.InputsHash != hashA || p.GuardDeletes {
					t.Fatalf("destroy plan %+v", p)
				}
			})},
		{name: "order/2_destroy_names_its_Job_from_the_state_hash_without_a_durable_hash",
			mut: func(o *Observation) { deleting(o); o.DurableInputsHash = ""; o.StateInputsHash = hashB; changed(o) },
			op:  OpDestroy, reason: ReasonDeleting,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.InputsHash != hashB {
					t.Fatalf("destroy inputs hash %q", p.InputsHash)
				}
			})},
		{name: "order/2_deleting_cluster_waits_for_its_machines_and_pools",
			mut: func(o *Observation) { deleting(o); o.DependentsExist = true },
			op:  OpNone, reason: ReasonDependentsExist, requeue: 30 * time.Second},
		{name: "order/2_machines_carry_no_wait_for_dependents",
			kind: v1alpha1.KindTerraformMachine,
			mut:  func(o *Observation) { deleting(o); o.DependentsExist = true },
			op:   OpDestroy, reason: ReasonDeleting},
		{name: "order/2_deleting_with_lost_state_is_held",
			mut: func(o *Observation) { lostState(o); deleting(o) },
			op:  OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "order/2_lost_state_abandoned_with_the_UID_drops_the_finalizer",
			mut: func(o *Observation) {
				lostState(o)
				deleting(o)
				o.AbandonInfrastructure = testUID
				o.CredentialsWait = "MirrorFailed"
			},
			op: OpDropFinalizer, reason: ReasonInfrastructureAbandoned},
		{name: "order/2_abandon_naming_another_UID_is_ignored",
			mut: func(o *Observation) { lostState(o); deleting(o); o.AbandonInfrastructure = "another-uid" },
			op:  OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "order/2_abandon_needs_lost_state",
			mut: func(o *Observation) { deleting(o); o.AbandonInfrastructure = testUID },
			op:  OpDestroy, reason: ReasonDeleting},
		{name: "order/2_a_requested_restore_wins_over_abandon",
			mut: func(o *Observation) {
				lostState(o)
				deleting(o)
				o.AbandonInfrastructure = testUID
				o.Restore = &RestoreRequest{Serial: 4, BackupFound: true}
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "job_inputs/a_machine_deleting_without_durable_inputs_holds_10m", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { deleting(o); o.DurableInputsMissing = true },
			op:  OpNone, reason: ReasonDurableInputsMissing, requeue: 10 * time.Minute},
		{name: "job_inputs/a_cluster_deleting_without_durable_inputs_destroys_with_its_current_inputs",
			mut: func(o *Observation) { deleting(o); o.DurableInputsMissing = true },
			op:  OpDestroy, reason: ReasonDeleting,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.DurableInputs || p.InputsHash != o.CurrentInputsHash {
					t.Fatalf("destroy plan %+v, want the current inputs %s", p, o.CurrentInputsHash)
				}
			})},
		{name: "job_inputs/a_pool_deleting_without_durable_inputs_destroys_with_its_current_inputs", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { deleting(o); o.DurableInputsMissing = true },
			op:  OpDestroy, reason: ReasonDeleting,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.DurableInputs {
					t.Fatalf("destroy plan %+v runs the missing durable inputs", p)
				}
			})},
		{name: "job_inputs/a_cluster_deleting_without_durable_or_current_inputs_holds_10m",
			mut: func(o *Observation) {
				deleting(o)
				o.DurableInputsMissing = true
				o.Inputs, o.CurrentInputsHash = InputsWaiting, ""
			},
			op: OpNone, reason: ReasonDurableInputsMissing, requeue: 10 * time.Minute},
		{name: "order/2_deleting_with_unreadable_state_still_destroys",
			mut: func(o *Observation) { deleting(o); o.State = StateUnreadable },
			op:  OpDestroy, reason: ReasonDeleting},
		{name: "order/2_deleting_with_state_from_a_failed_first_apply_destroys",
			mut: func(o *Observation) {
				deleting(o)
				o.StateInputsHash, o.EverApplied, o.Provisioned = "", false, false
			},
			op: OpDestroy, reason: ReasonDeleting},

		{name: "order/3_no_state_yet_applies_cluster",
			mut: noState,
			op:  OpApply, reason: ReasonNoState,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 1 || p.InputsHash != hashA || p.DurableInputs || !p.GuardDeletes {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/3_no_state_yet_applies_machine", kind: v1alpha1.KindTerraformMachine,
			mut: noState,
			op:  OpApply, reason: ReasonNoState,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.GuardDeletes || p.DurableInputs || p.InputsHash != hashA {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/3_no_state_yet_applies_pool", kind: v1alpha1.KindTerraformMachinePool,
			mut: noState,
			op:  OpApply, reason: ReasonNoState},
		{name: "order/4_state_without_inputs_hash_applies",
			mut: func(o *Observation) { o.StateInputsHash = ""; o.EverApplied, o.Provisioned = false, false },
			op:  OpApply, reason: ReasonStateWithoutInputsHash},
		{name: "order/4_state_without_inputs_hash_retries_a_machine's_first_apply", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				noState(o)
				o.State = StateRead
				o.Jobs = []JobRecord{failedApply(1, 5*time.Minute)}
			},
			op: OpApply, reason: ReasonStateWithoutInputsHash,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 2 {
					t.Fatalf("attempt %d", p.Attempt)
				}
			})},
		// Retries and Backoff: a machine's state without the inputs hash
		// retries its first apply; the backup every new serial gets (the
		// failed apply's state, or the empty one init wrote) is no sign of
		// a successful apply.
		{name: "order/4_machine_state_without_inputs_hash_and_only_a_backup_retries_its_first_apply", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				noState(o)
				o.State = StateRead
				o.EverApplied = true
				o.Jobs = []JobRecord{failedApply(1, 5*time.Minute)}
			},
			op: OpApply, reason: ReasonStateWithoutInputsHash},
		{name: "order/4_machine_state_without_inputs_hash_after_a_succeeded_apply_is_lost", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				noState(o)
				o.State = StateRead
				o.EverApplied, o.SucceededApply = true, true
			},
			op: OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "order/4_mutable_state_without_inputs_hash_applies_even_after_an_apply",
			kind: v1alpha1.KindTerraformMachinePool,
			mut:  func(o *Observation) { o.StateInputsHash = "" },
			op:   OpApply, reason: ReasonStateWithoutInputsHash},
		{name: "order/4_machine_state_without_inputs_hash_after_an_apply_is_lost", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.StateInputsHash = "" },
			op:  OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "order/5_cluster_inputs_hash_differs_from_state_applies",
			mut: changed,
			op:  OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.InputsHash != hashB || !p.GuardDeletes || p.AllowDeletesHash != "" || p.DriftRemediation {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/5_pool_inputs_hash_differs_from_state_applies", kind: v1alpha1.KindTerraformMachinePool,
			mut: changed,
			op:  OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.GuardDeletes || p.Attempt != 2 {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/5_machine_inputs_are_never_compared", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.Inputs = InputsBuilt; changed(o) },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_newest_apply_failed_applies_again_though_inputs_match",
			mut: func(o *Observation) { o.Jobs = append(o.Jobs, failedApply(2, 20*time.Minute)) },
			op:  OpApply, reason: ReasonLastApplyFailed,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 3 || p.InputsHash != hashA {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/6_newest_apply_interrupted_applies_again_without_backoff",
			mut: func(o *Observation) {
				f := failedApply(2, 10*time.Second)
				f.Interrupted = true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpApply, reason: ReasonLastApplyFailed},
		{name: "order/6_not_after_a_blocked_apply",
			mut: func(o *Observation) {
				f := failedApply(2, 20*time.Minute)
				f.Blocked = true
				o.Jobs = append(o.Jobs, failedApply(1, 30*time.Minute), f)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_not_after_an_apply_stopped_by_a_plan_mismatch",
			mut: func(o *Observation) {
				f := failedApply(2, 20*time.Minute)
				f.PlanChanged = true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_not_after_a_failed_drift_remediation",
			mut: func(o *Observation) {
				f := failedApply(2, 20*time.Minute)
				f.DriftRemediation = true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_a_failure_passed_over_remediations_still_counts",
			mut: func(o *Observation) {
				r := failedApply(3, 10*time.Minute)
				r.DriftRemediation = true
				o.Jobs = append(o.Jobs, failedApply(2, 20*time.Minute), r)
			},
			op: OpApply, reason: ReasonLastApplyFailed},
		{name: "order/6_a_failure_resolved_by_a_newer_success_is_not_retried",
			mut: func(o *Observation) { o.Jobs = append(o.Jobs, failedApply(0, 3*time.Hour)) },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_not_for_a_machine", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.Jobs = append(o.Jobs, failedApply(2, 20*time.Minute)) },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/6_apply_Job_deleted_while_it_ran_keeps_an_apply_of_the_current_inputs_due",
			kind: v1alpha1.KindTerraformMachinePool,
			mut:  func(o *Observation) { o.InterruptedApply = true },
			op:   OpApply, reason: ReasonApplyInterrupted},
		{name: "order/6_apply_Job_deleted_while_it_ran_is_guarded_on_a_cluster",
			mut: func(o *Observation) { o.InterruptedApply = true },
			op:  OpApply, reason: ReasonApplyInterrupted,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.GuardDeletes {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "order/7_drift_found_with_action_Remediate_applies",
			mut: remediate,
			op:  OpApply, reason: ReasonDriftRemediation,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DriftRemediation || p.Tick != o.LastDriftCheck.Unix() || !p.GuardDeletes || p.InputsHash != hashA {
					t.Fatalf("remediation plan %+v", p)
				}
			})},
		{name: "order/7_pool_remediation_applies_unguarded", kind: v1alpha1.KindTerraformMachinePool,
			mut: remediate,
			op:  OpApply, reason: ReasonDriftRemediation,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.GuardDeletes || !p.DriftRemediation {
					t.Fatalf("remediation plan %+v", p)
				}
			})},
		{name: "order/7_drift_found_with_action_Report_does_not_apply",
			mut: func(o *Observation) { o.DriftFound = true },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/7_a_machine_is_always_Report", kind: v1alpha1.KindTerraformMachine,
			mut: remediate,
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/7_an_apply_that_succeeded_after_the_check_resolved_the_drift",
			mut: func(o *Observation) {
				remediate(o)
				o.LastApply = ago(time.Minute)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "order/7_drift_found_by_a_drift_Job_bookkept_this_pass",
			mut: func(o *Observation) {
				o.Drift.Action = DriftRemediate
				o.LastDriftCheck = ago(20 * time.Minute)
				o.Jobs = append(o.Jobs, JobRecord{Name: "d", Op: OpDrift, Attempt: 4, Finished: ago(time.Minute), Succeeded: true, DriftDetected: true})
			},
			op: OpApply, reason: ReasonDriftRemediation,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Tick != ago(time.Minute).Unix() {
					t.Fatalf("remediation tick %d", p.Tick)
				}
			})},

		{name: "state/lost_state_requeues_1m",
			mut: lostState,
			op:  OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "state/a_provisioned_object_without_state_is_lost",
			mut: func(o *Observation) { lostState(o); o.EverApplied = false },
			op:  OpNone, reason: ReasonStateLost, requeue: time.Minute},
		{name: "state/unreadable_state_requeues_1m",
			mut: func(o *Observation) { o.State = StateUnreadable; changed(o) },
			op:  OpNone, reason: ReasonStateUnreadable, requeue: time.Minute},
		{name: "inputs/a_dependency_not_ready_waits_30s_with_its_reason", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { noState(o); o.Inputs = InputsWaiting; o.InputsReason = "WaitingForBootstrapData" },
			op:  OpNone, reason: "WaitingForBootstrapData", requeue: 30 * time.Second},
		{name: "inputs/waiting_without_a_named_reason_waits_30s", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { noState(o); o.Inputs = InputsWaiting },
			op:  OpNone, reason: ReasonInputsNotRendered, requeue: 30 * time.Second},
		{name: "inputs/too_large_waits_10m",
			mut: func(o *Observation) { noState(o); o.Inputs = InputsTooLarge },
			op:  OpNone, reason: ReasonInputsTooLarge, requeue: 10 * time.Minute},
		{name: "inputs/not_rendered_with_an_apply_due_waits_30s", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { noState(o); o.Inputs = InputsNotRendered },
			op:  OpNone, reason: ReasonInputsNotRendered, requeue: 30 * time.Second},
		{name: "inputs/cluster_drift_runs_on_the_current_inputs",
			mut: func(o *Observation) { o.LastDriftCheck = ago(40 * time.Minute) },
			op:  OpDrift, reason: ReasonDriftDue,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.DurableInputs || p.InputsHash != hashA {
					t.Fatalf("drift plan %+v", p)
				}
			})},
		{name: "inputs/cluster_drift_falls_back_to_the_durable_inputs_when_current_cannot_be_built",
			mut: func(o *Observation) {
				o.LastDriftCheck = ago(40 * time.Minute)
				o.Inputs, o.CurrentInputsHash, o.InputsReason = InputsWaiting, "", "WaitingForClusterExports"
			},
			op: OpDrift, reason: ReasonDriftDue,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DurableInputs || p.InputsHash != hashA {
					t.Fatalf("drift plan %+v", p)
				}
			})},
		{name: "inputs/machine_drift_always_runs_on_the_durable_inputs", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.LastDriftCheck = ago(40 * time.Minute)
				o.Inputs = InputsBuilt
				o.CurrentInputsHash = hashB
			},
			op: OpDrift, reason: ReasonDriftDue,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DurableInputs || p.InputsHash != hashA {
					t.Fatalf("drift plan %+v", p)
				}
			})},
		{name: "inputs/durable_inputs_missing_holds_a_due_refresh_10m", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.LastDriftCheck = ago(40 * time.Minute); o.DurableInputsMissing = true },
			op:  OpNone, reason: ReasonDurableInputsMissing, requeue: 10 * time.Minute},
		{name: "inputs/durable_inputs_missing_does_not_hold_a_cluster_with_current_inputs",
			mut: func(o *Observation) { o.LastDriftCheck = ago(40 * time.Minute); o.DurableInputsMissing = true },
			op:  OpDrift, reason: ReasonDriftDue},
		{name: "jobpolicy/an_invalid_Job_policy_holds_any_Job_10m",
			mut: func(o *Observation) { o.JobPolicyInvalid = true; changed(o) },
			op:  OpNone, reason: ReasonJobPolicyInvalid, requeue: 10 * time.Minute},
		{name: "jobpolicy/an_invalid_Job_policy_does_not_hold_dropping_the_finalizer",
			mut: func(o *Observation) { noState(o); deleting(o); o.JobPolicyInvalid = true },
			op:  OpDropFinalizer, reason: ReasonNoStateToDestroy},
	})
}

func TestDecideSchedule(t *testing.T) {
	const drift30 = 30 * time.Minute
	cases := []dcase{
		{name: "schedule/1_machine_refreshes_after_a_successful_apply", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Jobs = append(o.Jobs, JobRecord{Name: "a2", Op: OpApply, Attempt: 2, Finished: ago(time.Minute), Succeeded: true})
				o.LastRefresh = ago(2 * time.Minute)
			},
			op: OpRefresh, reason: ReasonPostApplyRefresh,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DurableInputs || p.Tick != o.LastRefresh.Unix() || p.Attempt != 1 {
					t.Fatalf("refresh plan %+v", p)
				}
			})},
		{name: "schedule/1_pool_refreshes_after_a_successful_apply", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.LastApply = ago(time.Second) },
			op:  OpRefresh, reason: ReasonPostApplyRefresh},
		{name: "schedule/1_a_cluster_takes_no_post_apply_refresh",
			mut: func(o *Observation) { o.LastApply = ago(time.Second) },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/1_a_definite_apply_reading_stands_in_for_the_post_apply_refresh", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.LastApply = ago(time.Minute); o.LastRefresh = o.LastApply },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/1_a_drift_check_after_the_apply_also_took_the_reading", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.LastApply = ago(10 * time.Minute); o.LastRefresh = ago(time.Hour) },
			op:  OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/1_a_refresh_bookkept_this_pass_took_the_post_apply_reading", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.LastApply = ago(time.Minute)
				o.LastRefresh = ago(time.Hour)
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRefresh, Attempt: 3, Finished: ago(10 * time.Second), Succeeded: true})
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "schedule/2_pool_membership_converging_refreshes_every_30s", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.MembershipConverging = true; o.LastRefresh = ago(40 * time.Second) },
			op:  OpRefresh, reason: ReasonMembershipConverging},
		{name: "schedule/2_pool_membership_converging_requeues_at_30s_plus_jitter", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.MembershipConverging = true },
			op:  OpNone, reason: ReasonScheduled, requeue: 20*time.Second + j(30*time.Second)},
		{name: "schedule/2_pool_converging_uses_its_membership_interval_when_shorter", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.MembershipConverging = true; o.MembershipRefreshIntervalSeconds = 15 },
			op:  OpNone, reason: ReasonScheduled, requeue: 5*time.Second + j(15*time.Second)},
		{name: "schedule/2_pool_pending_health_refreshes_every_30s_flat", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) {
				o.Health = HealthPending
				o.PendingRefreshes = 4
				o.LastRefresh = ago(31 * time.Second)
			},
			op: OpRefresh, reason: ReasonHealthPending},
		{name: "schedule/2_pool_pending_health_is_not_backed_off", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.Health = HealthPending; o.PendingRefreshes = 6 },
			op:  OpNone, reason: ReasonScheduled, requeue: 20*time.Second + j(30*time.Second)},
		{name: "schedule/3_pending_health_of_a_machine_refreshes_after_30s", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Health = HealthPending
				o.PendingRefreshes = 1
				o.LastRefresh = ago(31 * time.Second)
			},
			op: OpRefresh, reason: ReasonHealthPending},
		{name: "schedule/3_pending_health_refreshes_even_with_drift_disabled", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.Health = HealthPending; o.Drift.IntervalSeconds = ptr.To[int32](0) },
			op:  OpNone, reason: ReasonScheduled, requeue: 20*time.Second + j(30*time.Second)},
		{name: "schedule/4_pool_membership_refresh_interval_elapsed", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.LastRefresh = ago(70 * time.Second) },
			op:  OpRefresh, reason: ReasonMembershipRefreshDue},
		{name: "schedule/4_pool_membership_interval_unset_means_60s", kind: v1alpha1.KindTerraformMachinePool,
			op: OpNone, reason: ReasonScheduled, requeue: 50*time.Second + j(time.Minute)},
		{name: "schedule/4_pool_membership_interval_as_configured", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { o.MembershipRefreshIntervalSeconds = 120 },
			op:  OpNone, reason: ReasonScheduled, requeue: 110*time.Second + j(2*time.Minute)},
		{name: "schedule/5_machine_health_check_interval_with_annotateMachine", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Remediation = RemediationSettings{AnnotateMachine: true, HealthCheckIntervalSeconds: 120}
				o.LastRefresh = ago(3 * time.Minute)
			},
			op: OpRefresh, reason: ReasonHealthCheckDue},
		{name: "schedule/5_health_check_interval_defaults_to_300s", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Remediation = RemediationSettings{AnnotateMachine: true}
				o.LastRefresh = ago(4 * time.Minute)
				o.LastDriftCheck = ago(5 * time.Minute)
			},
			op: OpNone, reason: ReasonScheduled, requeue: time.Minute + j(5*time.Minute)},
		{name: "schedule/5_health_check_interval_is_independent_of_drift_interval_0", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Remediation = RemediationSettings{AnnotateMachine: true, HealthCheckIntervalSeconds: 60}
				o.Drift.IntervalSeconds = ptr.To[int32](0)
				o.LastRefresh, o.LastDriftCheck = ago(2*time.Minute), time.Time{}
			},
			op: OpRefresh, reason: ReasonHealthCheckDue},
		{name: "schedule/5_no_health_check_refresh_without_annotateMachine", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Remediation = RemediationSettings{HealthCheckIntervalSeconds: 60}
				o.LastRefresh = ago(4 * time.Minute)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/5_health_check_refresh_only_once_provisioned", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Remediation = RemediationSettings{AnnotateMachine: true, HealthCheckIntervalSeconds: 60}
				o.Provisioned = false
				o.LastRefresh = ago(4 * time.Minute)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/6_drift_interval_elapsed_runs_drift",
			mut: func(o *Observation) { o.LastDriftCheck = ago(35 * time.Minute) },
			op:  OpDrift, reason: ReasonDriftDue,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Tick != o.LastDriftCheck.Unix() || p.Attempt != 1 {
					t.Fatalf("drift plan %+v", p)
				}
			})},
		{name: "schedule/6_first_drift_check_is_one_interval_after_the_last_successful_apply",
			mut: func(o *Observation) {
				o.LastDriftCheck = time.Time{}
				o.LastApply = ago(20 * time.Minute)
				o.Jobs = nil
			},
			op: OpNone, reason: ReasonScheduled, requeue: 10*time.Minute + j(drift30)},
		{name: "schedule/6_first_drift_check_runs_once_that_interval_elapsed",
			mut: func(o *Observation) {
				o.LastDriftCheck = time.Time{}
				o.LastApply = ago(40 * time.Minute)
				o.Jobs = nil
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "schedule/6_later_re_applies_do_not_postpone_the_next_drift_check", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) {
				o.LastDriftCheck = ago(31 * time.Minute)
				o.LastApply = ago(2 * time.Minute)
				o.LastRefresh = ago(time.Minute)
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "schedule/6_interval_0_disables_drift_for_a_cluster",
			mut: func(o *Observation) {
				o.Drift.IntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpNone, reason: ReasonUpToDate, requeue: 0},
		{name: "schedule/6_a_cluster_ignores_its_own_spec_defaults",
			mut: func(o *Observation) {
				o.Drift.DefaultsIntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "schedule/6_interval_0_disables_drift_for_a_machine", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Drift.IntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpNone, reason: ReasonUpToDate, requeue: 0},
		{name: "schedule/6_inherited_defaults_interval_0_disables_a_machine's_drift", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Drift.DefaultsIntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpNone, reason: ReasonUpToDate, requeue: 0},
		{name: "schedule/6_a_machine's_own_interval_wins_over_the_inherited_default", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.Drift.IntervalSeconds = ptr.To[int32](600)
				o.Drift.DefaultsIntervalSeconds = ptr.To[int32](0)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 5*time.Minute + j(10*time.Minute)},
		{name: "schedule/6_a_machine_inherits_the_cluster_defaults_interval", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.Drift.DefaultsIntervalSeconds = ptr.To[int32](900) },
			op:  OpNone, reason: ReasonScheduled, requeue: 10*time.Minute + j(15*time.Minute)},
		{name: "schedule/6_interval_0_never_disables_a_pool's_drift", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) {
				o.Drift.IntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "schedule/6_inherited_defaults_interval_0_leaves_a_pool_on_the_manager_default", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) {
				o.Drift.DefaultsIntervalSeconds = ptr.To[int32](0)
				o.LastDriftCheck = ago(31 * time.Minute)
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "schedule/6_an_applied_object_not_yet_provisioned_is_still_checked", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) { o.Provisioned = false; o.LastDriftCheck = ago(3 * time.Hour) },
			op:  OpDrift, reason: ReasonDriftDue},
		{name: "schedule/7_otherwise_requeue_at_the_soonest_due",
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(drift30)},
		{name: "schedule/7_nothing_scheduled_waits_for_a_watch_event",
			mut: func(o *Observation) { o.Drift.IntervalSeconds = ptr.To[int32](0) },
			op:  OpNone, reason: ReasonUpToDate, requeue: 0},
		{name: "schedule/the_first_one_due_in_order_wins", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.LastApply = ago(time.Hour)
				o.LastRefresh, o.LastDriftCheck = ago(2*time.Hour), ago(2*time.Hour)
				o.Health = HealthPending
			},
			op: OpRefresh, reason: ReasonPostApplyRefresh},
		{name: "schedule/a_failed_post_apply_refresh_stays_due_under_backoff", kind: v1alpha1.KindTerraformMachine,
			mut: func(o *Observation) {
				o.LastApply = ago(time.Minute)
				o.LastRefresh = ago(time.Hour)
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRefresh, Attempt: 1, Finished: ago(30 * time.Second)})
			},
			op: OpNone, reason: ReasonPostApplyRefresh.Backoff(), requeue: 30 * time.Second},
		{name: "schedule/a_failed_drift_check_is_retried_under_backoff",
			mut: func(o *Observation) {
				o.LastDriftCheck = ago(time.Hour)
				o.Jobs = append(o.Jobs, JobRecord{Name: "d", Op: OpDrift, Attempt: 5, Finished: ago(30 * time.Second)})
			},
			op: OpNone, reason: ReasonDriftDue.Backoff(), requeue: 30 * time.Second},
		{name: "schedule/a_drift_check_retried_after_its_backoff_takes_the_next_attempt",
			mut: func(o *Observation) {
				o.LastDriftCheck = ago(time.Hour)
				o.Jobs = append(o.Jobs, JobRecord{Name: "d", Op: OpDrift, Attempt: 5, Finished: ago(2 * time.Minute)})
			},
			op: OpDrift, reason: ReasonDriftDue,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 6 {
					t.Fatalf("attempt %d", p.Attempt)
				}
			})},
	}
	// Pending health of a cluster or machine: 30s, 1m, 2m, 4m, then 5m.
	for _, kind := range []v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster, v1alpha1.KindTerraformMachine} {
		for k, delay := range []time.Duration{30 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
			cases = append(cases, dcase{
				name: fmt.Sprintf("schedule/3_pending_backoff_%s_after_%d_pending_samples_is_%s",
					strings.ToLower(strings.TrimPrefix(string(kind), "Terraform")), k, compactDur(delay)),
				kind: kind,
				mut: func(o *Observation) {
					o.Health = HealthPending
					o.PendingRefreshes = k
					o.Drift.IntervalSeconds = ptr.To[int32](0)
				},
				op: OpNone, reason: ReasonScheduled, requeue: delay - 10*time.Second + j(delay),
			})
		}
	}
	runCases(t, cases)
}

func compactDur(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

func TestDecideBackoff(t *testing.T) {
	runCases(t, []dcase{
		{name: "backoff/during_the_delay_the_decision_is_InputsChangedBackoff",
			mut: func(o *Observation) { changed(o); o.Jobs = append(o.Jobs, failedApply(2, 20*time.Second)) },
			op:  OpNone, reason: "InputsChangedBackoff", requeue: 40 * time.Second},
		{name: "backoff/delay_counts_from_when_the_newest_failed_Job_finished",
			mut: func(o *Observation) {
				o.Jobs = append(o.Jobs, failedApply(2, 5*time.Minute), failedApply(3, 30*time.Second))
			},
			op: OpNone, reason: ReasonLastApplyFailed.Backoff(), requeue: 90 * time.Second},
		{name: "backoff/limit_3/after_3_failures_the_apply_waits_the_10m_cap",
			mut: func(o *Observation) {
				o.Jobs = append(o.Jobs, failedApply(2, 9*time.Minute), failedApply(3, 8*time.Minute), failedApply(4, time.Minute))
			},
			op: OpNone, reason: ReasonLastApplyFailed.Backoff(), requeue: 9 * time.Minute},
		{name: "backoff/once_the_delay_elapsed_the_apply_starts",
			mut: func(o *Observation) { o.Jobs = append(o.Jobs, failedApply(2, 61*time.Second)) },
			op:  OpApply, reason: ReasonLastApplyFailed},
		{name: "backoff/interrupted_Jobs_between_failures_do_not_count",
			mut: func(o *Observation) {
				i := failedApply(3, 10*time.Second)
				i.Interrupted = true
				o.Jobs = append(o.Jobs, failedApply(2, 90*time.Second), i)
			},
			op: OpApply, reason: ReasonLastApplyFailed},
		{name: "backoff/a_deadline_kill_counts_even_if_the_runner_reported_interrupted",
			mut: func(o *Observation) {
				f := failedApply(2, 10*time.Second)
				f.Interrupted, f.DeadlineExceeded = true, true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpNone, reason: ReasonLastApplyFailed.Backoff(), requeue: 50 * time.Second},
		{name: "backoff/a_failing_drift_check_never_delays_an_apply",
			mut: func(o *Observation) {
				changed(o)
				o.Jobs = append(o.Jobs, JobRecord{Name: "d", Op: OpDrift, Attempt: 1, Finished: ago(10 * time.Second)})
			},
			op: OpApply, reason: ReasonInputsChanged},
		{name: "backoff/a_lease_wait_leaves_no_Job_so_nothing_counts",
			mut: changed,
			op:  OpApply, reason: ReasonInputsChanged},
		{name: "backoff/destroy_retries_forever_as_DeletingBackoff",
			mut: func(o *Observation) {
				deleting(o)
				o.Jobs = append(o.Jobs, JobRecord{Name: "x", Op: OpDestroy, Attempt: 7, Finished: ago(10 * time.Second)})
			},
			op: OpNone, reason: "DeletingBackoff", requeue: 50 * time.Second},
		{name: "backoff/plan_backs_off_in_the_plan_flow",
			mut: func(o *Observation) {
				changed(o)
				o.ApplyPolicy = ApplyManual
				o.Jobs = append(o.Jobs, JobRecord{Name: "p", Op: OpPlan, Attempt: 1, Finished: ago(10 * time.Second), InputsHash: hashB})
			},
			op: OpNone, reason: ReasonInputsChanged.Backoff(), requeue: 50 * time.Second},
		{name: "backoff/a_plan_Job_that_succeeded_but_whose_plan_could_not_be_read_counts",
			mut: func(o *Observation) {
				changed(o)
				o.ApplyPolicy = ApplyManual
				o.Jobs = append(o.Jobs, JobRecord{Name: "p", Op: OpPlan, Attempt: 1, Finished: ago(10 * time.Second), Succeeded: true, PlanUnreadable: true})
			},
			op: OpNone, reason: ReasonInputsChanged.Backoff(), requeue: 50 * time.Second},

		{name: "backoff/restore_counts_toward_no_backoff",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 8, BackupFound: true}
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRestore, Attempt: 1, Finished: ago(time.Second), RestoreSerial: 7})
			},
			op: OpRestore, reason: ReasonRestoreRequested,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 2 || p.RestoreSerial != 8 {
					t.Fatalf("restore plan %+v", p)
				}
			})},
		{name: "backoff/a_failed_restore_is_never_retried_for_the_same_serial",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastRestoredSerial = 7
				o.LastDriftCheck = ago(3 * time.Hour)
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRestore, Attempt: 1, Finished: ago(time.Hour), RestoreSerial: 7})
			},
			op: OpNone, reason: ReasonRestoreFailed, requeue: 10 * time.Minute},
		{name: "backoff/a_restore_killed_by_its_deadline_is_a_failed_restore",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastRestoredSerial = 7
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRestore, Attempt: 1, Finished: ago(time.Hour), RestoreSerial: 7, DeadlineExceeded: true, Interrupted: true})
			},
			op: OpNone, reason: ReasonRestoreFailed, requeue: 10 * time.Minute},
		{name: "backoff/a_failed_restore_is_retried_once_the_annotation_is_set_again",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRestore, Attempt: 1, Finished: ago(time.Minute), RestoreSerial: 7})
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "backoff/a_failed_restore_is_retried_after_the_failed_Job_is_deleted",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastRestoredSerial = 7
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "backoff/an_interrupted_restore_is_retried",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastRestoredSerial = 7
				o.Jobs = append(o.Jobs, JobRecord{Name: "r", Op: OpRestore, Attempt: 1, Finished: ago(time.Minute), RestoreSerial: 7, Interrupted: true})
			},
			op: OpRestore, reason: ReasonRestoreRequested},
		{name: "backoff/a_successful_restore_is_not_repeated",
			mut: func(o *Observation) {
				o.Restore = &RestoreRequest{Serial: 7, BackupFound: true}
				o.LastRestoredSerial = 7
				o.Jobs = append(o.Jobs,
					JobRecord{Name: "r1", Op: OpRestore, Attempt: 1, Finished: ago(2 * time.Minute), RestoreSerial: 7},
					JobRecord{Name: "r2", Op: OpRestore, Attempt: 2, Finished: ago(time.Minute), RestoreSerial: 7, Succeeded: true})
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},

		{name: "backoff/remediation_cap/limit_1_one_failed_remediation_stops_remediation",
			mut: func(o *Observation) {
				remediate(o)
				o.History.Failed = 1
				r := failedApply(2, 4*time.Minute)
				r.DriftRemediation = true
				o.Jobs = append(o.Jobs, r)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "backoff/remediation_cap/limit_0_counts_as_1",
			mut: func(o *Observation) {
				remediate(o)
				o.History.Failed = 0
				r := failedApply(2, 4*time.Minute)
				r.DriftRemediation = true
				o.Jobs = append(o.Jobs, r)
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "backoff/remediation_cap/limit_3_after_2_failures_remediation_retries_under_backoff",
			mut: func(o *Observation) {
				remediate(o)
				a, b := failedApply(2, 4*time.Minute), failedApply(3, 150*time.Second)
				a.DriftRemediation, b.DriftRemediation = true, true
				o.Jobs = append(o.Jobs, a, b)
			},
			op: OpApply, reason: ReasonDriftRemediation,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.Attempt != 4 {
					t.Fatalf("attempt %d", p.Attempt)
				}
			})},
		{name: "backoff/remediation_cap/limit_3_after_3_failures_drift_stays_pending",
			mut: func(o *Observation) {
				remediate(o)
				for i, d := range []time.Duration{4 * time.Minute, 3 * time.Minute, 2 * time.Minute} {
					f := failedApply(2+i, d)
					f.DriftRemediation = true
					o.Jobs = append(o.Jobs, f)
				}
			},
			op: OpNone, reason: ReasonScheduled, requeue: 25*time.Minute + j(30*time.Minute)},
		{name: "backoff/remediation_cap/a_successful_drift_check_resets_the_count",
			mut: func(o *Observation) {
				remediate(o)
				o.History.Failed = 1
				// Failed before the last check (5m ago), and past its 10m backoff.
				f := failedApply(2, 11*time.Minute)
				f.DriftRemediation = true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpApply, reason: ReasonDriftRemediation},
		{name: "backoff/remediation_cap/a_reset_cap_still_waits_out_the_apply_backoff",
			mut: func(o *Observation) {
				remediate(o)
				o.History.Failed = 1
				f := failedApply(2, 6*time.Minute)
				f.DriftRemediation = true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpNone, reason: ReasonDriftRemediation.Backoff(), requeue: 4 * time.Minute},
		{name: "backoff/remediation_cap/plan_changed_applies_do_not_count",
			mut: func(o *Observation) {
				remediate(o)
				o.History.Failed = 1
				f := failedApply(2, 4*time.Minute)
				f.DriftRemediation, f.PlanChanged = true, true
				o.Jobs = append(o.Jobs, f)
			},
			op: OpApply, reason: ReasonDriftRemediation},
	})
}

func TestDecideApproval(t *testing.T) {
	manual := func(o *Observation) { o.ApplyPolicy = ApplyManual }
	blockedB := func(o *Observation) {
		changed(o)
		f := JobRecord{Name: "blocked", Op: OpApply, Attempt: 2, Finished: ago(10 * time.Second), InputsHash: hashB, Blocked: true}
		o.Jobs = append(o.Jobs, f)
	}
	blockedRemediation := func(o *Observation) {
		remediate(o)
		f := JobRecord{Name: "blocked", Op: OpApply, Attempt: 2, Finished: ago(4 * time.Minute), InputsHash: hashA, Blocked: true, DriftRemediation: true}
		o.Jobs = append(o.Jobs, f)
	}
	runCases(t, []dcase{
		{name: "approval/the_first_apply_of_a_new_cluster_is_never_gated",
			mut: func(o *Observation) { noState(o); manual(o) },
			op:  OpApply, reason: ReasonNoState,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.ExpectPlanHash != "" {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/manual_input_change_starts_a_plan_Job_instead",
			mut: func(o *Observation) { manual(o); changed(o) },
			op:  OpPlan, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.InputsHash != hashB || p.Attempt != 1 || p.GuardDeletes {
					t.Fatalf("plan %+v", p)
				}
			})},
		{name: "approval/manual_state_without_inputs_hash_is_gated",
			mut: func(o *Observation) { manual(o); o.StateInputsHash = "" },
			op:  OpPlan, reason: ReasonStateWithoutInputsHash},
		{name: "approval/manual_plan_awaits_approval_rechecked_at_most_every_10m",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.Plan = &PlanPreview{InputsHash: hashB, PlanHash: planHash}
			},
			op: OpNone, reason: ReasonPlanAwaitingApproval, requeue: 10 * time.Minute},
		{name: "approval/manual_wait_starts_no_further_Job",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.Plan = &PlanPreview{InputsHash: hashB, PlanHash: planHash}
				o.LastDriftCheck = ago(3 * time.Hour)
			},
			op: OpNone, reason: ReasonPlanAwaitingApproval, requeue: 10 * time.Minute},
		{name: "approval/manual_approved_plan_applies_expecting_that_plan",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.Plan = &PlanPreview{InputsHash: hashB, PlanHash: planHash}
				o.ApprovePlan = planHash
			},
			op: OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.ExpectPlanHash != planHash || p.GuardDeletes || p.InputsHash != hashB {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/manual_plan_without_changes_needs_no_approval",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.Plan = &PlanPreview{InputsHash: hashB, PlanHash: "p2:empty", NoChanges: true}
			},
			op: OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.ExpectPlanHash != "p2:empty" {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/manual_plan_of_other_inputs_is_planned_again",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.Plan = &PlanPreview{InputsHash: hashA, PlanHash: planHash}
				o.ApprovePlan = planHash
			},
			op: OpPlan, reason: ReasonInputsChanged},
		{name: "approval/manual_changed_plan_waits_for_the_new_plan's_approval",
			mut: func(o *Observation) {
				manual(o)
				changed(o)
				o.ApprovePlan = planHash
				o.Plan = &PlanPreview{InputsHash: hashB, PlanHash: "p2:other"}
				o.Jobs = append(o.Jobs, JobRecord{Name: "pc", Op: OpApply, Attempt: 2, Finished: ago(time.Second), InputsHash: hashB, PlanChanged: true})
			},
			op: OpNone, reason: ReasonPlanAwaitingApproval, requeue: 10 * time.Minute},
		{name: "approval/manual_drift_remediation_is_gated",
			mut: func(o *Observation) { manual(o); remediate(o) },
			op:  OpPlan, reason: ReasonDriftRemediation},
		{name: "approval/manual_approved_remediation_applies_as_a_remediation",
			mut: func(o *Observation) {
				manual(o)
				remediate(o)
				o.Plan = &PlanPreview{InputsHash: hashA, PlanHash: planHash}
				o.ApprovePlan = planHash
			},
			op: OpApply, reason: ReasonDriftRemediation,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.DriftRemediation || p.ExpectPlanHash != planHash {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/manual_retry_of_a_failed_apply_is_gated",
			mut: func(o *Observation) { manual(o); o.Jobs = append(o.Jobs, failedApply(2, time.Hour)) },
			op:  OpPlan, reason: ReasonLastApplyFailed},
		{name: "approval/blocked_hash_is_not_re_applied_and_rechecked_every_10m",
			mut: blockedB,
			op:  OpNone, reason: ReasonDestructivePlanBlocked, requeue: 10 * time.Minute},
		{name: "approval/a_blocked_input_change_pauses_drift_and_health_checks",
			mut: func(o *Observation) { blockedB(o); o.LastDriftCheck = ago(3 * time.Hour) },
			op:  OpNone, reason: ReasonDestructivePlanBlocked, requeue: 10 * time.Minute},
		{name: "approval/approving_the_blocked_hash_applies_at_once_without_backoff",
			mut: func(o *Observation) { blockedB(o); o.ApproveDestructivePlan = hashB },
			op:  OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if !p.GuardDeletes || p.AllowDeletesHash != hashB || p.Attempt != 3 {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/changing_the_inputs_after_a_block_applies_at_once",
			mut: func(o *Observation) { blockedB(o); o.CurrentInputsHash = "h2:cccc" },
			op:  OpApply, reason: ReasonInputsChanged},
		{name: "approval/an_input_change_with_no_apply_retained_is_not_blocked",
			mut: func(o *Observation) { changed(o); o.Jobs = nil },
			op:  OpApply, reason: ReasonInputsChanged},
		{name: "approval/an_approval_of_another_hash_allows_no_deletes",
			mut: func(o *Observation) { changed(o); o.ApproveDestructivePlan = hashA },
			op:  OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.AllowDeletesHash != "" {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/a_blocked_drift_remediation_keeps_drift_checks_running",
			mut: func(o *Observation) {
				blockedRemediation(o)
				o.LastDriftCheck = ago(40 * time.Minute)
				o.Jobs[1].Finished = ago(35 * time.Minute)
			},
			op: OpDrift, reason: ReasonDriftDue},
		{name: "approval/a_blocked_drift_remediation_is_rechecked_at_most_every_10m",
			mut: blockedRemediation,
			op:  OpNone, reason: ReasonDestructivePlanBlocked, requeue: 10 * time.Minute},
		{name: "approval/a_blocked_drift_remediation_with_nothing_scheduled_rechecks_in_10m",
			mut: func(o *Observation) { blockedRemediation(o); o.Drift.IntervalSeconds = ptr.To[int32](0) },
			op:  OpNone, reason: ReasonDestructivePlanBlocked, requeue: 10 * time.Minute},
		{name: "approval/a_blocked_drift_remediation_counts_toward_no_remediation_cap",
			mut: func(o *Observation) { blockedRemediation(o); o.ApproveDestructivePlan = hashA; o.History.Failed = 1 },
			op:  OpApply, reason: ReasonDriftRemediation},
		{name: "approval/a_pool_has_no_applyPolicy_and_no_guard", kind: v1alpha1.KindTerraformMachinePool,
			mut: func(o *Observation) { manual(o); changed(o) },
			op:  OpApply, reason: ReasonInputsChanged,
			check: wantJob(func(t *testing.T, p *JobPlan, o Observation) {
				if p.GuardDeletes || p.ExpectPlanHash != "" {
					t.Fatalf("apply plan %+v", p)
				}
			})},
		{name: "approval/a_blocked_marker_on_a_pool_is_ignored", kind: v1alpha1.KindTerraformMachinePool,
			mut: blockedB,
			op:  OpApply, reason: ReasonInputsChanged},
	})
}

func TestDecideRejectsInvalidObservations(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(o *Observation)
		want string
	}{
		{"unknown_kind", func(o *Observation) { o.Kind = "TerraformThing" }, "TerraformThing"},
		{"no_name", func(o *Observation) { o.Name = "" }, "no object name"},
		{"no_time", func(o *Observation) { o.Now = time.Time{} }, "no time"},
		{"state_status", func(o *Observation) { o.State = "" }, "state status"},
		{"inputs_status", func(o *Observation) { o.Inputs = "Maybe" }, "inputs status"},
		{"apply_policy", func(o *Observation) { o.ApplyPolicy = "Sometimes" }, "applyPolicy"},
		{"drift_action", func(o *Observation) { o.Drift.Action = "Ignore" }, "drift action"},
		{"health_state", func(o *Observation) { o.Health = "sleeping" }, "health state"},
		{"history_limits", func(o *Observation) { o.History.Failed = -1 }, "history limits"},
		{"job_operation", func(o *Observation) { o.Jobs[0].Op = OpDropFinalizer }, "not a Job operation"},
		{"job_attempt", func(o *Observation) { o.Jobs[0].Attempt = -2 }, "negative attempt"},
	} {
		t.Run("invalid/"+c.name, func(t *testing.T) {
			o := steady(v1alpha1.KindTerraformCluster)
			c.mut(&o)
			d, err := Decide(o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
			if d.Op != OpNone || d.Job != nil || d.RequeueAfter != 0 {
				t.Fatalf("decision on invalid input: %+v", d)
			}
		})
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	o := steady(v1alpha1.KindTerraformMachinePool)
	changed(&o)
	a := mustDecide(t, o)
	// The order of the retained Jobs does not matter.
	o.Jobs = append([]JobRecord{failedApply(9, 3*time.Hour)}, o.Jobs...)
	b := mustDecide(t, o)
	if a.Op != b.Op || a.Reason != b.Reason || a.Job.Name == "" {
		t.Fatalf("decisions differ: %+v / %+v", a, b)
	}
	o.Jobs[0], o.Jobs[1] = o.Jobs[1], o.Jobs[0]
	c := mustDecide(t, o)
	if *c.Job != *b.Job {
		t.Fatalf("Job order changed the decision: %+v / %+v", b.Job, c.Job)
	}
}
