package decide

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestEffectiveDriftInterval(t *testing.T) {
	mgr := 45 * time.Minute
	for _, c := range []struct {
		name     string
		kind     v1alpha1.WorkloadKind
		own, def *int32
		manager  time.Duration
		want     DriftInterval
	}{
		{"drift_interval/cluster_own_interval", v1alpha1.KindTerraformCluster, ptr.To[int32](900), nil, mgr,
			DriftInterval{true, 15 * time.Minute, SourceObject}},
		{"drift_interval/cluster_interval_0_disables_drift", v1alpha1.KindTerraformCluster, ptr.To[int32](0), nil, mgr,
			DriftInterval{false, 0, SourceObject}},
		{"drift_interval/cluster_unset_uses_the_manager_default", v1alpha1.KindTerraformCluster, nil, nil, mgr,
			DriftInterval{true, mgr, SourceManagerDefault}},
		{"drift_interval/cluster_never_inherits_its_own_spec_defaults", v1alpha1.KindTerraformCluster, nil, ptr.To[int32](60), mgr,
			DriftInterval{true, mgr, SourceManagerDefault}},
		{"drift_interval/manager_default_unset_is_30m", v1alpha1.KindTerraformCluster, nil, nil, 0,
			DriftInterval{true, 30 * time.Minute, SourceManagerDefault}},
		{"drift_interval/machine_own_interval_wins_over_the_inherited_default", v1alpha1.KindTerraformMachine, ptr.To[int32](120), ptr.To[int32](1800), mgr,
			DriftInterval{true, 2 * time.Minute, SourceObject}},
		{"drift_interval/machine_inherits_spec_defaults_drift", v1alpha1.KindTerraformMachine, nil, ptr.To[int32](1800), mgr,
			DriftInterval{true, 30 * time.Minute, SourceClusterDefaults}},
		{"drift_interval/machine_interval_0_disables_drift", v1alpha1.KindTerraformMachine, ptr.To[int32](0), ptr.To[int32](1800), mgr,
			DriftInterval{false, 0, SourceObject}},
		{"drift_interval/machine_inherited_interval_0_disables_drift", v1alpha1.KindTerraformMachine, nil, ptr.To[int32](0), mgr,
			DriftInterval{false, 0, SourceClusterDefaults}},
		{"drift_interval/machine_else_the_manager_default", v1alpha1.KindTerraformMachine, nil, nil, mgr,
			DriftInterval{true, mgr, SourceManagerDefault}},
		{"drift_interval/pool_own_interval", v1alpha1.KindTerraformMachinePool, ptr.To[int32](300), nil, mgr,
			DriftInterval{true, 5 * time.Minute, SourceObject}},
		{"drift_interval/pool_inherits_spec_defaults_drift", v1alpha1.KindTerraformMachinePool, nil, ptr.To[int32](600), mgr,
			DriftInterval{true, 10 * time.Minute, SourceClusterDefaults}},
		{"drift_interval/pool_interval_0_is_never_disabled_and_falls_back_to_the_manager_default", v1alpha1.KindTerraformMachinePool, ptr.To[int32](0), nil, mgr,
			DriftInterval{true, mgr, SourceManagerDefault}},
		{"drift_interval/pool_inherited_interval_0_leaves_the_pool_on_the_manager_default", v1alpha1.KindTerraformMachinePool, nil, ptr.To[int32](0), mgr,
			DriftInterval{true, mgr, SourceManagerDefault}},
		{"drift_interval/negative_is_treated_as_0", v1alpha1.KindTerraformMachine, ptr.To[int32](-5), nil, mgr,
			DriftInterval{false, 0, SourceObject}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := EffectiveDriftInterval(c.kind.Capabilities(), DriftSettings{IntervalSeconds: c.own, DefaultsIntervalSeconds: c.def, ManagerDefault: c.manager})
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestEffectiveDriftAction(t *testing.T) {
	for _, c := range []struct {
		name string
		kind v1alpha1.WorkloadKind
		in   DriftAction
		want DriftAction
	}{
		{"drift_action/unset_is_Report", v1alpha1.KindTerraformCluster, "", DriftReport},
		{"drift_action/cluster_can_Remediate", v1alpha1.KindTerraformCluster, DriftRemediate, DriftRemediate},
		{"drift_action/pool_can_Remediate", v1alpha1.KindTerraformMachinePool, DriftRemediate, DriftRemediate},
		{"drift_action/a_machine_is_always_Report", v1alpha1.KindTerraformMachine, DriftRemediate, DriftReport},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := EffectiveDriftAction(c.kind.Capabilities(), c.in); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	t.Run("jitter/deterministic_from_the_UID", func(t *testing.T) {
		first, second := Jitter(testUID, time.Hour), Jitter(testUID, time.Hour)
		if first != second {
			t.Fatalf("jitter differs for the same UID: %v, then %v", first, second)
		}
	})
	t.Run("jitter/up_to_a_tenth_of_the_interval", func(t *testing.T) {
		for i := range 2000 {
			uid := fmt.Sprintf("uid-%d", i)
			for _, d := range []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 24 * time.Hour} {
				if j := Jitter(uid, d); j < 0 || j >= d/10 {
					t.Fatalf("Jitter(%q, %v) = %v outside [0, %v)", uid, d, j, d/10)
				}
			}
		}
	})
	t.Run("jitter/objects_created_together_spread_out", func(t *testing.T) {
		// Ten buckets over the jitter span; 1000 UIDs must not pile into a
		// few of them.
		var buckets [10]int
		for i := range 1000 {
			j := Jitter(fmt.Sprintf("5f0c%04d-7c1d-4e2a-9b3f-2d6e8a1c4b7e", i), 30*time.Minute)
			buckets[int(j*10/(3*time.Minute))]++
		}
		for b, n := range buckets {
			if n < 50 || n > 150 {
				t.Fatalf("bucket %d holds %d of 1000: %v", b, n, buckets)
			}
		}
	})
	t.Run("jitter/zero_or_tiny_interval_has_none", func(t *testing.T) {
		if Jitter(testUID, 0) != 0 || Jitter(testUID, 9) != 0 || Jitter(testUID, -time.Hour) != 0 {
			t.Fatal("jitter of a zero, tiny or negative interval")
		}
	})
}

func TestScheduleHelpers(t *testing.T) {
	for _, c := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"pending/after_0_samples_is_30s", PendingRefreshDelay(0), 30 * time.Second},
		{"pending/after_1_sample_is_30s", PendingRefreshDelay(1), 30 * time.Second},
		{"pending/after_2_samples_is_1m", PendingRefreshDelay(2), time.Minute},
		{"pending/after_3_samples_is_2m", PendingRefreshDelay(3), 2 * time.Minute},
		{"pending/after_4_samples_is_4m", PendingRefreshDelay(4), 4 * time.Minute},
		{"pending/after_5_samples_is_the_5m_ceiling", PendingRefreshDelay(5), 5 * time.Minute},
		{"pending/after_many_samples_stays_5m", PendingRefreshDelay(1 << 40), 5 * time.Minute},
		{"membership/interval_unset_or_0_means_60s", MembershipRefreshInterval(0), time.Minute},
		{"membership/interval_as_set", MembershipRefreshInterval(15), 15 * time.Second},
		{"membership/converging_every_30s", MembershipConvergeDelay(0), 30 * time.Second},
		{"membership/converging_at_the_interval_when_shorter", MembershipConvergeDelay(15), 15 * time.Second},
		{"membership/converging_at_30s_when_the_interval_is_longer", MembershipConvergeDelay(600), 30 * time.Second},
		{"health_check/interval_defaults_to_300s", HealthCheckInterval(0), 300 * time.Second},
		{"health_check/interval_as_set", HealthCheckInterval(120), 2 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("%v, want %v", c.got, c.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	for _, c := range []struct {
		kind    v1alpha1.WorkloadKind
		short   string
		mutable bool
	}{
		{v1alpha1.KindTerraformCluster, "c", true}, {v1alpha1.KindTerraformMachine, "m", false}, {v1alpha1.KindTerraformMachinePool, "mp", true}, {"Other", "", false},
	} {
		if c.kind.Short() != c.short || c.kind.Capabilities().MutableInputs != c.mutable || c.kind.Valid() != (c.short != "") {
			t.Fatalf("%s: short %q mutable %v", c.kind, c.kind.Short(), c.kind.Capabilities().MutableInputs)
		}
	}
	for _, op := range []Operation{OpApply, OpDestroy, OpPlan, OpRefresh, OpDrift, OpRestore} {
		if !op.IsJob() {
			t.Fatalf("%s is a Job operation", op)
		}
	}
	for _, op := range []Operation{OpNone, OpDropFinalizer, "x"} {
		if op.IsJob() || op.API() != "" {
			t.Fatalf("%s is not a Job operation", op)
		}
	}
	if OpDrift.API() != v1alpha1.OperationDrift || OpRestore.API() != v1alpha1.OperationRestore {
		t.Fatal("Job operations carry the API's values")
	}
}
