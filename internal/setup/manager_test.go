package setup

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	// The child process of TestCommandLogsEveryFlag and the pure tests need
	// no API server.
	if os.Getenv(childEnv) == "1" {
		runChild()
	}
	if !wantsAPIServer() {
		os.Exit(m.Run())
	}
	root, err := tools.RepoRoot()
	if err != nil {
		panic(err)
	}
	sets, err := capi.CRDs()
	if err != nil {
		panic(err)
	}
	env, c, err := envtest.Start(filepath.Join(root, "config", "crd", "bases"), sets[0].Path)
	if err != nil {
		panic(err)
	}
	cfg = c
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// wantsAPIServer is false when -run selects no test that needs one.
func wantsAPIServer() bool {
	for i, a := range os.Args {
		run := ""
		switch {
		case strings.HasPrefix(a, "-test.run="):
			run = strings.TrimPrefix(a, "-test.run=")
		case a == "-test.run" && i+1 < len(os.Args):
			run = os.Args[i+1]
		default:
			continue
		}
		return run == "" || strings.Contains(run, "Manager")
	}
	return true
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func testOptions(t *testing.T) Options {
	o := DefaultOptions()
	o.RunnerImage = image
	o.DiagnosticsAddress = freeAddr(t)
	o.HealthAddr = freeAddr(t)
	o.SyncPeriod = 2 * time.Second
	o.SkipControllerNameValidation = true
	// The webhooks are served and tested through an API server in
	// internal/webhook; these tests route no admission to the manager.
	o.WebhookPort = 0
	o.Logger = zap.New(zap.UseDevMode(true), zap.WriteTo(envtest.TestLog(t)))
	return o
}

// run builds and starts a manager; it stops when the test ends.
func run(t *testing.T, o Options) (ctrl.Manager, Wiring) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mgr, w, err := build(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return mgr, w
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func ns(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func secret(namespace, name string, lbls map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: lbls},
		Data:       map[string][]byte{"value": []byte("captf-sentinel-variable-71a9")},
	}
}

// secretNames lists Secrets as namespace/name, sorted; an error (a cache
// still starting) lists nothing.
func secretNames(t *testing.T, r client.Reader, opts ...client.ListOption) []string {
	t.Helper()
	list := &corev1.SecretList{}
	if err := r.List(context.Background(), list, opts...); err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Namespace+"/"+s.Name)
	}
	slices.Sort(out)
	return out
}

func get(url string, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The diagnostics endpoint serves a self-signed certificate here.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test against a self-signed server
	}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestManagerInProcess runs the manager as test/env does: New on a
