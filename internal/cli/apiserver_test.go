package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// server is a real API server with CAPTF's and Cluster API's CRDs, started
// by the first test that needs it.
var server struct {
	once       sync.Once
	err        error
	env        *ctrlenvtest.Environment
	kubeconfig string
	dyn        dynamic.Interface
	core       kubernetes.Interface
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.env != nil {
		_ = server.env.Stop()
	}
	os.Exit(code)
}

// apiServer starts the API server once and returns a new namespace in it.
func apiServer(t *testing.T) string {
	t.Helper()
	server.once.Do(func() {
		root, err := tools.RepoRoot()
		if err != nil {
			server.err = err
			return
		}
		sets, err := capi.CRDs()
		if err != nil {
			server.err = err
			return
		}
		env, cfg, err := envtest.Start(filepath.Join(root, "config", "crd", "bases"), sets[0].Path)
		if err != nil {
			server.err = err
			return
		}
		server.env = env
		dir, err := os.MkdirTemp("", "captf-cli-test-")
		if err != nil {
			server.err = err
			return
		}
		if server.kubeconfig, server.err = envtest.AdminKubeconfig(env, dir); server.err != nil {
			return
		}
		if server.dyn, server.err = dynamic.NewForConfig(cfg); server.err != nil {
			return
		}
		server.core, server.err = kubernetes.NewForConfig(cfg)
	})
	if server.err != nil {
		t.Fatal(server.err)
	}
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = strings.Trim(ns, "-")
	if _, err := server.core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// run runs kubectl captf with args (and the server's kubeconfig); it
// returns stdout, stderr and the exit code.
func run(ctx context.Context, args ...string) (string, string, int) {
	var out, errOut syncBuffer
	code := Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append(args, "--kubeconfig", server.kubeconfig))
	return out.String(), errOut.String(), code
}

// syncBuffer is a bytes.Buffer a test reads while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// createTC creates a TerraformCluster of Cluster cluster, then writes
// status (nil: none).
func createTC(t *testing.T, ns, name, cluster string, mut func(*infrav1.TerraformCluster), status *infrav1.TerraformClusterStatus) *unstructured.Unstructured {
	t.Helper()
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{clusterNameLabel: cluster}}}
	tc.Spec.Source.Image = "registry.example/cluster:v1"
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: "test-identity"}
	if mut != nil {
		mut(tc)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(infrav1.GroupVersion.String())
	u.SetKind("TerraformCluster")
	res := server.dyn.Resource(kinds[0].GVR()).Namespace(ns)
	got, err := res.Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status != nil {
		setStatus(t, got, *status)
	}
	return got
}

// setStatus writes a TerraformCluster's status.
func setStatus(t *testing.T, u *unstructured.Unstructured, status infrav1.TerraformClusterStatus) {
	t.Helper()
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		t.Fatal(err)
	}
	res := server.dyn.Resource(kinds[0].GVR()).Namespace(u.GetNamespace())
	for range 5 {
		cur, err := res.Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"] = st
		if _, err = res.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	t.Fatalf("status of %s not written", u.GetName())
}

func annotationsOf(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	u, err := server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.GetAnnotations()
}

func provisioned(conds ...metav1.Condition) *infrav1.TerraformClusterStatus {
	st := &infrav1.TerraformClusterStatus{}
	st.Initialization = &infrav1.Initialization{Provisioned: ptr.To(true)}
	st.Conditions = conds
	return st
}

