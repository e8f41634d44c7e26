package decide

import (
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestInfrastructureHealthy(t *testing.T) {
	// Book: Drift and Health, "From module health to InfrastructureHealthy".
	s := func(state HealthState, healthy bool) *HealthSample {
		return &HealthSample{State: state, Healthy: healthy}
	}
	for _, c := range []struct {
		name   string
		f      HealthFacts
		status ConditionStatus
		reason string
	}{
		{"health/no_apply_has_started_yet_is_Unknown_WaitingForProvisioning",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities()}, ConditionUnknown, "WaitingForProvisioning"},
		{"health/before_provisioned_since_the_first_apply_started_is_False_Provisioning",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), ApplyStarted: true, Sample: s(HealthPending, false)}, ConditionFalse, "Provisioning"},
		{"health/pending_is_False_InstancePending",
			HealthFacts{Caps: v1alpha1.KindTerraformCluster.Capabilities(), ApplyStarted: true, Provisioned: true, Sample: s(HealthPending, true)}, ConditionFalse, "InstancePending"},
		{"health/running_healthy_is_True_Healthy",
			HealthFacts{Caps: v1alpha1.KindTerraformCluster.Capabilities(), Provisioned: true, Sample: s(HealthRunning, true)}, ConditionTrue, "Healthy"},
		{"health/running_unhealthy_is_False_InstanceUnhealthy",
			HealthFacts{Caps: v1alpha1.KindTerraformMachinePool.Capabilities(), Provisioned: true, Sample: s(HealthRunning, false)}, ConditionFalse, "InstanceUnhealthy"},
		{"health/degraded_is_False_InstanceDegraded",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, Sample: s(HealthDegraded, true)}, ConditionFalse, "InstanceDegraded"},
		{"health/stopped_is_False_InstanceStopped",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, Sample: s(HealthStopped, false)}, ConditionFalse, "InstanceStopped"},
		{"health/terminated_is_False_InstanceTerminated",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, Sample: s(HealthTerminated, false)}, ConditionFalse, "InstanceTerminated"},
		{"health/unknown_is_Unknown_HealthUnknown",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, Sample: s(HealthUnknown, true)}, ConditionUnknown, "HealthUnknown"},
		{"health/no_health_output_at_all_is_Unknown_HealthUnknown",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, Sample: s(HealthNone, false)}, ConditionUnknown, "HealthUnknown"},
		{"health/no_reading_yet_after_provisioning_is_Unknown_HealthUnknown",
			HealthFacts{Caps: v1alpha1.KindTerraformCluster.Capabilities(), Provisioned: true}, ConditionUnknown, "HealthUnknown"},
		{"health/provider_id_missing_once_is_Unknown_ProviderIDMissing",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, PreviousReason: "Healthy",
				Sample: &HealthSample{State: HealthRunning, Healthy: true, ProviderIDMissing: true}}, ConditionUnknown, "ProviderIDMissing"},
		{"health/provider_id_missing_twice_is_read_as_terminated",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, PreviousReason: "ProviderIDMissing",
				Sample: &HealthSample{State: HealthRunning, Healthy: true, ProviderIDMissing: true}}, ConditionFalse, "InstanceTerminated"},
		{"health/provider_id_still_missing_stays_terminated",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, PreviousReason: "InstanceTerminated",
				Sample: &HealthSample{State: HealthRunning, Healthy: true, ProviderIDMissing: true}}, ConditionFalse, "InstanceTerminated"},
		{"health/provider_id_back_reads_the_health_output_again",
			HealthFacts{Caps: v1alpha1.KindTerraformMachine.Capabilities(), Provisioned: true, PreviousReason: "ProviderIDMissing",
				Sample: s(HealthRunning, true)}, ConditionTrue, "Healthy"},
		{"health/provider_id_missing_only_matters_for_a_machine",
			HealthFacts{Caps: v1alpha1.KindTerraformMachinePool.Capabilities(), Provisioned: true, PreviousReason: "ProviderIDMissing",
				Sample: &HealthSample{State: HealthRunning, Healthy: true, ProviderIDMissing: true}}, ConditionTrue, "Healthy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := InfrastructureHealthy(c.f)
			if got.Status != c.status || got.Reason != c.reason {
				t.Fatalf("got %s/%s, want %s/%s", got.Status, got.Reason, c.status, c.reason)
			}
		})
	}
}

