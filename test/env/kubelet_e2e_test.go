package env_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/testimage"
)

const ns = "jobs"

func TestKubeletRunsJobsFromTheLoopbackRegistry(t *testing.T) {
	e := env.ForTest(t, env.Options{Logger: testLogger, Kubelet: true, Registry: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := e.Clientset

	img, err := testimage.Image()
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := e.PushImage(ctx, "captf/podprog:test", img)
	if err != nil {
		t.Fatal(err)
	}
	image := e.ImageRef("captf/podprog:test")
	setupNamespace(ctx, t, cs)

	t.Run("a Job runs to Complete with exit code, termination message and image digest", func(t *testing.T) {
		job := podprogJob("succeed", image, []string{
			"--identity",
			"--expect-env=USER_NAME=alice", "--expect-env=API_KEY=s3cr3t", // envFrom secretRef
			"--expect-env=GREETING=hi",        // configMapKeyRef
			"--expect-env=TOKEN_COPY=s3cr3t",  // secretKeyRef
			"--expect-env=POD_NAMESPACE=jobs", // fieldRef
			"--expect-env=FULL=alice-x",       // $(VAR) expansion
			"--expect-env=PODPROG_IMAGE=1",    // image env
			"--expect-env=KUBERNETES_SERVICE_HOST=127.0.0.1",
			fmt.Sprintf("--expect-env=KUBERNETES_SERVICE_PORT=%d", e.APIServerPort),
			"--expect-file=/shared/init=from-init", // emptyDir shared with the init container
			"--expect-file=/etc/files/sub/b.txt=B", // Secret volume item
			"--expect-file=/var/run/secrets/kubernetes.io/serviceaccount/namespace=jobs",
			"--write=/work/out=1",
			"--stat=/etc/files/sub/b.txt", "--stat=/etc/files", "--stat=/work",
			"--api-get=200=/api/v1/namespaces/jobs/configmaps", // allowed by the Role
			"--api-get=403=/api/v1/namespaces/jobs/secrets",    // not allowed
			"--message=ok-done",
		})
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJobCondition(ctx, t, cs, "succeed", batchv1.JobComplete)
		pod := jobPod(ctx, t, cs, "succeed")
		logs, _ := e.Logs(ns, pod.Name, "main")
		if pod.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("pod phase %s, want Succeeded; logs:\n%s", pod.Status.Phase, logs)
		}
		st := pod.Status.ContainerStatuses[0]
		term := st.State.Terminated
		if term == nil || term.ExitCode != 0 || term.Message != "ok-done" || term.Reason != "Completed" {
			t.Fatalf("terminated state %+v, want exit 0, message ok-done", term)
		}
		if st.ImageID != pinned {
			t.Errorf("imageID %q, want %q", st.ImageID, pinned)
		}
		if pod.Status.InitContainerStatuses[0].State.Terminated == nil || pod.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 {
			t.Errorf("init container status %+v", pod.Status.InitContainerStatuses[0])
		}
		if pod.Status.StartTime == nil || term.FinishedAt.IsZero() || term.StartedAt.IsZero() {
			t.Errorf("start/finish times missing: %+v %+v", pod.Status.StartTime, term)
		}
		for _, want := range []string{
			"uid=65532 gid=65532 groups=[65532] wd=/captf hostname=" + pod.Name,
			"GET /api/v1/namespaces/jobs/configmaps -> 200 ok",
			"GET /api/v1/namespaces/jobs/secrets -> 403 ok",
			"stat /etc/files/sub/b.txt mode=0440 uid=0 gid=65532", // item mode, fsGroup
			"stat /work mode=0777",                                // emptyDir
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
		}
		if strings.Contains(logs, "s3cr3t") {
			t.Errorf("the test program leaked the secret value into the log")
		}
	})

	t.Run("a failing container marks the Job Failed", func(t *testing.T) {
		job := podprogJob("fail", image, []string{"--message=boom", "--exit=3"})
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJobCondition(ctx, t, cs, "fail", batchv1.JobFailed)
		pod := jobPod(ctx, t, cs, "fail")
		term := pod.Status.ContainerStatuses[0].State.Terminated
		if pod.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 3 || term.Message != "boom" || term.Reason != "Error" {
			t.Fatalf("pod phase %s, terminated %+v; want Failed, exit 3, message boom", pod.Status.Phase, term)
		}
	})

	t.Run("deleting the Job garbage-collects the pod and the process gets SIGTERM", func(t *testing.T) {
		job := podprogJob("term", image, []string{"--wait-sigterm"})
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pod *corev1.Pod
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=term"})
			if err != nil || len(pods.Items) == 0 {
				return false, err
			}
			pod = &pods.Items[0]
			logs, _ := e.Logs(ns, pod.Name, "main")
			return pod.Status.Phase == corev1.PodRunning && strings.Contains(logs, "waiting for SIGTERM"), nil
		}); err != nil {
			t.Fatalf("pod never ran: %v", err)
		}
		if err := cs.BatchV1().Jobs(ns).Delete(ctx, "term", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("pod was not removed after its Job was deleted: %v", err)
		}
		logs, _ := e.Logs(ns, pod.Name, "main")
		if !strings.Contains(logs, "received SIGTERM") {
			t.Fatalf("the process did not get SIGTERM; log:\n%s", logs)
		}
	})

	t.Run("activeDeadlineSeconds stops the pod as DeadlineExceeded", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "deadline", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				ActiveDeadlineSeconds:         ptr.To[int64](2),
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "main", Image: image,
					Command: []string{testimage.ProgramPath}, Args: []string{"--wait-sigterm"}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "deadline", metav1.GetOptions{})
			got = p
			return err == nil && p.Status.Phase == corev1.PodFailed, nil
		}); err != nil {
			t.Fatalf("pod did not fail on its deadline: %v", err)
		}
		if got.Status.Reason != "DeadlineExceeded" {
			t.Errorf("reason %q, want DeadlineExceeded", got.Status.Reason)
		}
		if logs, _ := e.Logs(ns, "deadline", "main"); !strings.Contains(logs, "received SIGTERM") {
			t.Errorf("the process did not get SIGTERM; log:\n%s", logs)
		}
	})

	t.Run("a process that ignores SIGTERM is killed after the grace period", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "stubborn", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				ActiveDeadlineSeconds:         ptr.To[int64](1),
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "main", Image: image,
					Command: []string{testimage.ProgramPath}, Args: []string{"--wait-sigterm", "--ignore-sigterm"}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "stubborn", metav1.GetOptions{})
			got = p
			return err == nil && p.Status.Phase == corev1.PodFailed, nil
		}); err != nil {
			t.Fatalf("pod did not fail on its deadline: %v", err)
		}
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 137 || term.Signal != 9 {
			t.Errorf("terminated state %+v, want SIGKILL (exit 137)", term)
		}
		if logs, _ := e.Logs(ns, "stubborn", "main"); !strings.Contains(logs, "ignoring SIGTERM") {
			t.Errorf("the process did not get SIGTERM first; log:\n%s", logs)
		}
	})

	t.Run("a missing image leaves the container waiting in ErrImagePull, then ImagePullBackOff", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "noimage", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: e.ImageRef("captf/missing:v1"),
					Command: []string{testimage.ProgramPath}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "noimage", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, err
			}
			if w := p.Status.ContainerStatuses[0].State.Waiting; w != nil {
				seen[w.Reason] = true
			}
			if p.Status.Phase != corev1.PodPending {
				return false, fmt.Errorf("pod phase %s while its image is missing", p.Status.Phase)
			}
			return seen["ErrImagePull"] && seen["ImagePullBackOff"], nil
		}); err != nil {
			t.Fatalf("waiting reasons seen %v: %v", seen, err)
		}
		// Deleting it while it waits removes it.
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "noimage", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, "noimage", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("a deleted waiting pod was not removed: %v", err)
		}
	})

	t.Run("a failing init container fails the pod and the main container never starts", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "badinit", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				InitContainers: []corev1.Container{{Name: "init", Image: image,
					Command: []string{testimage.ProgramPath, "--exit=7", "--message=init broke"}}},
				Containers: []corev1.Container{{Name: "main", Image: image,
					Command: []string{testimage.ProgramPath, "--write=/tmp/ran=1"}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "badinit", metav1.GetOptions{})
			got = p
			return err == nil && p.Status.Phase == corev1.PodFailed, nil
		}); err != nil {
			t.Fatalf("pod did not fail: %v", err)
		}
		it := got.Status.InitContainerStatuses[0].State.Terminated
		if it == nil || it.ExitCode != 7 || it.Message != "init broke" {
			t.Errorf("init container state %+v", got.Status.InitContainerStatuses[0].State)
		}
		if w := got.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("main container state %+v, want waiting PodInitializing", got.Status.ContainerStatuses[0].State)
		}
	})

	t.Run("pods bound to another node are left alone", func(t *testing.T) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:      "other-node",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: image, Command: []string{testimage.ProgramPath}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "elsewhere", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending || len(p.Status.ContainerStatuses) != 0 {
			t.Errorf("a pod of another node was touched: %+v", p.Status)
		}
	})

	total, per, err := e.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resident memory: %d MiB total; %v", total>>20, mib(per))
}

