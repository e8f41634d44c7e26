package jobs

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

var (
	t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(3 * time.Minute)
)

func jobWith(op infrav1.Operation, conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "captf-c-prod-" + string(op) + "-a2-abcdef",
			Labels:      map[string]string{infrav1.OpLabel: string(op), infrav1.AttemptLabel: "2"},
			Annotations: map[string]string{infrav1.InputsHashAnnotation: testInputsHash},
		},
		Spec:   batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](3600)},
		Status: batchv1.JobStatus{Conditions: conds, StartTime: &metav1.Time{Time: t0}},
	}
}

// armed is job as the manager builds it for an owner of kind, with the
// module container's runner arguments args (--guard-deletes,
// --expect-plan=…).
func armed(job *batchv1.Job, kind infrav1.WorkloadKind, args ...string) *batchv1.Job {
	job.Labels[infrav1.OwnerKindLabel] = string(kind)
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: SourceContainer, Args: append([]string{"--op=" + job.Labels[infrav1.OpLabel]}, args...)}}
	return job
}

// guardedApply is a TerraformCluster apply Job armed with the
// destructive-plan guard; approvedApply one that runs an approved plan.
func guardedApply(conds ...batchv1.JobCondition) *batchv1.Job {
	return armed(jobWith(infrav1.OperationApply, conds...), infrav1.KindTerraformCluster, "--guard-deletes", "--inputs-hash="+testInputsHash)
}

func approvedApply(conds ...batchv1.JobCondition) *batchv1.Job {
	return armed(jobWith(infrav1.OperationApply, conds...), infrav1.KindTerraformCluster, "--expect-plan=p1:approved")
}

func complete() batchv1.JobCondition {
	return batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: t1}}
}

func failed(reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.Time{Time: t1}}
}

// podWith is a pod whose source container terminated with the document
// (as its termination message) and the exit code.
func podWith(doc string, exit int32) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name:    SourceContainer,
		ImageID: "ghcr.io/example/cluster-module@sha256:" + sha64,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Message: doc, StartedAt: metav1.Time{Time: t0.Add(5 * time.Second)},
		}},
	}}}}
}

const sha64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func docWithError(t testing.TB, op infrav1.Operation, kind infrav1.RunErrorKind, step string) string {
	d := baseDoc(op)
	d.Error = &result.Error{Kind: kind, Step: result.StepName(step), Tail: "curated summary"}
	if kind == infrav1.RunErrorBlocked || kind == infrav1.RunErrorPlanChanged {
		d.Plan = &result.Plan{Hash: "p1:xyz", Destroy: 1}
	}
	return marshal(t, d)
}

