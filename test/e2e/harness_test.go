package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goruntime "runtime"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformcluster"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachine"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachinepool"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

var logger = logr.Discard()

func TestMain(m *testing.M) {
	if os.Getenv("CAPTF_E2E_LOG") != "" {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(logger)
	os.Exit(m.Run())
}

// images are the refs of the images a scenario runs.
type images struct {
	runner, cluster, machine, pool string
}

// world is one environment with CAPTF running in it.
type world struct {
	t      *testing.T
	e      *env.Env
	c      client.Client
	images images
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme,
		controlplanev1.AddToScheme, infrav1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// root is the repository root.
func root(t testing.TB) string {
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// buildRunner builds the static runner binary.
func buildRunner(t testing.TB) string {
	out := filepath.Join(t.TempDir(), "runner")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/runner")
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/runner: %v\n%s", err, b)
	}
	return out
}

// pushImages builds and pushes the runner image and the three no-op module
// images into the environment's registry.
func pushImages(ctx context.Context, t testing.TB, e *env.Env, runnerBin string) (images, error) {
	tofu, err := tools.Path("tofu")
	if err != nil {
		return images{}, err
	}
	runnerImg, err := imagebuild.Build(imagebuild.Spec{Platform: v1.Platform{OS: "linux", Architecture: goruntime.GOARCH}, Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
		{Path: "/runner", Mode: 0o755, Source: runnerBin},
	}}}})
	if err != nil {
		return images{}, fmt.Errorf("build the runner image: %w", err)
	}
	var out images
	if out.runner, err = e.PushImage(ctx, "captf/runner:e2e", runnerImg); err != nil {
		return images{}, err
	}
	for role, ref := range map[contract.Role]*string{
		contract.RoleCluster: &out.cluster, contract.RoleMachine: &out.machine, contract.RoleMachinePool: &out.pool,
	} {
		img, err := imagebuild.ModuleImage{
			Role: role, ModuleDir: filepath.Join(root(t), "modules", "noop", string(role)),
			Runtime: tofu, RuntimeName: imagebuild.RuntimeTofu, RuntimeVersion: "1.12.6", EmptyProviders: true,
		}.Build()
		if err != nil {
			return images{}, fmt.Errorf("build the %s image: %w", role, err)
		}
		if _, err := e.PushImage(ctx, "captf/noop-"+string(role)+":e2e", img); err != nil {
			return images{}, err
		}
		// The tag, not the digest: the tag is the module version.
		*ref = e.ImageRef("captf/noop-" + string(role) + ":e2e")
	}
	return out, nil
}

// managerOptions are the flow settings the scenarios run with.
func managerOptions(runnerImage string) lifecycle.Options {
	return lifecycle.Options{
		RunnerImage:          runnerImage,
		DriftDefaultInterval: 30 * time.Minute,
		StateBackups:         5,
		ClusterOperationGate: true,
		RunnerEvents:         true,
	}
}

// runManager runs a CAPTF manager until ctx ends.
func runManager(ctx context.Context, e *env.Env, runnerImage string) error {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logger,
	})
	if err != nil {
		return err
	}
	flow := lifecycle.Flow{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("captf"),
		Options:   managerOptions(runnerImage),
	}
	copts := lifecycle.ControllerOptions{Concurrency: 4}
	if err := terraformcluster.Setup(ctx, mgr, flow, copts); err != nil {
		return err
	}
	if err := terraformmachine.Setup(ctx, mgr, flow, copts); err != nil {
		return err
	}
	if err := terraformmachinepool.Setup(ctx, mgr, flow, copts); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// start brings up the environment, the images and a manager.