// rest.Config, every controller wired, leader election, secure
// diagnostics, label-scoped caches and the orphan sweep.
func TestManagerInProcess(t *testing.T) {
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create(t, c, ns("captf-system"), ns("tenant"), ns("orphan"))
	// A namespace with CAPTF's runner objects but no Terraform object: the
	// sweep at start removes them.
	create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "orphan", Name: "captf-runner",
		Labels: map[string]string{infrav1.ManagedLabel: "true"}}})
	create(t, c,
		secret("tenant", "state", map[string]string{infrav1.ManagedLabel: "true"}),
		secret("tenant", "bootstrap", nil),
		secret("tenant", "vars", map[string]string{infrav1.VariablesLabel: "true"}),
	)

	o := testOptions(t)
	o.LeaderElect = true
	o.LeaderElectionNamespace = "captf-system"
	mgr, w := run(t, o)

	t.Run("health and readiness probes answer on --health-addr", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			envtest.Eventually(t, 60*time.Second, p, func() (bool, string) {
				code, body, err := get("http://"+o.HealthAddr+p, "")
				return err == nil && code == http.StatusOK, fmt.Sprint(code, body, err)
			})
		}
	})

	t.Run("leader election takes the Lease controller-leader-election-captf", func(t *testing.T) {
		envtest.Eventually(t, 60*time.Second, "the leader Lease", func() (bool, string) {
			l := &coordinationv1.Lease{}
			err := c.Get(ctx, client.ObjectKey{Namespace: "captf-system", Name: LeaderElectionID}, l)
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", fmt.Sprint(err)
		})
	})

	t.Run("the main cache holds only captf.io/managed=true Secrets", func(t *testing.T) {
		envtest.Eventually(t, 60*time.Second, "the managed Secret cached", func() (bool, string) {
			got := secretNames(t, mgr.GetClient(), client.InNamespace("tenant"))
			return slices.Equal(got, []string{"tenant/state"}), strings.Join(got, ",")
		})
	})

	t.Run("the variables cache holds captf.io/variables=true Secrets without their data", func(t *testing.T) {
		envtest.Eventually(t, 60*time.Second, "the variables Secret cached", func() (bool, string) {
			got := secretNames(t, w.Variables, client.InNamespace("tenant"))
			return slices.Equal(got, []string{"tenant/vars"}), strings.Join(got, ",")
		})
		s := &corev1.Secret{}
		if err := w.Variables.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "vars"}, s); err != nil {
			t.Fatal(err)
		}
		if s.Data != nil || s.Labels[infrav1.VariablesLabel] != "true" {
			t.Errorf("cached variables Secret keeps data or lost labels: %+v", s)
		}
	})

	t.Run("other Secrets are read live", func(t *testing.T) {
		s := &corev1.Secret{}
		if err := w.Live.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "bootstrap"}, s); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the controllers run: an identity gets its Ready condition", func(t *testing.T) {
		create(t, c, &infrav1.TerraformClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: "wired"},
			Spec:       infrav1.TerraformClusterIdentitySpec{SecretRef: infrav1.SecretReference{Name: "none", Namespace: "tenant"}},
		})
		envtest.Eventually(t, 60*time.Second, "Ready", func() (bool, string) {
			id := &infrav1.TerraformClusterIdentity{}
			if err := c.Get(ctx, client.ObjectKey{Name: "wired"}, id); err != nil {
				return false, err.Error()
			}
			r := meta.FindStatusCondition(id.Status.Conditions, infrav1.ReadyCondition)
			return r != nil && r.Reason == infrav1.SecretNotFoundReason, fmt.Sprint(r)
		})
	})

	t.Run("the orphan sweep removes runner objects from namespaces with no Terraform object", func(t *testing.T) {
		envtest.Eventually(t, 60*time.Second, "the orphan ServiceAccount swept", func() (bool, string) {
			err := c.Get(ctx, client.ObjectKey{Namespace: "orphan", Name: "captf-runner"}, &corev1.ServiceAccount{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})

	t.Run("diagnostics are authenticated and authorized by default", func(t *testing.T) {
		url := "https://" + o.DiagnosticsAddress + "/metrics"
		envtest.Eventually(t, 60*time.Second, "401 without a token", func() (bool, string) {
			code, _, err := get(url, "")
			return err == nil && code == http.StatusUnauthorized, fmt.Sprint(code, err)
		})
		denied := serviceAccountToken(t, c, "tenant", "stranger")
		code, _, err := get(url, denied)
		if err != nil || code != http.StatusForbidden {
			t.Fatalf("a token without /metrics access: %d %v, want 403", code, err)
		}
		create(t, c,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "captf-test-metrics-reader"},
				Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "captf-test-metrics-reader"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "captf-test-metrics-reader"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "tenant", Name: "scraper"}}},
		)
		token := serviceAccountToken(t, c, "tenant", "scraper")
		var body string
		envtest.Eventually(t, 60*time.Second, "200 with /metrics access", func() (bool, string) {
			var code int
			code, body, err = get(url, token)
			return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
		})
		for _, m := range []string{"captf_build_info{", "captf_jobs_active{", "controller_runtime_reconcile_total{controller=\"terraformclusteridentity\""} {
			if !strings.Contains(body, m) {
				t.Errorf("/metrics lacks %s", m)
			}
		}
		if code, _, _ := get("https://"+o.DiagnosticsAddress+"/debug/pprof/", token); code != http.StatusForbidden {
			t.Errorf("/debug/pprof/ with /metrics-only access: %d, want 403", code)
		}
	})
}