func mib(m map[string]int64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprintf("%dMiB", v>>20)
	}
	return out
}

func setupNamespace(ctx context.Context, t testing.TB, cs kubernetes.Interface) {
	t.Helper()
	objs := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "runner"},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "runner"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "runner"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "runner", Namespace: ns}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "creds"},
				Data:       map[string][]byte{"USER_NAME": []byte("alice"), "API_KEY": []byte("s3cr3t")},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "files"},
				Data:       map[string][]byte{"a": []byte("A"), "b": []byte("B")},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "settings"},
				Data:       map[string]string{"greeting": "hi"},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
}

func podprogJob(name, image string, args []string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					ServiceAccountName:            "runner",
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532)},
					InitContainers: []corev1.Container{{
						Name: "init", Image: image,
						Command:      []string{testimage.ProgramPath, "--write=/shared/init=from-init"},
						VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}},
					}},
					Containers: []corev1.Container{{
						Name: "main", Image: image,
						Command: []string{testimage.ProgramPath},
						Args:    args,
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}},
						Env: []corev1.EnvVar{
							{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "greeting"}}},
							{Name: "TOKEN_COPY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "API_KEY"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "FULL", Value: "$(USER_NAME)-x"},
						},
						SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "shared", MountPath: "/shared"},
							{Name: "work", MountPath: "/work"},
							{Name: "files", MountPath: "/etc/files", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName:  "files",
							DefaultMode: ptr.To[int32](0o400),
							Items:       []corev1.KeyToPath{{Key: "b", Path: "sub/b.txt", Mode: ptr.To[int32](0o440)}},
						}}},
					},
				},
			},
		},
	}
}

