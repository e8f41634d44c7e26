package lifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// series reads one series of the manager's registry: a counter's or
// gauge's value, or a histogram's sample count and sum. found is false
// when the series does not exist.
type series struct {
	found bool
	value float64
	count uint64
	sum   float64
}

func readSeries(t *testing.T, name string, labels map[string]string) series {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the registry: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			s := series{found: true}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.count = m.GetHistogram().GetSampleCount()
				s.sum = m.GetHistogram().GetSampleSum()
			}
			return s
		}
	}
	return series{}
}

func cond(t, status, reason string) *metav1.Condition {
	return &metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason}
}

func TestEnteredFalse(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after *metav1.Condition
		want          bool
	}{
		{"failure counters count transitions: unset to False counts", nil, cond("X", "False", "A"), true},
		{"failure counters count transitions: True to False counts", cond("X", "True", "OK"), cond("X", "False", "A"), true},
		{"failure counters count transitions: Unknown to False counts", cond("X", "Unknown", "W"), cond("X", "False", "A"), true},
		{"not reconciles: False staying False with its reason does not count", cond("X", "False", "A"), cond("X", "False", "A"), false},
		{"counted by reason: False with a new reason counts for the new reason", cond("X", "False", "A"), cond("X", "False", "B"), true},
		{"turning True is no failure", cond("X", "False", "A"), cond("X", "True", "OK"), false},
		{"turning Unknown is no failure", nil, cond("X", "Unknown", "W"), false},
		{"no condition after the pass counts nothing", cond("X", "True", "OK"), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := enteredFalse(c.before, c.after); got != c.want {
				t.Fatalf("enteredFalse = %v, want %v", got, c.want)
			}
		})
	}
}

func TestStateErrorLabel(t *testing.T) {
	for reason, want := range map[string]string{
		infrav1.StateInconsistentReason: "inconsistent",
		infrav1.StateEncryptedReason:    "encrypted",
		infrav1.StateCorruptReason:      "corrupt",
		infrav1.StateLostReason:         "lost",
		infrav1.StateLockedReason:       "locked",
		infrav1.StateNotFoundReason:     "",
		infrav1.StateReadReason:         "",
	} {
		t.Run("reason label of state_read_errors_total for "+reason, func(t *testing.T) {
			if got := stateErrorLabel(reason); got != want {
				t.Fatalf("stateErrorLabel(%s) = %q, want %q", reason, got, want)
			}
		})
	}
}