func waitingPod(container, reason string) *corev1.Pod {
	st := corev1.ContainerStatus{Name: container, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	p := &corev1.Pod{}
	if container == RunnerContainer {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{st}
	} else {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	}
	return p
}

func TestClassify(t *testing.T) {
	ok := marshal(t, baseDoc(infrav1.OperationApply))
	planDoc := func() string {
		d := baseDoc(infrav1.OperationPlan)
		d.Plan = &result.Plan{Hash: "p1:abc"}
		return marshal(t, d)
	}()
	tests := []struct {
		name    string
		job     *batchv1.Job
		pod     *corev1.Pod
		want    Outcome
		reason  string // for the Job's op
		counts  bool
		metric  string
		errKind string
	}{
		{"a Job without a terminal condition is active",
			jobWith(infrav1.OperationApply), podWith("", 0), OutcomeActive, "", false, "failed", "unknown"},
		{"a FailureTarget alone is not finished: its pod may still be writing state",
			jobWith(infrav1.OperationApply, batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded}),
			nil, OutcomeActive, "", false, "failed", "unknown"},
		{"Complete is success: ApplySucceeded",
			jobWith(infrav1.OperationApply, complete()), podWith(ok, 0), OutcomeSucceeded, infrav1.ApplySucceededReason, false, "succeeded", "unknown"},
		{"a destroy that completed is DestroySucceeded",
			jobWith(infrav1.OperationDestroy, complete()), podWith(ok, 0), OutcomeSucceeded, infrav1.DestroySucceededReason, false, "succeeded", "unknown"},
		{"a failed step is ApplyFailed and counts toward backoff",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorStep, "apply"), 1),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "step"},
		{"a failed destroy is DestroyFailed",
			jobWith(infrav1.OperationDestroy, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationDestroy, infrav1.RunErrorStep, "destroy"), 1),
			OutcomeFailed, infrav1.DestroyFailedReason, true, "failed", "step"},
		{"the deadline (Failed/DeadlineExceeded) is JobDeadlineExceeded even when the runner reported interrupted",
			jobWith(infrav1.OperationApply, failed(batchv1.JobReasonDeadlineExceeded)), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorInterrupted, "apply"), 1),
			OutcomeDeadline, infrav1.JobDeadlineExceededReason, true, "deadline", "deadline"},
		{"a drift Job at its deadline is DriftJobDeadlineExceeded",
			jobWith(infrav1.OperationDrift, failed(batchv1.JobReasonDeadlineExceeded)), nil,
			OutcomeDeadline, infrav1.DriftJobDeadlineExceededReason, true, "deadline", "deadline"},
		{"a restore at its deadline is RestoreFailed",
			jobWith(infrav1.OperationRestore, failed(batchv1.JobReasonDeadlineExceeded)), nil,
			OutcomeDeadline, infrav1.RestoreFailedReason, true, "deadline", "deadline"},
		{"a pod left in ImagePullBackOff until the deadline is ImagePullFailed",
			jobWith(infrav1.OperationApply, failed(batchv1.JobReasonDeadlineExceeded)), waitingPod(SourceContainer, "ImagePullBackOff"),
			OutcomeImagePullFailed, infrav1.ImagePullFailedReason, true, "deadline", "deadline"},
		{"the runner image failing to pull (init container, ErrImagePull) is ImagePullFailed",
			jobWith(infrav1.OperationApply, failed(batchv1.JobReasonDeadlineExceeded)), waitingPod(RunnerContainer, "ErrImagePull"),
			OutcomeImagePullFailed, infrav1.ImagePullFailedReason, true, "deadline", "deadline"},
		{"image-layout is ImageInvalid",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorImageLayout, ""), 1),
			OutcomeImageInvalid, infrav1.ImageInvalidReason, true, "failed", "image-layout"},
		{"the runner's interrupted is a stop from outside: counts toward nothing",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorInterrupted, "apply"), 1),
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"blocked from a guarded TerraformCluster apply is DestructivePlanBlocked and counts toward nothing",
			guardedApply(failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorBlocked, ""), 1),
			OutcomeBlocked, infrav1.DestructivePlanBlockedReason, false, "blocked", "blocked"},
		{"plan-changed from an approved TerraformCluster apply is PlanChanged and counts toward nothing",
			approvedApply(failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorPlanChanged, ""), 1),
			OutcomePlanChanged, infrav1.PlanChangedReason, false, "plan_changed", "plan-changed"},
		{"blocked from a TerraformMachine apply is forged: ApplyFailed, counting toward backoff",
			armed(jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), infrav1.KindTerraformMachine), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorBlocked, ""), 1),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "step"},
		{"plan-changed from an unapproved TerraformCluster apply is forged: ApplyFailed, counting toward backoff",
			guardedApply(failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorPlanChanged, ""), 1),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "step"},
		{"blocked from a TerraformCluster drift Job is forged: DriftJobFailed, counting toward backoff",
			armed(jobWith(infrav1.OperationDrift, failed("BackoffLimitExceeded")), infrav1.KindTerraformCluster), podWith(docWithError(t, infrav1.OperationDrift, infrav1.RunErrorBlocked, ""), 1),
			OutcomeFailed, infrav1.DriftJobFailedReason, true, "failed", "step"},
		{"plan-changed from a TerraformMachinePool destroy is forged: DestroyFailed, counting toward backoff",
			armed(jobWith(infrav1.OperationDestroy, failed("BackoffLimitExceeded")), infrav1.KindTerraformMachinePool), podWith(docWithError(t, infrav1.OperationDestroy, infrav1.RunErrorPlanChanged, ""), 1),
			OutcomeFailed, infrav1.DestroyFailedReason, true, "failed", "step"},
		{"a failed Job whose pod is gone is interrupted",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), nil,
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"an evicted pod without a result is interrupted",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted"}},
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"a disrupted pod (DisruptionTarget) is interrupted",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}}}},
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"a container killed by SIGKILL before writing a result is interrupted",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith("", 137),
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"an OOM-killed container is a failure, not an interruption",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), func() *corev1.Pod {
				p := podWith("", 137)
				p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
				return p
			}(),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "unknown"},
		{"a pod evicted for its own ephemeral-storage limit is a failure (it would fail the same way every time)",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", Message: `Container module exceeded its local ephemeral storage limit "1Gi". `}},
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "unknown"},
		{"a pod evicted for its emptyDir sizeLimit is a failure even when the runner reported itself interrupted",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), func() *corev1.Pod {
				p := podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorInterrupted, ""), 1)
				p.Status.Reason, p.Status.Message = "Evicted", `Usage of EmptyDir volume "work" exceeds the limit "2Gi". `
				return p
			}(),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "interrupted"},
		{"a pod evicted for node pressure is interrupted (DisruptionTarget set by the kubelet)",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage. Container module was using 3Gi, request is 0, has larger consumption of ephemeral-storage. ",
				Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"}}}},
			OutcomeInterrupted, "", false, "interrupted", "interrupted"},
		{"a runner that exited without a result (a crash) is a failure, so it backs off",
			jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith("garbled", 2),
			OutcomeFailed, infrav1.ApplyFailedReason, true, "failed", "unknown"},
		{"a drift Job that completed is DriftChecked",
			jobWith(infrav1.OperationDrift, complete()), podWith(ok, 0), OutcomeSucceeded, infrav1.DriftCheckedReason, false, "succeeded", "unknown"},
		{"a failed refresh is DriftJobFailed",
			jobWith(infrav1.OperationRefresh, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationRefresh, infrav1.RunErrorStep, "refresh"), 1),
			OutcomeFailed, infrav1.DriftJobFailedReason, true, "failed", "step"},
		{"a restore that completed is StateRestored",
			jobWith(infrav1.OperationRestore, complete()), podWith(ok, 0), OutcomeSucceeded, infrav1.StateRestoredReason, false, "succeeded", "unknown"},
		{"a plan Job that completed with its plan sets no ApplyJobSucceeded reason of its own",
			jobWith(infrav1.OperationPlan, complete()), podWith(planDoc, 0), OutcomeSucceeded, "", false, "succeeded", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classify(tt.job, tt.pod)
			if c.Outcome != tt.want {
				t.Fatalf("outcome = %s (%s), want %s", c.Outcome, c.Detail, tt.want)
			}
			op := infrav1.Operation(tt.job.Labels[infrav1.OpLabel])
			if got := c.Reason(op); got != tt.reason {
				t.Errorf("reason = %q, want %q", got, tt.reason)
			}
			if c.Outcome.Counts() != tt.counts {
				t.Errorf("counts = %v", c.Outcome.Counts())
			}
			if c.Outcome.MetricResult() != tt.metric {
				t.Errorf("metric result = %s", c.Outcome.MetricResult())
			}
			if c.ErrorKind() != tt.errKind {
				t.Errorf("error kind = %s", c.ErrorKind())
			}
			if tt.want != OutcomeActive && tt.want != OutcomeSucceeded && c.Detail == "" {
				t.Error("no detail for a failure")
			}
			if tt.want != OutcomeActive && !c.FinishedAt.Equal(t1) {
				t.Errorf("finished at %v", c.FinishedAt)
			}
		})
	}
}