// TestManagerNamespaceAndInsecureDiagnostics: --namespace restricts the
// caches; --insecure-diagnostics serves plain HTTP without authentication.
func TestManagerNamespaceAndInsecureDiagnostics(t *testing.T) {
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, ns("scoped-a"), ns("scoped-b"))
	backup := secret("scoped-a", "backup-a", map[string]string{infrav1.ManagedLabel: "true", infrav1.StateBackupLabel: "true"})
	backup.Data = map[string][]byte{state.DataKey: []byte("gzip-state-bytes")}
	runSecret := secret("scoped-a", jobs.RunSecretPrefix+"job-a", map[string]string{infrav1.ManagedLabel: "true", infrav1.OpLabel: "apply"})
	runSecret.Data = map[string][]byte{"main.tf.json": []byte("{}")}
	podSpec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "source", Image: "registry.example/module:v1", Args: []string{"apply"}}}}
	jobSpec := *podSpec.DeepCopy()
	jobSpec.Containers[0].Args = []string{"run", "--guard-deletes", "--inputs-hash=h1", "--work-dir=/work"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "scoped-a", Name: "job-a", Labels: map[string]string{infrav1.ManagedLabel: "true"}},
		Spec: batchv1.JobSpec{ActiveDeadlineSeconds: ptr.To[int64](600), Template: corev1.PodTemplateSpec{Spec: jobSpec}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "scoped-a", Name: "job-a-x7k2q", Labels: map[string]string{infrav1.ManagedLabel: "true"}}, Spec: podSpec}
	create(t, c,
		secret("scoped-a", "state-a", map[string]string{infrav1.ManagedLabel: "true"}),
		secret("scoped-b", "state-b", map[string]string{infrav1.ManagedLabel: "true"}),
		backup, runSecret, job, pod,
	)
	o := testOptions(t)
	o.Namespace = "scoped-a"
	o.InsecureDiagnostics = true
	mgr, _ := run(t, o)

	envtest.Eventually(t, 60*time.Second, "only scoped-a cached", func() (bool, string) {
		got := secretNames(t, mgr.GetCache(), client.InNamespace("scoped-a"))
		return slices.Equal(got, []string{"scoped-a/backup-a", "scoped-a/" + runSecret.Name, "scoped-a/state-a"}), strings.Join(got, ",")
	})
	// A state backup is cached without its data (its size kept)
	// (reference-facts §9; state.StripBackupData); so is a managed Secret
	// bound to no live object, marked for a live read (secretcache.go).
	cached := &corev1.Secret{}
	if err := mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(backup), cached); err != nil {
		t.Fatal(err)
	}
	if cached.Data != nil || cached.Annotations[state.CachedBytesAnnotation] != "16" {
		t.Errorf("cached backup: data %d keys, annotations %v; want no data and its size", len(cached.Data), cached.Annotations)
	}
	if err := mgr.GetCache().Get(context.Background(), client.ObjectKey{Namespace: "scoped-a", Name: "state-a"}, cached); err != nil || len(cached.Data) != 0 || !state.DataDropped(cached) {
		t.Errorf("a managed Secret bound to no object: %v, data %d keys, annotations %v; want no data and the dropped mark", err, len(cached.Data), cached.Annotations)
	}
	// A per-run Secret is cached without its inputs, a Job without its pod
	// template, a pod without its spec (jobs.ForCache and the like).
	if err := mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(runSecret), cached); err != nil || cached.Data != nil || cached.Labels[infrav1.OpLabel] != "apply" {
		t.Errorf("cached per-run Secret: %v, data %d keys, labels %v; want its labels and no data", err, len(cached.Data), cached.Labels)
	}
	envtest.Eventually(t, 60*time.Second, "the Job and pod cached", func() (bool, string) {
		cj, cp := &batchv1.Job{}, &corev1.Pod{}
		errJ := mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(job), cj)
		errP := mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(pod), cp)
		return errJ == nil && errP == nil, fmt.Sprint(errJ, errP)
	})
	cj, cp := &batchv1.Job{}, &corev1.Pod{}
	_ = mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(job), cj)
	_ = mgr.GetCache().Get(context.Background(), client.ObjectKeyFromObject(pod), cp)
	// Of the template, only the module container's arming arguments
	// (jobs.ArmingOf) stay.
	wantTemplate := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "source", Args: []string{"--guard-deletes", "--inputs-hash=h1"}}}}}
	if !equality.Semantic.DeepEqual(cj.Spec.Template, wantTemplate) || cj.ManagedFields != nil || ptr.Deref(cj.Spec.ActiveDeadlineSeconds, 0) != 600 {
		t.Errorf("cached Job: template %+v, managed fields %v, deadline %v; want only the arming arguments, none and 600", cj.Spec.Template, cj.ManagedFields != nil, cj.Spec.ActiveDeadlineSeconds)
	}
	if len(cp.Spec.Containers) != 0 || cp.ManagedFields != nil || cp.Labels[infrav1.ManagedLabel] != "true" {
		t.Errorf("cached pod: %d containers, managed fields %v, labels %v; want its labels only", len(cp.Spec.Containers), cp.ManagedFields != nil, cp.Labels)
	}
	if err := mgr.GetCache().List(context.Background(), &corev1.SecretList{}, client.InNamespace("scoped-b")); err == nil {
		t.Errorf("a namespace outside --namespace was readable from the cache")
	}
	envtest.Eventually(t, 60*time.Second, "plain /metrics", func() (bool, string) {
		code, body, err := get("http://"+o.DiagnosticsAddress+"/metrics", "")
		return err == nil && code == http.StatusOK && strings.Contains(body, "captf_build_info"), fmt.Sprint(code, err)
	})
}

