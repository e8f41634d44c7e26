package metrics

import (
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

const (
	tc = "TerraformCluster"
	tm = "TerraformMachine"
)

// touchAll calls every helper once so every family has a series.
func touchAll() {
	JobFinished(tc, "apply", ResultSucceeded, 42*time.Second)
	JobStep(tc, "apply", "init", 3*time.Second)
	JobQueued(tc, "apply", 2*time.Second)
	JobError(tm, "apply", ErrorKindStep, "apply")
	JobAttempts(tc, "apply", 2)
	ResourcesChanged(tc, "apply", "add", 3)
	DriftResources(tm, "change", 1)
	Decision(tm, OpNone, "UpToDate")
	StateReadError(tm, StateErrorCorrupt)
	OutputsInvalid(tm, "OutputsMissing")
	SetDriftDetected(tm, "ns", "m1", true)
	SetReady(tm, "ns", "m1", metav1.ConditionTrue)
	SetInfrastructureHealthy(tm, "ns", "m1", metav1.ConditionUnknown)
	SetStateResources(tm, "ns", "m1", 4)
	SetStateBytes(tm, "ns", "m1", 1234)
	SetInputsBytes(tm, "ns", "m1", 5678)
	SetLastSuccess(tm, "ns", "m1", "apply", time.Unix(1700000000, 0))
	SetLastSuccess(tm, "ns", "m1", "drift", time.Unix(1700000100, 0))
	SetUnhealthySamples("ns", "m1", 2)
	LockForceUnlocked(tc)
	IdentityDenied(IdentityDeniedNamespace)
	ImageInspectError(InspectNotFound)
	InputsHashChanged(tc)
	RemediationRequest(RemediationRequested)
	DestructivePlanApprovalConsumed(tc)
	LeaseWait(tm, LeaseWaitRun)
	StateBackup(tc, BackupTaken)
	StateRestore(tc, RestoreSucceeded)
	PlanApproval(tc, PlanApproved)
	SetBuildInfo("v0.1.0", "abc123", "v1alpha1")
}

func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	slices.Sort(out)
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestScrape checks every metric of reference-facts §3 by name, type and
// labels, with the [ALPHA] HELP prefix.
func TestScrape(t *testing.T) {
	SetActiveJobsReader(fake.NewClientBuilder().WithScheme(scheme(t)).Build())
	t.Cleanup(func() { SetActiveJobsReader(nil) })
	touchAll()
	fams := gather(t)

	want := []struct {
		name   string
		typ    dto.MetricType
		labels []string
	}{
		{"captf_jobs_total", dto.MetricType_COUNTER, []string{"kind", "op", "result"}},
		{"captf_job_duration_seconds", dto.MetricType_HISTOGRAM, []string{"kind", "op", "result"}},
		{"captf_job_step_duration_seconds", dto.MetricType_HISTOGRAM, []string{"kind", "op", "step"}},
		{"captf_job_queue_seconds", dto.MetricType_HISTOGRAM, []string{"kind", "op"}},
		{"captf_job_errors_total", dto.MetricType_COUNTER, []string{"error_kind", "kind", "op", "step"}},
		{"captf_jobs_active", dto.MetricType_GAUGE, []string{"kind", "op"}},
		{"captf_job_attempts", dto.MetricType_HISTOGRAM, []string{"kind", "op"}},
		{"captf_resources_changed_total", dto.MetricType_COUNTER, []string{"action", "kind", "op"}},
		{"captf_drift_resources_total", dto.MetricType_COUNTER, []string{"action", "kind"}},
		{"captf_reconcile_op_decisions_total", dto.MetricType_COUNTER, []string{"kind", "op", "reason"}},
		{"captf_state_read_errors_total", dto.MetricType_COUNTER, []string{"kind", "reason"}},
		{"captf_outputs_invalid_total", dto.MetricType_COUNTER, []string{"kind", "reason"}},
		{"captf_drift_detected", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_ready", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_infrastructure_healthy", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_state_resources", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_state_bytes", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_inputs_bytes", dto.MetricType_GAUGE, []string{"kind", "name", "namespace"}},
		{"captf_last_success_timestamp_seconds", dto.MetricType_GAUGE, []string{"kind", "name", "namespace", "op"}},
		{"captf_unhealthy_samples", dto.MetricType_GAUGE, []string{"name", "namespace"}},
		{"captf_lock_force_unlocks_total", dto.MetricType_COUNTER, []string{"kind"}},
		{"captf_identity_denied_total", dto.MetricType_COUNTER, []string{"reason"}},
		{"captf_image_inspect_errors_total", dto.MetricType_COUNTER, []string{"reason"}},
		{"captf_inputs_hash_changes_total", dto.MetricType_COUNTER, []string{"kind"}},
		{"captf_remediation_requests_total", dto.MetricType_COUNTER, []string{"action"}},
		{"captf_destructive_plan_approvals_consumed_total", dto.MetricType_COUNTER, []string{"kind"}},
		{"captf_lease_waits_total", dto.MetricType_COUNTER, []string{"kind", "reason"}},
		{"captf_state_backups_total", dto.MetricType_COUNTER, []string{"kind", "result"}},
		{"captf_state_restores_total", dto.MetricType_COUNTER, []string{"kind", "result"}},
		{"captf_plan_approvals_total", dto.MetricType_COUNTER, []string{"kind", "result"}},
		{"captf_build_info", dto.MetricType_GAUGE, []string{"commit", "contract", "version"}},
	}
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.name] = true
		t.Run(w.name, func(t *testing.T) {
			f, ok := fams[w.name]
			if !ok {
				t.Fatalf("not exported")
			}
			if f.GetType() != w.typ {
				t.Errorf("type %v, want %v", f.GetType(), w.typ)
			}
			if !strings.HasPrefix(f.GetHelp(), "[ALPHA] ") {
				t.Errorf("HELP %q lacks the [ALPHA] prefix", f.GetHelp())
			}
			if len(f.GetMetric()) == 0 {
				t.Fatalf("no series")
			}
			if got := labelNames(f.GetMetric()[0]); !slices.Equal(got, w.labels) {
				t.Errorf("labels %v, want %v", got, w.labels)
			}
		})
	}
	// Nothing captf_* beyond the reference's list.
	for name := range fams {
		if strings.HasPrefix(name, "captf_") && !seen[name] {
			t.Errorf("unexpected metric %s", name)
		}
	}
}

