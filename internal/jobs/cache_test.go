package jobs

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// fullJob is the Job Build makes for r, as the API server returns it once
// it ran: created (UID, managed fields) with the conditions given.
func fullJob(t testing.TB, r *Run, conds ...batchv1.JobCondition) *batchv1.Job {
	job, _ := mustBuild(t, r)
	job.UID = types.UID("0b7d3c55-3a1e-4c1f-9d25-5a0f3f1c2e10")
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "captf-manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	job.Status = batchv1.JobStatus{Conditions: conds, StartTime: &metav1.Time{Time: t0}}
	return job
}

// fullPod is pod (status only, as the classify tests build it) with the
// spec of job's template and the status fields a kubelet fills in.
func fullPod(job *batchv1.Job, pod *corev1.Pod) *corev1.Pod {
	if pod == nil {
		return nil
	}
	p := pod.DeepCopy()
	p.Name, p.Namespace = job.Name+"-x7k2q", job.Namespace
	p.Labels = map[string]string{batchv1.JobNameLabel: job.Name}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	p.Spec = *job.Spec.Template.Spec.DeepCopy()
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.7"}}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		cs.VolumeMounts = []corev1.VolumeMountStatus{{Name: "work", MountPath: "/work"}}
	}
	return p
}

// TestCacheTransformsKeepWhatPassesRead: the manager caches Jobs, pods and
// per-run Secrets reduced (Job template, pod spec and per-run inputs
// dropped); every fact a pass reads from them is the same from the
// reduced copies as from the objects (Jobs: "Reading a Job's result";
// Secrets: the per-run Secret is read live wherever its data matters).
func TestCacheTransformsKeepWhatPassesRead(t *testing.T) {
	ok := marshal(t, baseDoc(infrav1.OperationApply))
	cases := []struct {
		name  string
		conds []batchv1.JobCondition
		pod   *corev1.Pod
	}{
		{"an active Job", nil, podWith("", 0)},
		{"a succeeded apply", []batchv1.JobCondition{complete()}, podWith(ok, 0)},
		{"a failed step", []batchv1.JobCondition{failed("BackoffLimitExceeded")}, podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorStep, "apply"), 1)},
		{"a guarded apply blocked before a destructive plan", []batchv1.JobCondition{failed("BackoffLimitExceeded")}, podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorBlocked, ""), 1)},
		{"the deadline", []batchv1.JobCondition{failed(batchv1.JobReasonDeadlineExceeded)}, podWith(docWithError(t, infrav1.OperationApply, infrav1.RunErrorInterrupted, "apply"), 1)},
		{"an image pull failure", []batchv1.JobCondition{failed(batchv1.JobReasonDeadlineExceeded)}, waitingPod(RunnerContainer, "ErrImagePull")},
		{"an eviction for its own limit", []batchv1.JobCondition{failed("BackoffLimitExceeded")}, &corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", Message: `Container module exceeded its local ephemeral storage limit "1Gi". `}}},
		{"a disruption", []batchv1.JobCondition{failed("BackoffLimitExceeded")}, &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}},
		{"no pod", []batchv1.JobCondition{failed("BackoffLimitExceeded")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			built, _ := mustBuild(t, testRun())
			job := fullJob(t, testRun(), tc.conds...)
			pod := fullPod(job, tc.pod)
			cjob := ForCache(job.DeepCopy())
			var cpod *corev1.Pod
			if pod != nil {
				cpod = PodForCache(pod.DeepCopy())
				if !reflect.DeepEqual(cpod.Spec, corev1.PodSpec{}) || cpod.ManagedFields != nil {
					t.Fatal("the cached pod kept its spec or managed fields")
				}
				if state.RunnerPodOf(cpod) != state.RunnerPodOf(pod) {
					t.Errorf("runner pod facts: %+v, want %+v", state.RunnerPodOf(cpod), state.RunnerPodOf(pod))
				}
				m1, ok1 := TerminationMessage(cpod)
				m2, ok2 := TerminationMessage(pod)
				if m1 != m2 || ok1 != ok2 {
					t.Error("the termination message differs")
				}
				r1, c1 := PullFailure(cpod)
				r2, c2 := PullFailure(pod)
				if r1 != r2 || c1 != c2 {
					t.Error("the pull failure differs")
				}
			}
			tmpl := cjob.Spec.Template
			tmpl.Spec.Containers = nil
			for _, c := range cjob.Spec.Template.Spec.Containers {
				if !reflect.DeepEqual(c, corev1.Container{Name: SourceContainer, Args: armingArgs(c.Args)}) {
					t.Fatalf("the cached Job kept more of container %s than its arming arguments", c.Name)
				}
			}
			if !reflect.DeepEqual(tmpl, corev1.PodTemplateSpec{}) || cjob.ManagedFields != nil {
				t.Fatal("the cached Job kept its pod template or managed fields")
			}
			if got, want := Classify(cjob, cpod), Classify(job, pod); !reflect.DeepEqual(got, want) {
				t.Errorf("classification from the cache:\n%+v\nwant\n%+v", got, want)
			}
			if IsFinished(cjob) != IsFinished(job) || Attempt(cjob) != Attempt(job) {
				t.Error("finished or attempt differs")
			}
			if why := NotOurs(cjob, built); why != "" {
				t.Errorf("the cached Job is not its own: %s", why)
			}
			if !reflect.DeepEqual(cjob.ObjectMeta.OwnerReferences, job.OwnerReferences) || !reflect.DeepEqual(cjob.Labels, job.Labels) ||
				!reflect.DeepEqual(cjob.Annotations, job.Annotations) || !reflect.DeepEqual(cjob.Status, job.Status) ||
				!reflect.DeepEqual(cjob.Spec.ActiveDeadlineSeconds, job.Spec.ActiveDeadlineSeconds) {
				t.Error("the cached Job lost metadata, status or its deadline")
			}
		})
	}
}

