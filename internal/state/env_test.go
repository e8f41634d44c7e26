package state

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	captfenvtest "github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// testEnv is one kube-apiserver and etcd (the pinned hack/tools builds)
// shared by this package's tests, started on first use and stopped by
// TestMain.
type testEnv struct {
	env        *ctrlenvtest.Environment
	cfg        *rest.Config
	client     client.WithWatch
	scheme     *runtime.Scheme
	kubeconfig string // admin kubeconfig file, for tofu's config_path
}

var (
	envOnce  sync.Once
	envErr   error
	envShare *testEnv
	nsSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if envShare != nil {
		_ = envShare.env.Stop()
		_ = os.RemoveAll(filepath.Dir(envShare.kubeconfig))
	}
	os.Exit(code)
}

// startEnv starts envtest with the pinned binaries. Kubernetes 1.37's
// apiserver refuses envtest's --advertise-address=127.0.0.1 unless the
// endpoint reconciler is off, so that is set too.
func startEnv() (*testEnv, error) {
	dir, err := os.MkdirTemp("", "captf-state-envtest-")
	if err != nil {
		return nil, err
	}
	env, cfg, err := captfenvtest.Start()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kubeconfig, err := captfenvtest.AdminKubeconfig(env, dir)
	if err != nil {
		return nil, err
	}
	return &testEnv{env: env, cfg: cfg, client: c, scheme: scheme, kubeconfig: kubeconfig}, nil
}

// sharedEnv returns the package's envtest, failing the test if it cannot
// start.
func sharedEnv(t testing.TB) *testEnv {
	t.Helper()
	envOnce.Do(func() { envShare, envErr = startEnv() })
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
	return envShare
}

// namespace creates a fresh namespace for one test.
func (e *testEnv) namespace(t testing.TB) string {
	t.Helper()
	ns := fmt.Sprintf("state-%d-%d", time.Now().UnixNano()%100000, nsSeq.Add(1))
	if err := e.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// managedCache is a cache like the manager's: Secrets and Leases selected
// by captf.io/managed=true. It stops with the test.
func (e *testEnv) managedCache(t testing.TB) cache.Cache {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{managedLabel: "true"})
	c, err := cache.New(e.cfg, cache.Options{
		Scheme: e.scheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: sel},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	// Informers start on first use; ask for Secrets now and wait.
	if _, err := c.GetInformer(ctx, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return c
}

// create writes objects to the apiserver.
func (e *testEnv) create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := e.client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
}

func secretsAsObjects(ns string, in []corev1.Secret) []client.Object {
	out := make([]client.Object, len(in))
	for i := range in {
		s := in[i].DeepCopy()
		s.Namespace = ns
		s.ResourceVersion = ""
		out[i] = s
	}
	return out
}

// eventually polls f until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
