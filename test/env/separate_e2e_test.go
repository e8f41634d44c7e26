package env_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/testimage"
)

// Options.Separate: the registry, Cluster API and the kubelet run in the
// captf-env child process; Start returns once they are ready, the Env's API
// works as in-process, and Stop has the child stop its pods and managers.
// Cluster API's own behaviour is checked on this environment too
// (testClusterAPIControllers): one control plane and one Cluster API serve
// both.
func TestSeparateRunsRegistryCAPIAndKubeletInAChildProcess(t *testing.T) {
	dir := t.TempDir()
	// A first build of captf-env on a machine takes minutes: not of the
	// start's bound.
	envBin, err := env.BuildEnvBinary(context.Background(), filepath.Join(dir, "prebuilt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := env.Start(ctx, env.Options{Logger: testLogger, Separate: true, EnvBinary: envBin, CAPI: true, Kubelet: true, Registry: true,
		CRDPaths: []string{filepath.Join("testdata", "placeholder-infra")}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = e.Stop()
		}
	}()
	if e.Kubelet != nil || e.CAPI != nil || e.EnvBinary == "" || e.Registry == "" || e.ControlPlane == nil {
		t.Fatalf("Separate: Kubelet %v, CAPI %v (want nil), EnvBinary %q, Registry %q, ControlPlane %v (want set)",
			e.Kubelet, e.CAPI, e.EnvBinary, e.Registry, e.ControlPlane)
	}

	// Ready means Cluster API's webhooks answer: an even control plane is
	// refused at once.
	even := &controlplanev1.KubeadmControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "even", Namespace: metav1.NamespaceDefault},
		Spec: controlplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To[int32](2), Version: "v1.33.0",
			MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: placeholderGroup, Kind: "PlaceholderMachineTemplate", Name: "cp"},
			}},
		},
	}
	if err := e.Client.Create(ctx, even); err == nil || !strings.Contains(err.Error(), "admission webhook") {
		t.Errorf("Cluster API's webhooks were not serving when Start returned: creating an even KubeadmControlPlane gave %v", err)
	}
	// And the kubelet's Node is registered.
	if _, err := e.Clientset.CoreV1().Nodes().Get(ctx, kubelet.DefaultNodeName, metav1.GetOptions{}); err != nil {
		t.Errorf("the kubelet's Node was not registered when Start returned: %v", err)
	}

	t.Run("ClusterAPIControllersActOnClusterMachineDeploymentAndControlPlane", func(t *testing.T) {
		testClusterAPIControllers(t, e)
	})

	// PushImage reaches the child's registry; its kubelet runs the pod;
	// Logs reads what the container wrote.
	image := pushPodprog(ctx, t, e)
	cs := e.Clientset
	setupNamespace(ctx, t, cs)
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, podprogJob("hello", image, []string{"--message=hello-from-child"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitJobCondition(ctx, t, cs, "hello", batchv1.JobComplete)
	pod := jobPod(ctx, t, cs, "hello")
	if term := pod.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Message != "hello-from-child" {
		t.Errorf("terminated state %+v, want message hello-from-child", term)
	}
	if _, err := e.Logs(ns, pod.Name, "main"); err != nil {
		t.Errorf("Logs of a pod the child's kubelet ran: %v", err)
	}
	if _, err := e.Logs(ns, "never-ran", "main"); err == nil || !strings.Contains(err.Error(), "was not run by this kubelet") {
		t.Errorf("Logs of a pod that never ran: %v, want 'was not run by this kubelet'", err)
	}

	// A pod still running when the environment stops gets SIGTERM from the
	// child's kubelet.
	waiter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waiter", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Containers: []corev1.Container{{Name: "main", Image: image,
				Command: []string{testimage.ProgramPath}, Args: []string{"--wait-sigterm"}}},
		},
	}
	if waiter, err = cs.CoreV1().Pods(ns).Create(ctx, waiter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "waiter", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		// Running is reported once the process starts; its SIGTERM
		// handler is in place once it says it waits.
		logs, _ := e.Logs(ns, "waiter", "main")
		return strings.Contains(logs, "waiting for SIGTERM"), nil
	}); err != nil {
		t.Fatalf("pod waiter did not run: %v", err)
	}
	stopped = true
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	logs, err := os.ReadFile(kubelet.ContainerLogPath(kubelet.PodDir(filepath.Join(dir, "kubelet"), ns, "waiter", string(waiter.UID)), "main"))
	if err != nil || !strings.Contains(string(logs), "received SIGTERM") {
		t.Errorf("the running pod did not get SIGTERM when the environment stopped (%v); log:\n%s", err, logs)
	}
	// The child's log is kept with the rest.
	if b, err := os.ReadFile(filepath.Join(dir, "logs", "captf-env.log")); err != nil || !strings.Contains(string(b), "captf-env: stopped") {
		t.Errorf("logs/captf-env.log does not show a clean stop (%v):\n%s", err, b)
	}
}

func TestStart_KubeconfigOfNoControlPlane(t *testing.T) {
	_, err := env.Start(context.Background(), env.Options{Kubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Start with a missing kubeconfig: %v, want an error naming the file", err)
	}
}