func TestPassTransitions(t *testing.T) {
	type conds map[string]*metav1.Condition
	get := func(c conds) func(string) *metav1.Condition { return func(t string) *metav1.Condition { return c[t] } }
	sr, ov, ia := infrav1.StateReadableCondition, infrav1.OutputsValidCondition, infrav1.IdentityAllowedCondition
	rj := infrav1.RestoreJobSucceededCondition
	for _, c := range []struct {
		name          string
		before, after conds
		skipped       bool
		want          transitions
	}{
		{
			name:   "state_read_errors_total counts StateReadable turning False, by reason",
			before: conds{sr: cond(sr, "True", infrav1.StateReadReason)},
			after:  conds{sr: cond(sr, "False", infrav1.StateEncryptedReason)},
			want:   transitions{stateReadError: "encrypted"},
		},
		{
			name:    "state_backups_total skipped: an unreadable state is counted once, when it turns unreadable",
			before:  conds{sr: cond(sr, "True", infrav1.StateReadReason)},
			after:   conds{sr: cond(sr, "False", infrav1.StateCorruptReason)},
			skipped: true,
			want:    transitions{stateReadError: "corrupt", backupSkipped: true},
		},
		{
			name:    "not reconciles: a state that stays unreadable counts nothing",
			before:  conds{sr: cond(sr, "False", infrav1.StateCorruptReason)},
			after:   conds{sr: cond(sr, "False", infrav1.StateCorruptReason)},
			skipped: true,
		},
		{
			name:   "state_read_errors_total lost: a missing state of an applied object",
			before: conds{sr: cond(sr, "True", infrav1.StateReadReason)},
			after:  conds{sr: cond(sr, "False", infrav1.StateLostReason)},
			want:   transitions{stateReadError: "lost"},
		},
		{
			name:   "state_read_errors_total locked: a foreign lock holder",
			before: conds{sr: cond(sr, "False", infrav1.StateCorruptReason)},
			after:  conds{sr: cond(sr, "False", infrav1.StateLockedReason)},
			want:   transitions{stateReadError: "locked"},
		},
		{
			name:  "a first-seen object with no state yet is not unreadable",
			after: conds{sr: cond(sr, "Unknown", infrav1.StateNotFoundReason)},
		},
		{
			name:   "outputs_invalid_total counts OutputsValid turning False, by its reason",
			before: conds{ov: cond(ov, "True", infrav1.OutputsValidReason)},
			after:  conds{ov: cond(ov, "False", infrav1.OutputsMissingReason)},
			want:   transitions{outputsInvalid: infrav1.OutputsMissingReason},
		},
		{
			name:   "outputs_invalid_total: outputs staying invalid count nothing",
			before: conds{ov: cond(ov, "False", infrav1.OutputsInvalidReason)},
			after:  conds{ov: cond(ov, "False", infrav1.OutputsInvalidReason)},
		},
		{
			name:  "identity_denied_total notfound: entering IdentityNotFound",
			after: conds{ia: cond(ia, "False", infrav1.IdentityNotFoundReason)},
			want:  transitions{identityDenied: "notfound"},
		},
		{
			name:   "identity_denied_total namespace: entering NamespaceNotAllowed",
			before: conds{ia: cond(ia, "True", infrav1.IdentityAllowedReason)},
			after:  conds{ia: cond(ia, "False", infrav1.NamespaceNotAllowedReason)},
			want:   transitions{identityDenied: "namespace"},
		},
		{
			name:   "identity_denied_total: a denial that stays counts nothing",
			before: conds{ia: cond(ia, "False", infrav1.NamespaceNotAllowedReason)},
			after:  conds{ia: cond(ia, "False", infrav1.NamespaceNotAllowedReason)},
		},
		{
			name:  "state_restores_total not_found: a restore request naming no backup",
			after: conds{rj: cond(rj, "False", infrav1.RestoreBackupNotFoundReason)},
			want:  transitions{restoreNotFound: true},
		},
		{
			name:   "state_restores_total not_found: a request still naming no backup counts nothing",
			before: conds{rj: cond(rj, "False", infrav1.RestoreBackupNotFoundReason)},
			after:  conds{rj: cond(rj, "False", infrav1.RestoreBackupNotFoundReason)},
		},
		{
			name:  "state_restores_total: a failed restore Job is not not_found",
			after: conds{rj: cond(rj, "False", infrav1.RestoreFailedReason)},
		},
		{
			name:  "identity_denied_total: a missing identity Secret is no denial",
			after: conds{ia: cond(ia, "False", infrav1.SecretNotFoundReason)},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := passTransitions(get(c.before), get(c.after), c.skipped); got != c.want {
				t.Fatalf("passTransitions = %+v, want %+v", got, c.want)
			}
		})
	}
}

// finishedJob is a finished runner Job of op, created at created, with a
// pod whose source container started at started (zero: never started) and
// terminated with doc as its termination message.
func finishedJob(t *testing.T, name string, op infrav1.Operation, created, started time.Time, succeeded bool, doc *result.Document) (*batchv1.Job, *corev1.Pod) {
	t.Helper()
	done := metav1.NewTime(created.Add(10 * time.Minute))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
		Labels: map[string]string{infrav1.OpLabel: string(op)},
	}}
	typ := batchv1.JobFailed
	if succeeded {
		typ = batchv1.JobComplete
		job.Status.CompletionTime = &done
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: done}}
	msg := ""
	if doc != nil {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		msg = string(b)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-x", Namespace: "ns"}}
	cs := corev1.ContainerStatus{Name: jobs.SourceContainer}
	if !started.IsZero() {
		cs.State.Terminated = &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(started), FinishedAt: done, Message: msg}
	} else {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return job, pod
}