func TestConditionEncoding(t *testing.T) {
	for _, c := range []struct {
		s    metav1.ConditionStatus
		want float64
	}{
		{metav1.ConditionTrue, 1}, {metav1.ConditionFalse, 0}, {metav1.ConditionUnknown, -1}, {"", -1},
	} {
		if got := conditionValue(c.s); got != c.want {
			t.Errorf("conditionValue(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestStepLabelIsBounded(t *testing.T) {
	for in, want := range map[string]string{
		"init": "init", "show": "show-json", "refresh": "apply-refresh-only", "state-list": "state-list",
		"prepare": "prepare", "something-new": "other", "": "other",
	} {
		if got := StepLabel(in); got != want {
			t.Errorf("StepLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestObjectDeletedRemovesEverySeries: "only the per-object gauges carry
// namespace and name, and those series are deleted with their object".
func TestObjectDeletedRemovesEverySeries(t *testing.T) {
	touchAll()
	SetReady(tm, "ns", "m2", metav1.ConditionFalse)
	ObjectDeleted(tm, "ns", "m1")
	fams := gather(t)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			if labelValue(m, "name") == "m1" && labelValue(m, "namespace") == "ns" {
				t.Errorf("%s still has a series of the deleted object", name)
			}
		}
	}
	found := false
	for _, m := range fams["captf_ready"].GetMetric() {
		if labelValue(m, "name") == "m2" {
			found = true
		}
	}
	if !found {
		t.Errorf("another object's series was deleted too")
	}
	DeleteLastSuccess(tm, "ns", "m2", "drift")
	ObjectDeleted(tm, "ns", "m2")
}

func TestDeleteLastSuccessDropsOneOperation(t *testing.T) {
	SetLastSuccess(tc, "ns", "c1", "apply", time.Unix(10, 0))
	SetLastSuccess(tc, "ns", "c1", "drift", time.Unix(20, 0))
	DeleteLastSuccess(tc, "ns", "c1", "drift")
	var ops []string
	for _, m := range gather(t)["captf_last_success_timestamp_seconds"].GetMetric() {
		if labelValue(m, "name") == "c1" {
			ops = append(ops, labelValue(m, "op"))
			if labelValue(m, "op") == "apply" && m.GetGauge().GetValue() != 10 {
				t.Errorf("apply timestamp %v, want 10", m.GetGauge().GetValue())
			}
		}
	}
	if !slices.Equal(ops, []string{"apply"}) {
		t.Errorf("ops left %v, want [apply]", ops)
	}
	ObjectDeleted(tc, "ns", "c1")
}

func TestBuildInfoHasOneSeries(t *testing.T) {
	SetBuildInfo("v1", "c1", "v1alpha1")
	SetBuildInfo("v2", "c2", "v1alpha1")
	ms := gather(t)["captf_build_info"].GetMetric()
	if len(ms) != 1 || labelValue(ms[0], "version") != "v2" || ms[0].GetGauge().GetValue() != 1 {
		t.Errorf("build info series %v", ms)
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func job(name, kind, op string, done batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
		infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kind, infrav1.OpLabel: op,
	}}}
	if done != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: done, Status: corev1.ConditionTrue}}
	}
	return j
}

// TestJobsActiveCountsUnfinishedJobsAtScrape: captf_jobs_active is "running
// Jobs counted from the cache at scrape time".
func TestJobsActiveCountsUnfinishedJobsAtScrape(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		job("a", tm, "apply", ""),
		job("b", tm, "apply", ""),
		job("c", tm, "apply", batchv1.JobComplete),
		job("d", tc, "drift", ""),
		job("e", tc, "destroy", batchv1.JobFailed),
	).Build()
	SetActiveJobsReader(c)
	t.Cleanup(func() { SetActiveJobsReader(nil) })
	got := map[string]float64{}
	for _, m := range gather(t)["captf_jobs_active"].GetMetric() {
		got[labelValue(m, "kind")+"/"+labelValue(m, "op")] = m.GetGauge().GetValue()
	}
	if len(got) != 18 {
		t.Errorf("series %d, want 18 (3 kinds x 6 ops)", len(got))
	}
	for k, want := range map[string]float64{
		tm + "/apply": 2, tc + "/drift": 1, tc + "/destroy": 0, "TerraformMachinePool/apply": 0,
	} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
}

func BenchmarkJobFinished(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		JobFinished(tm, "apply", ResultSucceeded, time.Minute)
	}
}

func BenchmarkSetReady(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		SetReady(tm, "ns", "m1", metav1.ConditionTrue)
	}
}

func BenchmarkCountActive1000(b *testing.B) {
	jobs := make([]batchv1.Job, 1000)
	for i := range jobs {
		done := batchv1.JobConditionType("")
		if i%3 == 0 {
			done = batchv1.JobComplete
		}
		jobs[i] = *job("j", tm, "apply", done)
	}
	b.ReportAllocs()
	for b.Loop() {
		CountActive(jobs)
	}
}