// TestDay2Commands runs reconcile, drift check, suspend and resume against
// a real API server: each writes its annotation, or refuses (exit 1, and
// why) where the book says the action cannot happen and writes nothing.
func TestDay2Commands(t *testing.T) {
	ctx := context.Background()
	ns := apiServer(t)
	notPaused := cond(infrav1.PausedCondition, metav1.ConditionFalse, infrav1.NotPausedReason, "")
	createTC(t, ns, "demo", "demo", nil, provisioned(notPaused))
	createTC(t, ns, "fresh", "fresh", nil, nil)
	createTC(t, ns, "off", "off", func(tc *infrav1.TerraformCluster) {
		tc.Spec.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To[int32](0)}
	}, provisioned(notPaused))
	createTC(t, ns, "external", "external", func(tc *infrav1.TerraformCluster) {
		tc.Annotations = map[string]string{clusterv1.ManagedByAnnotation: "another-controller"}
	}, provisioned(notPaused))
	gone := createTC(t, ns, "gone", "gone", func(tc *infrav1.TerraformCluster) { tc.Finalizers = []string{"test.captf.io/hold"} }, provisioned(notPaused))
	if err := server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Delete(ctx, gone.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Patch(ctx, "gone", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	wantRefused := func(t *testing.T, name string, because string, args ...string) {
		t.Helper()
		before := annotationsOf(t, ns, name)
		_, stderr, code := run(ctx, append(args, "-n", ns)...)
		if code == 0 || !strings.Contains(stderr, because) {
			t.Errorf("kubectl captf %s: exit %d, stderr %q; want a refusal naming %q", strings.Join(args, " "), code, stderr, because)
		}
		if after := annotationsOf(t, ns, name); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused %s changed the annotations from %v to %v", args[0], before, after)
		}
	}
	wantRequest := func(t *testing.T, key string, args ...string) {
		t.Helper()
		start := time.Now().Add(-time.Second)
		out, stderr, code := run(ctx, append(args, "-n", ns)...)
		if code != 0 {
			t.Fatalf("kubectl captf %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		v, ok := annotationsOf(t, ns, "demo")[key]
		at, err := time.Parse(time.RFC3339, v)
		if !ok || err != nil || at.Before(start.Truncate(time.Second)) {
			t.Errorf("%s = %q (%v), want the time of the request", key, v, err)
		}
		if !strings.Contains(out, key) {
			t.Errorf("the command said %q, naming no %s", out, key)
		}
	}

	t.Run("reconcile", func(t *testing.T) {
		wantRequest(t, infrav1.ReconcileRequestedAnnotation, "reconcile", "tc/demo")
		wantRefused(t, "gone", "is being deleted", "reconcile", "tc/gone")
		wantRefused(t, "external", "is externally managed", "reconcile", "tc/external")
	})
	t.Run("drift_check", func(t *testing.T) {
		wantRequest(t, infrav1.DriftCheckRequestedAnnotation, "drift", "check", "terraformcluster/demo")
		wantRefused(t, "fresh", "not provisioned yet", "drift", "check", "tc/fresh")
		wantRefused(t, "off", "drift checks are off", "drift", "check", "tc/off")
		wantRefused(t, "gone", "is being deleted", "drift", "check", "tc/gone")
		wantRefused(t, "external", "is externally managed", "drift", "check", "tc/external")
	})
	t.Run("suspend_and_resume", func(t *testing.T) {
		if _, stderr, code := run(ctx, "suspend", "tc/demo", "-n", ns); code != 0 {
			t.Fatalf("suspend: exit %d: %s", code, stderr)
		}
		if _, ok := annotationsOf(t, ns, "demo")[clusterv1.PausedAnnotation]; !ok {
			t.Fatal("suspend did not set " + clusterv1.PausedAnnotation)
		}
		if out, _, code := run(ctx, "suspend", "tc/demo", "-n", ns); code != 0 || !strings.Contains(out, "suspended already") {
			t.Errorf("a second suspend: exit %d, %q", code, out)
		}
		wantRefused(t, "demo", "is paused (its "+clusterv1.PausedAnnotation+" annotation", "reconcile", "tc/demo")
		wantRefused(t, "demo", "is paused", "drift", "check", "tc/demo")
		if _, stderr, code := run(ctx, "resume", "tc/demo", "-n", ns); code != 0 {
			t.Fatalf("resume: exit %d: %s", code, stderr)
		}
		if _, ok := annotationsOf(t, ns, "demo")[clusterv1.PausedAnnotation]; ok {
			t.Fatal("resume left " + clusterv1.PausedAnnotation)
		}
		if out, _, code := run(ctx, "resume", "tc/demo", "-n", ns); code != 0 || !strings.Contains(out, "not suspended") {
			t.Errorf("a second resume: exit %d, %q", code, out)
		}
	})
	t.Run("resume_refuses_under_a_paused_cluster", func(t *testing.T) {
		cl := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": clusterv1.GroupVersion.String(), "kind": "Cluster",
			"metadata": map[string]any{"name": "held", "namespace": ns},
			"spec":     map[string]any{"paused": true},
		}}
		if _, err := server.dyn.Resource(clustersGVR).Namespace(ns).Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createTC(t, ns, "held", "held", func(tc *infrav1.TerraformCluster) {
			tc.Annotations = map[string]string{clusterv1.PausedAnnotation: "true"}
		}, provisioned(cond(infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason, "")))
		wantRefused(t, "held", "stays paused because its Cluster held has spec.paused: true", "resume", "tc/held")
		wantRefused(t, "held", "is paused", "reconcile", "tc/held")
	})
}