func applyDoc(op infrav1.Operation) *result.Document {
	return &result.Document{
		Version: result.Version, Op: op,
		Steps: []result.Step{
			{Name: "init", Exit: 0, Seconds: 2.5},
			{Name: "force-unlock", Exit: 0, Seconds: 0.25},
			{Name: "validate", Exit: 0, Seconds: 1},
			{Name: "apply", Exit: 0, Seconds: 42},
		},
		Changes: &result.Changes{Add: 3, Change: 1, Destroy: 0, Import: 2},
	}
}

func TestCountFinishedJob(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(op decide.Operation, minute int, succeeded bool, mod func(*decide.JobRecord)) decide.JobRecord {
		r := decide.JobRecord{Name: string(op) + "-" + time.Duration(minute).String(), Op: op, Finished: t0.Add(time.Duration(minute) * time.Minute), Succeeded: succeeded}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	interrupted := func(r *decide.JobRecord) { r.Interrupted = true }
	blocked := func(r *decide.JobRecord) { r.Blocked = true }
	deadline := func(r *decide.JobRecord) { r.DeadlineExceeded = true }
	history := []decide.JobRecord{
		rec(decide.OpApply, -60, false, nil), // before the last success: not counted
		rec(decide.OpApply, -50, true, nil),
		rec(decide.OpApply, -40, false, nil),
		rec(decide.OpApply, -30, false, interrupted),
		rec(decide.OpApply, -25, false, blocked),
		rec(decide.OpApply, -20, false, deadline),
		rec(decide.OpDestroy, -10, false, nil), // another op
	}

	t.Run("job_step_duration_seconds: every step of lastRun.steps with its duration", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(7*time.Second), true, applyDoc(infrav1.OperationApply))
		c := jobs.Classify(job, pod)
		n := countFinishedJob(job, pod, infrav1.OperationApply, &c, history)
		want := []stepDuration{{"init", 2500 * time.Millisecond}, {"force-unlock", 250 * time.Millisecond}, {"validate", time.Second}, {"apply", 42 * time.Second}}
		if len(n.steps) != len(want) {
			t.Fatalf("steps = %v, want %v", n.steps, want)
		}
		for i := range want {
			if n.steps[i] != want[i] {
				t.Errorf("step %d = %v, want %v", i, n.steps[i], want[i])
			}
		}
	})
	t.Run("job_queue_seconds: Job creation to source container start", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(7*time.Second), true, applyDoc(infrav1.OperationApply))
		c := jobs.Classify(job, pod)
		n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil)
		if !n.hasQueued || n.queued != 7*time.Second {
			t.Fatalf("queued = %v (%v), want 7s", n.queued, n.hasQueued)
		}
	})
	t.Run("job_queue_seconds: skipped if no start time (container never started)", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, time.Time{}, false, nil)
		job.Status.StartTime = &metav1.Time{Time: t0.Add(time.Second)}
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil); n.hasQueued {
			t.Fatalf("queued %v for a source container that never started", n.queued)
		}
	})
	t.Run("job_queue_seconds: skipped if no start time (pod gone)", func(t *testing.T) {
		job, _ := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, nil)
		c := jobs.Classify(job, nil)
		if n := countFinishedJob(job, nil, infrav1.OperationApply, &c, nil); n.hasQueued {
			t.Fatalf("queued %v without a pod", n.queued)
		}
	})
	t.Run("job_attempts: 1 + failed Jobs of that op since its last success, interrupted excluded", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, applyDoc(infrav1.OperationApply))
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, history); n.attempts != 3 {
			t.Fatalf("attempts = %d, want 3 (1 + a failure and a deadline; interrupted and blocked excluded)", n.attempts)
		}
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil); n.attempts != 1 {
			t.Fatalf("attempts of a first success = %d, want 1", n.attempts)
		}
	})
	t.Run("job_attempts: only a succeeded Job is observed", func(t *testing.T) {
		doc := applyDoc(infrav1.OperationApply)
		step := "apply"
		doc.Steps[3].Exit = 1
		doc.Changes = nil
		doc.Error = &result.Error{Kind: infrav1.RunErrorStep, Step: &step}
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), false, doc)
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, history); n.attempts != 0 {
			t.Fatalf("a failed Job observed attempt %d", n.attempts)
		}
	})
	t.Run("resources_changed_total: add, change, destroy, import from the apply's summary", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, applyDoc(infrav1.OperationApply))
		c := jobs.Classify(job, pod)
		n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil)
		want := map[string]int{"add": 3, "change": 1, "destroy": 0, "import": 2}
		for k, v := range want {
			if n.changes[k] != v {
				t.Errorf("changes[%s] = %d, want %d", k, n.changes[k], v)
			}
		}
		if n.drift != nil {
			t.Errorf("an apply reported drift %v", n.drift)
		}
	})
	t.Run("resources_changed_total: only apply and destroy Jobs", func(t *testing.T) {
		doc := applyDoc(infrav1.OperationRefresh)
		job, pod := finishedJob(t, "a", infrav1.OperationRefresh, t0, t0.Add(time.Second), true, doc)
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationRefresh, &c, nil); n.changes != nil {
			t.Fatalf("a refresh counted changes %v", n.changes)
		}
	})
	t.Run("drift_resources_total: a drift Job that detected drift", func(t *testing.T) {
		doc := &result.Document{Version: result.Version, Op: infrav1.OperationDrift,
			Steps: []result.Step{{Name: "init"}, {Name: "plan", Exit: 2, Seconds: 3}},
			Drift: &result.Drift{Detected: true, Add: 1, Change: 4, Destroy: 2}}
		job, pod := finishedJob(t, "a", infrav1.OperationDrift, t0, t0.Add(time.Second), true, doc)
		c := jobs.Classify(job, pod)
		n := countFinishedJob(job, pod, infrav1.OperationDrift, &c, nil)
		if n.drift["add"] != 1 || n.drift["change"] != 4 || n.drift["destroy"] != 2 {
			t.Fatalf("drift = %v, want add 1 change 4 destroy 2", n.drift)
		}
		doc.Drift.Detected = false
		job, pod = finishedJob(t, "a", infrav1.OperationDrift, t0, t0.Add(time.Second), true, doc)
		c = jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationDrift, &c, nil); n.drift != nil {
			t.Fatalf("a drift Job that found none counted %v", n.drift)
		}
	})
	t.Run("lock_force_unlocks_total: the result document's force-unlock step exited 0", func(t *testing.T) {
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, applyDoc(infrav1.OperationApply))
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil); !n.forceUnlocked {
			t.Fatal("force-unlock not counted")
		}
	})
	t.Run("lock_force_unlocks_total: a lock already released (accepted non-zero exit) is not counted", func(t *testing.T) {
		doc := applyDoc(infrav1.OperationApply)
		doc.Steps[1].Exit = 1
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, doc)
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil); n.forceUnlocked {
			t.Fatal("an already-released lock counted as force-unlocked")
		}
	})
	t.Run("lock_force_unlocks_total: no force-unlock step, no count", func(t *testing.T) {
		doc := applyDoc(infrav1.OperationApply)
		doc.Steps = append(doc.Steps[:1], doc.Steps[2:]...)
		job, pod := finishedJob(t, "a", infrav1.OperationApply, t0, t0.Add(time.Second), true, doc)
		c := jobs.Classify(job, pod)
		if n := countFinishedJob(job, pod, infrav1.OperationApply, &c, nil); n.forceUnlocked {
			t.Fatal("force-unlock counted without the step")
		}
	})
}

