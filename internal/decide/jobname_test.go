package decide

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestJobName(t *testing.T) {
	for _, c := range []struct {
		name    string
		kind    v1alpha1.WorkloadKind
		object  string
		op      Operation
		attempt int
		hash    string
		tick    int64
		want    string
	}{
		// Golden names: hash6 is sha256("<inputs hash>\0<op>\0<attempt>\0<tick>")[:6].
		{"job_name/captf_kindshort_name_op_attempt_hash6", v1alpha1.KindTerraformMachine, "web-0", OpApply, 1, hashA, 0,
			"captf-m-web-0-apply-a1-e54935"},
		{"job_name/refresh_carries_its_tick_in_the_hash", v1alpha1.KindTerraformMachinePool, "workers", OpRefresh, 3, hashA, 1772366400,
			"captf-mp-workers-refresh-a3-4fe03d"},
		{"job_name/cluster_kindshort_is_c", v1alpha1.KindTerraformCluster, "prod", OpApply, 1, hashA, 0,
			"captf-c-prod-apply-a1-e54935"},
		{"job_name/exactly_57_characters_keeps_the_object_name", v1alpha1.KindTerraformCluster, strings.Repeat("a", 33), OpApply, 1, hashA, 0,
			"captf-c-" + strings.Repeat("a", 33) + "-apply-a1-e54935"},
		{"job_name/over_57_characters_replaces_the_object_name_with_a_hash", v1alpha1.KindTerraformCluster, strings.Repeat("a", 34), OpApply, 1, hashA, 0,
			"captf-c-a27c896c48592048-apply-a1-e54935"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := JobName(c.kind, c.object, c.op, c.attempt, c.hash, c.tick)
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if len(got) > MaxJobNameLength {
				t.Fatalf("%q is %d characters", got, len(got))
			}
		})
	}

	base := JobName(v1alpha1.KindTerraformMachine, "web-0", OpRefresh, 2, hashA, 100)
	for _, c := range []struct {
		name  string
		other string
	}{
		{"job_name/hash_input_inputs_hash", JobName(v1alpha1.KindTerraformMachine, "web-0", OpRefresh, 2, hashB, 100)},
		{"job_name/hash_input_operation", JobName(v1alpha1.KindTerraformMachine, "web-0", OpDrift, 2, hashA, 100)},
		{"job_name/hash_input_attempt", JobName(v1alpha1.KindTerraformMachine, "web-0", OpRefresh, 3, hashA, 100)},
		{"job_name/hash_input_tick", JobName(v1alpha1.KindTerraformMachine, "web-0", OpRefresh, 2, hashA, 101)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.other[len(c.other)-6:] == base[len(base)-6:] {
				t.Fatalf("hash6 unchanged: %q vs %q", c.other, base)
			}
		})
	}

	t.Run("job_name/every_name_fits_57_characters_and_a_DNS_label", func(t *testing.T) {
		label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
		for _, kind := range []v1alpha1.WorkloadKind{v1alpha1.KindTerraformCluster, v1alpha1.KindTerraformMachine, v1alpha1.KindTerraformMachinePool} {
			for _, op := range jobOps {
				for _, n := range []string{"x", strings.Repeat("n", 40), strings.Repeat("long-machine-name-", 14)} {
					for _, a := range []int{1, 99, MaxAttempt, MaxAttempt * 4, -1} {
						got := JobName(kind, n, op, a, hashA, time.Now().Unix())
						if len(got) > MaxJobNameLength || !label.MatchString(got) {
							t.Fatalf("%q (%d characters)", got, len(got))
						}
					}
				}
			}
		}
	})
}

func TestJobNamesInDecisions(t *testing.T) {
	dueRefresh := func() Observation {
		o := steady(v1alpha1.KindTerraformMachine)
		o.LastApply = ago(time.Minute)
		o.LastRefresh = ago(time.Hour)
		o.Jobs = append(o.Jobs, JobRecord{Name: "r1", Op: OpRefresh, Attempt: 1, Finished: ago(time.Hour), Succeeded: true})
		return o
	}
	t.Run("job_name/attempt_is_one_more_than_the_highest_retained_for_that_operation", func(t *testing.T) {
		o := dueRefresh()
		o.Jobs = append(o.Jobs, JobRecord{Name: "a9", Op: OpApply, Attempt: 9, Finished: ago(3 * time.Hour), Succeeded: true})
		d := mustDecide(t, o)
		if d.Op != OpRefresh || d.Job.Attempt != 2 {
			t.Fatalf("decision %+v %+v", d, d.Job)
		}
	})
	t.Run("job_name/a_retry_of_the_same_decision_finds_the_same_Job", func(t *testing.T) {
		a := mustDecide(t, dueRefresh())
		o := dueRefresh()
		o.Now = o.Now.Add(3 * time.Second)
		b := mustDecide(t, o)
		if a.Job.Name != b.Job.Name {
			t.Fatalf("%q then %q", a.Job.Name, b.Job.Name)
		}
	})
	t.Run("job_name/the_refresh_tick_changes_each_time_the_refresh_succeeded", func(t *testing.T) {
		a := mustDecide(t, dueRefresh())
		o := dueRefresh()
		o.LastRefresh = ago(50 * time.Minute)
		b := mustDecide(t, o)
		if a.Job.Tick == b.Job.Tick || a.Job.Name == b.Job.Name {
			t.Fatalf("tick %d/%d names %q/%q", a.Job.Tick, b.Job.Tick, a.Job.Name, b.Job.Name)
		}
	})
	t.Run("job_name/a_drift_remediation_carries_its_own_tick", func(t *testing.T) {
		o := steady(v1alpha1.KindTerraformMachinePool)
		remediate(&o)
		rem := mustDecide(t, o)
		o = steady(v1alpha1.KindTerraformMachinePool)
		o.InterruptedApply = true
		plain := mustDecide(t, o)
		if rem.Job.Attempt != plain.Job.Attempt || rem.Job.InputsHash != plain.Job.InputsHash || rem.Job.Name == plain.Job.Name {
			t.Fatalf("remediation %q and apply %q", rem.Job.Name, plain.Job.Name)
		}
	})
	t.Run("job_name/a_restore_carries_its_serial_as_tick", func(t *testing.T) {
		o := steady(v1alpha1.KindTerraformCluster)
		o.Restore = &RestoreRequest{Serial: 4, BackupFound: true}
		a := mustDecide(t, o)
		o.Restore = &RestoreRequest{Serial: 5, BackupFound: true}
		b := mustDecide(t, o)
		if a.Job.Tick != 4 || b.Job.Tick != 5 || a.Job.Name == b.Job.Name {
			t.Fatalf("restore names %q/%q", a.Job.Name, b.Job.Name)
		}
	})
	t.Run("job_name/a_corrupt_attempt_label_cannot_overflow_the_next_attempt", func(t *testing.T) {
		o := steady(v1alpha1.KindTerraformCluster)
		changed(&o)
		o.Jobs[0].Attempt = int(^uint(0) >> 1)
		d := mustDecide(t, o)
		if d.Job.Attempt != MaxAttempt || len(d.Job.Name) > MaxJobNameLength {
			t.Fatalf("attempt %d name %q", d.Job.Attempt, d.Job.Name)
		}
	})
	t.Run("job_name/a_non_Job_operation_starts_at_attempt_1", func(t *testing.T) {
		if NextAttempt(nil, OpDropFinalizer) != 1 {
			t.Fatal("attempt of a non-Job operation")
		}
	})
}