func TestUnhealthySamples(t *testing.T) {
	// Book: Drift and Health, "Unhealthy samples".
	for _, c := range []struct {
		name   string
		prev   int
		reason string
		want   int
	}{
		{"unhealthy_samples/Healthy_resets_to_zero", 4, "Healthy", 0},
		{"unhealthy_samples/InstanceUnhealthy_adds_one", 1, "InstanceUnhealthy", 2},
		{"unhealthy_samples/InstanceDegraded_adds_one", 0, "InstanceDegraded", 1},
		{"unhealthy_samples/InstanceStopped_adds_one", 2, "InstanceStopped", 3},
		{"unhealthy_samples/InstancePending_leaves_it", 2, "InstancePending", 2},
		{"unhealthy_samples/HealthUnknown_leaves_it", 2, "HealthUnknown", 2},
		{"unhealthy_samples/InstanceTerminated_leaves_it", 2, "InstanceTerminated", 2},
		{"unhealthy_samples/ProviderIDMissing_leaves_it", 2, "ProviderIDMissing", 2},
		{"unhealthy_samples/a_negative_count_starts_from_zero", -3, "InstanceDegraded", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NextUnhealthySamples(c.prev, c.reason); got != c.want {
				t.Fatalf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestPendingRefreshes(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev      int
		state     HealthState
		fromApply bool
		want      int
	}{
		{"pending_refreshes/a_pending_sample_adds_one", 2, HealthPending, false, 3},
		{"pending_refreshes/another_reading_resets", 4, HealthRunning, false, 0},
		{"pending_refreshes/an_apply_resets", 4, HealthPending, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NextPendingRefreshes(c.prev, c.state, c.fromApply); got != c.want {
				t.Fatalf("got %d, want %d", got, c.want)
			}
		})
	}
}

func TestDefiniteReading(t *testing.T) {
	for _, c := range []struct {
		name  string
		valid bool
		state HealthState
		want  bool
	}{
		{"definite/valid_outputs_running_stand_in_for_the_post_apply_refresh", true, HealthRunning, true},
		{"definite/degraded_is_definite", true, HealthDegraded, true},
		{"definite/pending_keeps_the_post_apply_refresh", true, HealthPending, false},
		{"definite/unknown_keeps_the_post_apply_refresh", true, HealthUnknown, false},
		{"definite/no_health_output_keeps_the_post_apply_refresh", true, HealthNone, false},
		{"definite/invalid_outputs_keep_the_post_apply_refresh", false, HealthRunning, false},
		{"definite/an_out_of_enum_state_is_not_definite", true, "sleeping", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DefiniteReading(c.valid, c.state); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestProvisionedLatch(t *testing.T) {
	all := ProvisionFacts{AppliedHash: true, OutputsValid: true, ProviderIDSet: true, Health: HealthRunning}
	for _, c := range []struct {
		name    string
		kind    v1alpha1.WorkloadKind
		latched bool
		f       ProvisionFacts
		want    bool
	}{
		{"provisioned/cluster_applied_hash_valid_outputs_not_pending", v1alpha1.KindTerraformCluster, false, all, true},
		{"provisioned/cluster_waits_for_valid_outputs", v1alpha1.KindTerraformCluster, false, ProvisionFacts{AppliedHash: true, Health: HealthRunning}, false},
		{"provisioned/cluster_waits_while_pending", v1alpha1.KindTerraformCluster, false, ProvisionFacts{AppliedHash: true, OutputsValid: true, Health: HealthPending}, false},
		{"provisioned/nothing_before_a_successful_apply", v1alpha1.KindTerraformCluster, false, ProvisionFacts{OutputsValid: true, ProviderIDSet: true, Health: HealthRunning}, false},
		{"provisioned/machine_applied_hash_provider_id_not_pending", v1alpha1.KindTerraformMachine, false, ProvisionFacts{AppliedHash: true, ProviderIDSet: true, Health: HealthDegraded}, true},
		{"provisioned/machine_waits_for_provider_id", v1alpha1.KindTerraformMachine, false, ProvisionFacts{AppliedHash: true, OutputsValid: true, Health: HealthRunning}, false},
		{"provisioned/machine_waits_while_pending", v1alpha1.KindTerraformMachine, false, ProvisionFacts{AppliedHash: true, ProviderIDSet: true, Health: HealthPending}, false},
		{"provisioned/pool_needs_no_provider_ids_it_may_scale_to_zero", v1alpha1.KindTerraformMachinePool, false, ProvisionFacts{AppliedHash: true, Health: HealthRunning}, true},
		{"provisioned/pool_waits_while_pending", v1alpha1.KindTerraformMachinePool, false, ProvisionFacts{AppliedHash: true, Health: HealthPending}, false},
		{"provisioned/latched_stays_true_whatever_health_says", v1alpha1.KindTerraformMachine, true, ProvisionFacts{Health: HealthPending}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Provisioned(c.kind.Capabilities(), c.latched, c.f); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestMachineRemediation(t *testing.T) {
	for _, c := range []struct {
		name      string
		annotate  bool
		samples   int
		threshold int
		reason    string
		deleting  bool
		want      RemediationAction
	}{
		{"remediation/threshold_consecutive_unhealthy_samples_request", true, 3, 3, "InstanceUnhealthy", false, RemediationRequest},
		{"remediation/below_the_threshold_keeps", true, 2, 3, "InstanceDegraded", false, RemediationKeep},
		{"remediation/threshold_defaults_to_3", true, 3, 0, "InstanceStopped", false, RemediationRequest},
		{"remediation/a_terminated_instance_skips_the_threshold", true, 0, 5, "InstanceTerminated", false, RemediationRequest},
		{"remediation/without_annotateMachine_never_requests", false, 9, 3, "InstanceTerminated", false, RemediationKeep},
		{"remediation/healthy_again_withdraws", true, 0, 3, "Healthy", false, RemediationWithdraw},
		{"remediation/healthy_does_not_withdraw_from_a_deleting_Machine", true, 0, 3, "Healthy", true, RemediationKeep},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := MachineRemediation(c.annotate, c.samples, c.threshold, c.reason, c.deleting); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}