func TestScheduled(t *testing.T) {
	off, on := int32(0), int32(600)
	for _, c := range []struct {
		name                  string
		kind                  infrav1.WorkloadKind
		op                    decide.Operation
		drift                 decide.DriftSettings
		annotate, provisioned bool
		want                  bool
	}{
		{"drift series exported while drift is scheduled (manager default)", infrav1.KindTerraformCluster, decide.OpDrift, decide.DriftSettings{}, false, true, true},
		{"drift series not exported when intervalSeconds 0 turns drift off", infrav1.KindTerraformCluster, decide.OpDrift, decide.DriftSettings{IntervalSeconds: &off}, false, true, false},
		{"drift off inherited from the cluster's defaults", infrav1.KindTerraformMachine, decide.OpDrift, decide.DriftSettings{DefaultsIntervalSeconds: &off}, false, true, false},
		{"a machine's own interval overrides the cluster's 0", infrav1.KindTerraformMachine, decide.OpDrift, decide.DriftSettings{IntervalSeconds: &on, DefaultsIntervalSeconds: &off}, false, true, true},
		{"a pool's drift can never be turned off", infrav1.KindTerraformMachinePool, decide.OpDrift, decide.DriftSettings{IntervalSeconds: &off}, false, true, true},
		{"refresh series of a pool: the membership refresh is always scheduled", infrav1.KindTerraformMachinePool, decide.OpRefresh, decide.DriftSettings{}, false, false, true},
		{"refresh series of a machine that annotates its Machine, once provisioned", infrav1.KindTerraformMachine, decide.OpRefresh, decide.DriftSettings{}, true, true, true},
		{"refresh series of a machine without remediation: not scheduled", infrav1.KindTerraformMachine, decide.OpRefresh, decide.DriftSettings{}, false, true, false},
		{"refresh series of an unprovisioned machine: not scheduled", infrav1.KindTerraformMachine, decide.OpRefresh, decide.DriftSettings{}, true, false, false},
		{"refresh series of a cluster: refresh is never scheduled", infrav1.KindTerraformCluster, decide.OpRefresh, decide.DriftSettings{}, false, true, false},
		{"apply series are always exported", infrav1.KindTerraformCluster, decide.OpApply, decide.DriftSettings{IntervalSeconds: &off}, false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := scheduled(c.kind.Capabilities(), c.op, decide.EffectiveDriftInterval(c.kind.Capabilities(), c.drift).Enabled, c.annotate, c.provisioned); got != c.want {
				t.Fatalf("scheduled = %v, want %v", got, c.want)
			}
		})
	}
}