func start(t *testing.T) *world {
	t.Helper()
	runnerBin := buildRunner(t)
	w := &world{t: t}
	w.e = env.ForTest(t, env.Options{
		CAPI: true, Kubelet: true, Registry: true, Logger: logger,
		CRDPaths: []string{renderedCRDs(t)},
		// CAPTF_E2E_KEEP=<dir> keeps the environment's folder (logs, pods).
		Dir: os.Getenv("CAPTF_E2E_KEEP"), KeepDir: os.Getenv("CAPTF_E2E_KEEP") != "",
		Manager: func(ctx context.Context, e *env.Env) error {
			imgs, err := pushImages(ctx, t, e, runnerBin)
			if err != nil {
				return err
			}
			w.images = imgs
			if err := runnerClusterRole(ctx, e.Client); err != nil {
				return err
			}
			return runManager(ctx, e, imgs.runner)
		},
	})
	c, err := client.New(w.e.Config, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w.c = c
	// The manager goroutine pushes the images first.
	deadline := time.Now().Add(3 * time.Minute)
	for w.images.runner == "" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if w.images.runner == "" {
		t.Fatal("the images were not pushed")
	}
	return w
}

// renderedCRDs renders config/crd (the CRDs with their Cluster API contract
// labels) with kustomize into a file.
func renderedCRDs(t testing.TB) string {
	k, err := tools.Path("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(k, "build", filepath.Join(root(t), "config", "crd")).Output()
	if err != nil {
		t.Fatalf("kustomize build config/crd: %v", err)
	}
	f := filepath.Join(t.TempDir(), "captf-crds.yaml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// runnerClusterRole creates the static captf-runner ClusterRole from the
// shipped manifest.
func runnerClusterRole(ctx context.Context, c client.Client) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "captf-runner"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
		},
	}
	if err := c.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// applyTemplate renders a shipped clusterctl template and creates every
// object in it.
func (w *world) applyTemplate(ctx context.Context, name string, vars map[string]string) []*unstructured.Unstructured {
	w.t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(w.t), "templates", name))
	if err != nil {
		w.t.Fatal(err)
	}
	out, err := yamlprocessor.NewSimpleProcessor().Process(raw, func(k string) (string, error) {
		if v, ok := vars[k]; ok {
			return v, nil
		}
		return "", errors.New("not set")
	})
	if err != nil {
		w.t.Fatalf("render %s: %v", name, err)
	}
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				break
			}
			w.t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
	return objs
}

func (w *world) create(ctx context.Context, objs ...client.Object) {
	w.t.Helper()
	for _, o := range objs {
		if err := w.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			w.t.Fatalf("create %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
}

func (w *world) namespace(ctx context.Context, name string) {
	w.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// eventually polls cond until it holds or the timeout passes.
func (w *world) eventually(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) || ctx.Err() != nil {
			w.dump(ctx)
			w.t.Fatalf("timed out waiting for %s: %s", what, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ready reports an object's Ready condition.
func ready(o interface{ GetConditions() []metav1.Condition }) (bool, string) {
	for _, c := range o.GetConditions() {
		if c.Type == infrav1.ReadyCondition {
			return c.Status == metav1.ConditionTrue, fmt.Sprintf("Ready=%s/%s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return false, "no Ready condition"
}

// dump logs what the test's objects look like, for a failure.
func (w *world) dump(ctx context.Context) {
	var tcs infrav1.TerraformClusterList
	_ = w.c.List(ctx, &tcs)
	for _, o := range tcs.Items {
		w.t.Logf("TerraformCluster %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var tms infrav1.TerraformMachineList
	_ = w.c.List(ctx, &tms)
	for _, o := range tms.Items {
		w.t.Logf("TerraformMachine %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var tmps infrav1.TerraformMachinePoolList
	_ = w.c.List(ctx, &tmps)
	for _, o := range tmps.Items {
		w.t.Logf("TerraformMachinePool %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var jobs batchv1.JobList
	_ = w.c.List(ctx, &jobs)
	for _, j := range jobs.Items {
		w.t.Logf("Job %s/%s: active=%d succeeded=%d failed=%d", j.Namespace, j.Name, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
	}
	var pods corev1.PodList
	_ = w.c.List(ctx, &pods)
	for _, p := range pods.Items {
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
				logs, _ := w.e.Logs(p.Namespace, p.Name, cs.Name)
				w.t.Logf("pod %s container %s exited %d: %s\n%s", p.Name, cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Message, tail(logs, 3000))
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func conds(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s/%s(%s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " ")
}