func serviceAccountToken(t *testing.T, c client.Client, namespace, name string) string {
	t.Helper()
	create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestManagerCommandAgainstAKubeconfig runs the manager command line as a
// process would (--kubeconfig, text logs, insecure diagnostics) until
// SIGTERM, which stops it cleanly.
func TestManagerCommandAgainstAKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	health, diag := freeAddr(t), freeAddr(t)
	var out lockedBuffer
	c := child("TestManagerCommandAgainstAKubeconfig", []string{ManagerImageEnv + "=" + image},
		"--kubeconfig="+kubeconfig, "--health-addr="+health, "--diagnostics-address="+diag,
		"--insecure-diagnostics", "--webhook-port=0", "--logging-format=json")
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	t.Cleanup(func() { _ = c.Process.Kill() })
	envtest.Eventually(t, 60*time.Second, "/readyz", func() (bool, string) {
		code, _, err := get("http://"+health+"/readyz", "")
		return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
	})
	envtest.Eventually(t, 60*time.Second, "/metrics", func() (bool, string) {
		code, body, err := get("http://"+diag+"/metrics", "")
		return err == nil && code == http.StatusOK && strings.Contains(body, "captf_build_info"), fmt.Sprint(code, err)
	})
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the manager did not stop on SIGTERM\n%s", out.String())
	}
	log := out.String()
	for _, want := range []string{`"msg":"Starting the manager"`, `FLAG: --kubeconfig=`, "RESULT: <nil>"} {
		if !strings.Contains(log, want) {
			t.Errorf("output lacks %s:\n%s", want, log)
		}
	}
}

func writeKubeconfig(path string, c *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