// testCluster is a TerraformCluster with a unique name, so the series this
// test moves are its own.
func testCluster(name string) *infrav1.TerraformCluster {
	return &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "metrics-test", UID: types.UID("uid-" + name), Generation: 1}}
}

// TestFinishedJobMetricsRecord: a finished Job moves every series
// reference-facts §3 says a finished Job feeds, once.
func TestFinishedJobMetricsRecord(t *testing.T) {
	const kind = "TerraformMachinePool"
	t0 := time.Now().Add(-time.Hour)
	f := &Flow{}
	p := &Pass{Obj: &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Name: "finished", Namespace: "metrics-test"}}, Kind: infrav1.KindTerraformMachinePool}
	job, pod := finishedJob(t, "finished-apply", infrav1.OperationApply, t0, t0.Add(12*time.Second), true, applyDoc(infrav1.OperationApply))
	p.pods = map[string]*corev1.Pod{job.Name: pod}
	p.Records = []decide.JobRecord{{Name: "old", Op: decide.OpApply, Finished: t0.Add(-time.Minute)}}
	c := jobs.Classify(job, pod)

	step := func() series {
		return readSeries(t, "captf_job_step_duration_seconds", map[string]string{"kind": kind, "op": "apply", "step": "apply"})
	}
	queue := func() series {
		return readSeries(t, "captf_job_queue_seconds", map[string]string{"kind": kind, "op": "apply"})
	}
	attempts := func() series {
		return readSeries(t, "captf_job_attempts", map[string]string{"kind": kind, "op": "apply"})
	}
	added := func() series {
		return readSeries(t, "captf_resources_changed_total", map[string]string{"kind": kind, "op": "apply", "action": "add"})
	}
	imported := func() series {
		return readSeries(t, "captf_resources_changed_total", map[string]string{"kind": kind, "op": "apply", "action": "import"})
	}
	unlocks := func() series { return readSeries(t, "captf_lock_force_unlocks_total", map[string]string{"kind": kind}) }
	s0, q0, a0, add0, imp0, u0 := step(), queue(), attempts(), added(), imported(), unlocks()

	f.jobMetrics(p, job, infrav1.OperationApply, &c)

	if s := step(); s.count != s0.count+1 || s.sum-s0.sum != 42 {
		t.Errorf("captf_job_step_duration_seconds{step=apply}: count %d sum %v, want one more sample of 42 s", s.count-s0.count, s.sum-s0.sum)
	}
	if q := queue(); q.count != q0.count+1 || q.sum-q0.sum != 12 {
		t.Errorf("captf_job_queue_seconds: %d samples summing %v, want one of 12 s", q.count-q0.count, q.sum-q0.sum)
	}
	if a := attempts(); a.count != a0.count+1 || a.sum-a0.sum != 2 {
		t.Errorf("captf_job_attempts: %d samples summing %v, want one of 2", a.count-a0.count, a.sum-a0.sum)
	}
	if v := added().value - add0.value; v != 3 {
		t.Errorf("captf_resources_changed_total{action=add} grew by %v, want 3", v)
	}
	if v := imported().value - imp0.value; v != 2 {
		t.Errorf("captf_resources_changed_total{action=import} grew by %v, want 2", v)
	}
	if v := unlocks().value - u0.value; v != 1 {
		t.Errorf("captf_lock_force_unlocks_total grew by %v, want 1", v)
	}
	if s := readSeries(t, "captf_resources_changed_total", map[string]string{"kind": kind, "op": "apply", "action": "destroy"}); s.found && s.value != 0 {
		t.Errorf("a zero count created captf_resources_changed_total{action=destroy} = %v", s.value)
	}

	// A drift Job that detected drift.
	doc := &result.Document{Version: result.Version, Op: infrav1.OperationDrift,
		Steps: []result.Step{{Name: "init"}, {Name: "plan", Exit: 2, Seconds: 3}},
		Drift: &result.Drift{Detected: true, Add: 0, Change: 5, Destroy: 1}}
	djob, dpod := finishedJob(t, "finished-drift", infrav1.OperationDrift, t0, t0.Add(time.Second), true, doc)
	p.pods[djob.Name] = dpod
	dc := jobs.Classify(djob, dpod)
	changed := func() series {
		return readSeries(t, "captf_drift_resources_total", map[string]string{"kind": kind, "action": "change"})
	}
	ch0 := changed()
	f.jobMetrics(p, djob, infrav1.OperationDrift, &dc)
	if v := changed().value - ch0.value; v != 5 {
		t.Errorf("captf_drift_resources_total{action=change} grew by %v, want 5", v)
	}
}