// TestStatusWatch runs status --watch against a real API server: the
// table first, then a row when an object's status changes and one when an
// object goes, until the command is interrupted.
func TestStatusWatch(t *testing.T) {
	ns := apiServer(t)
	createTC(t, ns, "demo", "demo", nil, provisioned(cond(infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason, "")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			[]string{"status", "-n", ns, "--watch", "--kubeconfig", server.kubeconfig})
	}()
	waitFor := func(what string, ok func(string) bool) {
		t.Helper()
		envtest.Eventually(t, 30*time.Second, what, func() (bool, string) {
			return ok(out.String()), "printed:\n" + out.String() + errOut.String()
		})
	}
	waitFor("the table", func(s string) bool {
		return strings.HasPrefix(s, "NAME ") && strings.Contains(s, "terraformcluster/demo  False  NotReady")
	})
	// A change of anything but the status prints nothing.
	if _, err := server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Patch(ctx, "demo", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, createdTC(t, ns, "demo"), *provisioned(cond(infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, "")))
	waitFor("the row of the change", func(s string) bool { return strings.Contains(s, "\nterraformcluster/demo  True   Ready") })
	if err := server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the row of the deletion", func(s string) bool { return strings.Contains(s, "deleted\n") })
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("status --watch ended with exit %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("status --watch did not end when interrupted")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Errorf("status --watch printed %d lines, want the header, the row, the change and the deletion:\n%s", len(lines), out.String())
	}
}

func createdTC(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := server.dyn.Resource(kinds[0].GVR()).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestWatchListsAgainOnExpiry: a watch whose resourceVersion the API server
// no longer has (410 Gone, Expired) lists the kind again and goes on from
// the list's version: the objects come as one sync, and a later change
// comes as itself.
func TestWatchListsAgainOnExpiry(t *testing.T) {
	ns := apiServer(t)
	createTC(t, ns, "old", "old", nil, nil)
	k, err := newKube(kubeconfigFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan watchEvent)
	// Version 1 is older than anything the API server's watch cache keeps.
	go follow(ctx, k, kinds[0], ns, metav1.ListOptions{}, "1", events)
	next := func() watchEvent {
		t.Helper()
		select {
		case ev := <-events:
			if ev.err != nil {
				t.Fatal(ev.err)
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event in 30s")
		}
		return watchEvent{}
	}
	ev := next()
	if ev.sync == nil || len(ev.sync) != 1 || ev.sync[0].w.GetName() != "old" {
		t.Fatalf("after the expiry: %+v, want a sync of the one TerraformCluster", ev)
	}
	createTC(t, ns, "new", "new", nil, nil)
	if ev := next(); ev.obj == nil || ev.obj.w.GetName() != "new" || ev.deleted {
		t.Fatalf("after the sync: %+v, want the new TerraformCluster added", ev)
	}
}

// kubeconfigFlags are the plugin's flags pointed at the test's API server.
func kubeconfigFlags(t *testing.T) *genericclioptions.ConfigFlags {
	t.Helper()
	f := genericclioptions.NewConfigFlags(false)
	f.KubeConfig = ptr.To(server.kubeconfig)
	return f
}
