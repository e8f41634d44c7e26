package identity

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// The package's tests share one kube-apiserver and etcd with CAPTF's CRDs
// and Cluster API's Cluster CRD installed. There is no controller-manager:
// nothing is garbage collected, so every deletion seen is one this package
// made.
var (
	testEnv    *ctrlenvtest.Environment
	testCfg    *rest.Config
	testScheme *runtime.Scheme
	k8s        client.Client // direct: reads are never stale
	nsSeq      atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	testScheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(testScheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	capi, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go list sigs.k8s.io/cluster-api:", err)
		return 1
	}
	env, cfg, err := envtest.Start(
		filepath.Join("..", "..", "config", "crd", "bases"),
		filepath.Join(strings.TrimSpace(string(capi)), "core", "config", "crd", "bases", "cluster.x-k8s.io_clusters.yaml"),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	testEnv, testCfg = env, cfg
	k8s, err = client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// ctx carries a logger that records every line this package logs, at every
// verbosity, so the leak check can read them.
var (
	logMu    sync.Mutex
	logLines []string
	ctx      = logr.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logLines = append(logLines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10}))
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// namespace creates a fresh namespace with labels.
func namespace(t testing.TB, lbls map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("id-%d-%d", time.Now().UnixNano()%100000, nsSeq.Add(1))
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}))
	return name
}

func sourceSecret(t testing.TB, ns, name string, data map[string][]byte) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	must(t, k8s.Create(ctx, s))
	return s
}

func newIdentity(t testing.TB, name, secretNS, secretName string, allowed *infrav1.AllowedNamespaces) *infrav1.TerraformClusterIdentity {
	t.Helper()
	id := &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: secretNS, Name: secretName},
			AllowedNamespaces: allowed,
		},
	}
	must(t, k8s.Create(ctx, id))
	t.Cleanup(func() { _ = k8s.Delete(ctx, id) })
	return id
}

func listOf(nss ...string) *infrav1.AllowedNamespaces { return &infrav1.AllowedNamespaces{List: nss} }

var idSeq atomic.Int64

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, idSeq.Add(1)) }

const image = "registry.example/module:v1"

func newCluster(t testing.TB, ns, name, identity string, mut func(*infrav1.TerraformCluster)) *infrav1.TerraformCluster {
	t.Helper()
	c := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	c.Spec.Source.Image = image
	c.Spec.IdentityRef = &infrav1.IdentityReference{Name: identity}
	if mut != nil {
		mut(c)
	}
	must(t, k8s.Create(ctx, c))
	return c
}

// newCAPICluster creates a Cluster API Cluster whose infrastructureRef
// names the TerraformCluster tcName.
func newCAPICluster(t testing.TB, ns, name, tcName string) {
	t.Helper()
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: string(infrav1.KindTerraformCluster), Name: tcName}
	must(t, k8s.Create(ctx, cl))
}

func newMachine(t testing.TB, ns, name, clusterName string, mut func(*infrav1.TerraformMachine)) *infrav1.TerraformMachine {
	t.Helper()
	m := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if clusterName != "" {
		m.Labels = map[string]string{clusterv1.ClusterNameLabel: clusterName}
	}
	m.Spec.Source.Image = image
	if mut != nil {
		mut(m)
	}
	must(t, k8s.Create(ctx, m))
	return m
}

func newPool(t testing.TB, ns, name, clusterName string, mut func(*infrav1.TerraformMachinePool)) *infrav1.TerraformMachinePool {
	t.Helper()
	p := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if clusterName != "" {
		p.Labels = map[string]string{clusterv1.ClusterNameLabel: clusterName}
	}
	p.Spec.Source.Image = image
	if mut != nil {
		mut(p)
	}
	must(t, k8s.Create(ctx, p))
	return p
}

// leakCheck collects every text this package hands back (condition
// messages, event messages, errors) and fails if any carries the sentinel
// credential value.
type leakCheck struct {
	t     testing.TB
	texts []string
}

func (l *leakCheck) cond(c metav1.Condition) { l.texts = append(l.texts, c.Message, c.Reason) }
func (l *leakCheck) verdict(v Verdict)       { l.texts = append(l.texts, v.Message, v.Reason) }
func (l *leakCheck) events(ev []Event) {
	for _, e := range ev {
		l.texts = append(l.texts, e.Message, e.Reason)
	}
}
func (l *leakCheck) err(err error) {
	if err != nil {
		l.texts = append(l.texts, err.Error())
	}
}
func (l *leakCheck) check() {
	l.t.Helper()
	if len(l.texts) == 0 {
		l.t.Fatal("nothing collected")
	}
	logMu.Lock()
	texts := append(append([]string(nil), l.texts...), logLines...)
	logMu.Unlock()
	for _, s := range texts {
		if strings.Contains(s, sentinel) {
			l.t.Fatalf("a credential value reached a message: %q", s)
		}
	}
}

func wantCond(t testing.TB, c metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if c.Type != typ || c.Status != status || c.Reason != reason {
		t.Fatalf("%s: got %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

func wantVerdict(t testing.TB, v Verdict, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if v.Status != status || v.Reason != reason {
		t.Fatalf("got %s/%s (%s), want %s/%s", v.Status, v.Reason, v.Message, status, reason)
	}
}

func getSecretT(t testing.TB, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := getSecret(ctx, k8s, client.ObjectKey{Namespace: ns, Name: name})
	must(t, err)
	return s
}

// managerClient is a client like the manager's: reads through a cache that
// holds only captf.io/managed=true Secrets, ServiceAccounts and
// RoleBindings; writes go to the API server.
func managerClient(t testing.TB) client.Client {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{infrav1.ManagedLabel: TrueValue})
	cc, err := cache.New(testCfg, cache.Options{
		Scheme: testScheme,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:         {Label: sel},
			&corev1.ServiceAccount{}: {Label: sel},
			&rbacv1.RoleBinding{}:    {Label: sel},
		},
	})
	must(t, err)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = cc.Start(cctx) }()
	if !cc.WaitForCacheSync(cctx) {
		t.Fatal("cache did not sync")
	}
	c, err := client.New(testCfg, client.Options{Scheme: testScheme, Cache: &client.CacheOptions{Reader: cc}})
	must(t, err)
	return c
}

// eventually retries f until it returns nil or ten seconds pass.
func eventually(t testing.TB, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
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