func waitJobCondition(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, cond batchv1.JobConditionType) {
	t.Helper()
	var last *batchv1.Job
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = j
		for _, c := range j.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		t.Fatalf("Job %s never got %s: %v\njob status: %+v\npods: %+v", name, cond, err, last.Status, pods)
	}
}

func jobPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, job string) *corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1", job, len(pods.Items))
	}
	return &pods.Items[0]
}

// BenchmarkJobRunsToComplete measures one Job from creation to Complete on
// a running environment (image already pulled): Job controller, binding,
// volumes, token request, init and main containers, status.
func BenchmarkJobRunsToComplete(b *testing.B) {
	e, err := env.Start(context.Background(), env.Options{Logger: testLogger, Kubelet: true, Registry: true})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = e.Stop() }()
	ctx := context.Background()
	img, err := testimage.Image()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.PushImage(ctx, "captf/podprog:bench", img); err != nil {
		b.Fatal(err)
	}
	setupNamespace(ctx, b, e.Clientset)
	i := 0
	for b.Loop() {
		i++
		name := fmt.Sprintf("bench-%d", i)
		if _, err := e.Clientset.BatchV1().Jobs(ns).Create(ctx, podprogJob(name, e.ImageRef("captf/podprog:bench"), []string{"--message=ok"}), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			j, err := e.Clientset.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			b.Fatalf("Job %s did not complete: %v", name, err)
		}
	}
}