// TestTransitionMetricsRecord: a pass that turns StateReadable,
// OutputsValid or IdentityAllowed False adds one to its counter; the next
// pass, which finds them False already, adds nothing (failure counters
// count transitions, not reconciles).
func TestTransitionMetricsRecord(t *testing.T) {
	const kind = "TerraformCluster"
	f := &Flow{}
	tc := testCluster("transitions")
	stateErr := func() float64 {
		return readSeries(t, "captf_state_read_errors_total", map[string]string{"kind": kind, "reason": "inconsistent"}).value
	}
	skipped := func() float64 {
		return readSeries(t, "captf_state_backups_total", map[string]string{"kind": kind, "result": "skipped"}).value
	}
	outputs := func() float64 {
		return readSeries(t, "captf_outputs_invalid_total", map[string]string{"kind": kind, "reason": infrav1.OutputsInvalidReason}).value
	}
	denied := func() float64 {
		return readSeries(t, "captf_identity_denied_total", map[string]string{"reason": "namespace"}).value
	}
	s0, b0, o0, d0 := stateErr(), skipped(), outputs(), denied()

	pass := func() {
		p := &Pass{Obj: tc, Kind: infrav1.KindTerraformCluster}
		snapshotConditions(p)
		setCondition(p, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateInconsistentReason, "")
		setCondition(p, infrav1.OutputsValidCondition, metav1.ConditionFalse, infrav1.OutputsInvalidReason, "")
		setCondition(p, infrav1.IdentityAllowedCondition, metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason, "")
		p.backupSkippedUnreadable = true
		f.transitionMetrics(p)
	}
	setCondition(&Pass{Obj: tc}, infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason, "")
	pass()
	pass()
	for name, d := range map[string]float64{
		"captf_state_read_errors_total{reason=inconsistent}": stateErr() - s0,
		"captf_state_backups_total{result=skipped}":          skipped() - b0,
		"captf_outputs_invalid_total":                        outputs() - o0,
		"captf_identity_denied_total{reason=namespace}":      denied() - d0,
	} {
		if d != 1 {
			t.Errorf("%s grew by %v over two passes, want 1", name, d)
		}
	}
}