func TestRunSecretForCache(t *testing.T) {
	r := testRun()
	job := fullJob(t, r)
	s, err := RunSecret(r, job)
	if err != nil {
		t.Fatal(err)
	}
	if !IsRunSecret(s) {
		t.Fatal("a per-run Secret is not recognized")
	}
	c := RunSecretForCache(s.DeepCopy())
	if c.Data != nil {
		t.Fatal("the cached per-run Secret kept its inputs")
	}
	if why := NotOurs(c, s); why != "" || !reflect.DeepEqual(c.OwnerReferences, s.OwnerReferences) {
		t.Errorf("the cached per-run Secret lost its owners or labels: %s", why)
	}
	// Other Secrets keep their data, also when named like a per-run
	// Secret without its Job's labels.
	for _, other := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "tfstate-default-x", Labels: map[string]string{infrav1.OpLabel: "apply"}}, Data: map[string][]byte{"tfstate": []byte("keep")}},
		{ObjectMeta: metav1.ObjectMeta{Name: RunSecretPrefix + "not-labeled"}, Data: map[string][]byte{"k": []byte("keep")}},
	} {
		if RunSecretForCache(other).Data == nil {
			t.Errorf("Secret %s lost its data", other.Name)
		}
	}
}

// BenchmarkCachedJobAndPod reports the bytes a Job and its pod hold in
// the manager's cache, as served (full) and as cached (reduced).
func BenchmarkCachedJobAndPod(b *testing.B) {
	ok := marshal(b, baseDoc(infrav1.OperationApply))
	job := fullJob(b, testRun(), complete())
	pod := fullPod(job, podWith(ok, 0))
	for _, bc := range []struct {
		name   string
		reduce func(*batchv1.Job, *corev1.Pod) (*batchv1.Job, *corev1.Pod)
	}{
		{"full", func(j *batchv1.Job, p *corev1.Pod) (*batchv1.Job, *corev1.Pod) { return j, p }},
		{"cached", func(j *batchv1.Job, p *corev1.Pod) (*batchv1.Job, *corev1.Pod) { return ForCache(j), PodForCache(p) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			j, p := bc.reduce(job.DeepCopy(), pod.DeepCopy())
			b.ReportAllocs()
			var keep []any
			for b.Loop() {
				// What a cached pair holds: a deep copy allocates it.
				keep = append(keep[:0], j.DeepCopy(), p.DeepCopy())
			}
			b.ReportMetric(float64(j.Size()+p.Size()), "proto-bytes")
			_ = keep
		})
	}
}