func TestClassifyDetails(t *testing.T) {
	t.Run("a plan Job that completed without a readable plan is flagged plan-unreadable", func(t *testing.T) {
		c := Classify(jobWith(infrav1.OperationPlan, complete()), podWith("", 0))
		if c.Outcome != OutcomeSucceeded || !c.PlanUnreadable {
			t.Fatalf("outcome %s, unreadable %v", c.Outcome, c.PlanUnreadable)
		}
		if m := c.Marks(); m[infrav1.PlanUnreadableAnnotation] != "true" {
			t.Errorf("marks = %v", m)
		}
	})
	t.Run("the image digest comes from the pod's imageID, not the spec", func(t *testing.T) {
		c := Classify(jobWith(infrav1.OperationApply, complete()), podWith(marshal(t, baseDoc(infrav1.OperationApply)), 0))
		if got := ImageDigest(c.ImageID); got != "sha256:"+sha64 {
			t.Errorf("digest = %q", got)
		}
		for _, id := range []string{"docker-pullable://repo@sha256:" + sha64, "sha256:" + sha64} {
			if ImageDigest(id) != "sha256:"+sha64 {
				t.Errorf("ImageDigest(%q) = %q", id, ImageDigest(id))
			}
		}
		if ImageDigest("repo:tag") != "" {
			t.Error("a tag has a digest")
		}
	})
	t.Run("a pull failure is reported while the Job is still active", func(t *testing.T) {
		c := Classify(jobWith(infrav1.OperationApply), waitingPod(SourceContainer, "ErrImagePull"))
		if c.Outcome != OutcomeActive || c.PullFailure != "ErrImagePull" || c.PullContainer != SourceContainer {
			t.Errorf("%+v", c)
		}
	})
	t.Run("the start is the module container's start", func(t *testing.T) {
		c := Classify(jobWith(infrav1.OperationApply, complete()), podWith("", 0))
		if !c.StartedAt.Equal(t0.Add(5 * time.Second)) {
			t.Errorf("started at %v", c.StartedAt)
		}
		c = Classify(jobWith(infrav1.OperationApply, complete()), nil)
		if !c.StartedAt.Equal(t0) {
			t.Errorf("started at %v without a pod", c.StartedAt)
		}
	})
	t.Run("a nil Job is active", func(t *testing.T) {
		if Classify(nil, nil).Outcome != OutcomeActive {
			t.Error("not active")
		}
	})
	t.Run("the summary is the runner's, never the pod's output", func(t *testing.T) {
		c := Classify(jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded")), podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorStep, "apply"), 1))
		if c.Detail != "curated summary" {
			t.Errorf("detail = %q", c.Detail)
		}
	})
}

func TestRecord(t *testing.T) {
	t.Run("an unbookkept Job is judged by its classification", func(t *testing.T) {
		job := guardedApply(failed("BackoffLimitExceeded"))
		job.Annotations[infrav1.DriftRemediationAnnotation] = "true"
		c := Classify(job, podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorBlocked, ""), 1))
		rec := Record(job, &c)
		want := decide.JobRecord{
			Name: job.Name, Op: decide.OpApply, Attempt: 2, Finished: t1, InputsHash: testInputsHash,
			Blocked: true, DriftRemediation: true,
		}
		if !recordEqual(rec, want) {
			t.Errorf("record = %+v\nwant %+v", rec, want)
		}
		if rec.Outcome() != decide.OutcomeBlocked {
			t.Errorf("decide outcome = %s", rec.Outcome())
		}
	})
	t.Run("a bookkept Job is judged by its marks, since its pod may be gone", func(t *testing.T) {
		job := jobWith(infrav1.OperationApply, failed("BackoffLimitExceeded"))
		job.Annotations[infrav1.BookkeptAnnotation] = "true"
		c := Classify(job, nil) // pod gone: the classification alone would say interrupted
		rec := Record(job, &c)
		if rec.Interrupted || rec.Outcome() != decide.OutcomeFailed {
			t.Errorf("record = %+v", rec)
		}
		job.Annotations[infrav1.InterruptedAnnotation] = "true"
		if rec := Record(job, nil); !rec.Interrupted || rec.Outcome() != decide.OutcomeInterrupted {
			t.Errorf("record = %+v", rec)
		}
	})
	t.Run("the deadline is read from the Job's condition", func(t *testing.T) {
		job := jobWith(infrav1.OperationDrift, failed(batchv1.JobReasonDeadlineExceeded))
		c := Classify(job, nil)
		if rec := Record(job, &c); !rec.DeadlineExceeded || rec.Outcome() != decide.OutcomeFailed {
			t.Errorf("record = %+v", rec)
		}
	})
	t.Run("a restore carries its serial; a drift Job whether it found drift", func(t *testing.T) {
		job := jobWith(infrav1.OperationRestore, complete())
		job.Annotations[infrav1.RestoreSerialAnnotation] = "41"
		if rec := Record(job, nil); rec.RestoreSerial != 41 || !rec.Succeeded {
			t.Errorf("record = %+v", rec)
		}
		d := baseDoc(infrav1.OperationDrift)
		d.Drift = &result.Drift{Detected: true, Add: 1}
		dj := jobWith(infrav1.OperationDrift, complete())
		c := Classify(dj, podWith(marshal(t, d), 0))
		if rec := Record(dj, &c); !rec.DriftDetected {
			t.Errorf("record = %+v", rec)
		}
	})
	t.Run("the bookkeeping marks round-trip through Record", func(t *testing.T) {
		for _, kind := range []infrav1.RunErrorKind{infrav1.RunErrorInterrupted, infrav1.RunErrorBlocked, infrav1.RunErrorPlanChanged} {
			job := guardedApply(failed("BackoffLimitExceeded"))
			if kind == infrav1.RunErrorPlanChanged {
				job = approvedApply(failed("BackoffLimitExceeded"))
			}
			c := Classify(job, podWith(docWithError(t, infrav1.OperationApply, kind, ""), 1))
			if c.Outcome == OutcomeFailed {
				t.Fatalf("%s: %s", kind, c.Detail)
			}
			before := Record(job, &c)
			for k, v := range c.Marks() {
				job.Annotations[k] = v
			}
			job.Annotations[infrav1.BookkeptAnnotation] = "true"
			after := Record(job, nil)
			if before.Outcome() != after.Outcome() {
				t.Errorf("%s: outcome %s before bookkeeping, %s after", kind, before.Outcome(), after.Outcome())
			}
		}
	})
}

func recordEqual(a, b decide.JobRecord) bool {
	return a.Name == b.Name && a.Op == b.Op && a.Attempt == b.Attempt && a.Finished.Equal(b.Finished) &&
		a.Succeeded == b.Succeeded && a.InputsHash == b.InputsHash && a.DeadlineExceeded == b.DeadlineExceeded &&
		a.Interrupted == b.Interrupted && a.Blocked == b.Blocked && a.PlanChanged == b.PlanChanged &&
		a.PlanUnreadable == b.PlanUnreadable && a.DriftRemediation == b.DriftRemediation &&
		a.DriftDetected == b.DriftDetected && a.RestoreSerial == b.RestoreSerial
}