// TestScheduleMetricsDropLastSuccess: drift and refresh last-success
// series are exported only while that op is scheduled.
func TestScheduleMetricsDropLastSuccess(t *testing.T) {
	f := &Flow{Adapter: readyAdapter{}}
	tc := testCluster("schedule")
	labels := func(op string) map[string]string {
		return map[string]string{"kind": "TerraformCluster", "namespace": tc.Namespace, "name": tc.Name, "op": op}
	}
	for _, op := range []string{"apply", "drift", "refresh"} {
		metrics.SetLastSuccess("TerraformCluster", tc.Namespace, tc.Name, op, time.Unix(1000, 0))
	}
	decided := func() *Pass {
		p := &Pass{Obj: tc, Kind: infrav1.KindTerraformCluster}
		on := decide.EffectiveDriftInterval(p.Kind.Capabilities(), f.driftSettings(p)).Enabled
		p.driftOn = &on
		return p
	}
	f.scheduleMetrics(decided())
	if !readSeries(t, "captf_last_success_timestamp_seconds", labels("drift")).found {
		t.Error("the drift series went while drift is scheduled by the manager default")
	}
	if readSeries(t, "captf_last_success_timestamp_seconds", labels("refresh")).found {
		t.Error("a cluster's refresh series is exported though refresh is never scheduled for it")
	}
	off := int32(0)
	tc.Spec.Drift = &infrav1.DriftPolicy{IntervalSeconds: &off}
	f.scheduleMetrics(decided())
	if readSeries(t, "captf_last_success_timestamp_seconds", labels("drift")).found {
		t.Error("the drift series is exported after intervalSeconds 0 turned drift off")
	}
	if !readSeries(t, "captf_last_success_timestamp_seconds", labels("apply")).found {
		t.Error("the apply series went")
	}
	metrics.ObjectDeleted("TerraformCluster", tc.Namespace, tc.Name)
	if readSeries(t, "captf_last_success_timestamp_seconds", labels("apply")).found {
		t.Error("the apply series outlived the object")
	}
}

// TestBackupsSkipUnreadableOnce: state_backups_total counts a state it
// cannot read as skipped once, when StateReadable turns False, not on
// every pass that skips it. A fake client stands in for the API server
// (it holds no backup sets).
func TestBackupsSkipUnreadableOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &Flow{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Options: Options{StateBackups: 5}}
	tc := testCluster("backups")
	readErr := &state.ReadError{Reason: state.ReasonEncrypted, Kind: state.ErrEncrypted}
	skipped := func() float64 {
		return readSeries(t, "captf_state_backups_total", map[string]string{"kind": "TerraformCluster", "result": "skipped"}).value
	}
	s0 := skipped()
	for range 3 {
		p := &Pass{Obj: tc, Kind: infrav1.KindTerraformCluster, Now: time.Now()}
		snapshotConditions(p)
		setCondition(p, infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateEncryptedReason, readErr.Error())
		if err := f.backups(context.Background(), p, readErr); err != nil {
			t.Fatal(err)
		}
		if !p.backupSkippedUnreadable {
			t.Fatal("the backup step did not report the unreadable state as skipped")
		}
		f.transitionMetrics(p)
	}
	if d := skipped() - s0; d != 1 {
		t.Fatalf("state_backups_total{result=skipped} grew by %v over three passes of one unreadable state, want 1", d)
	}
}
