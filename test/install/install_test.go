package install_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/certmanager"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/clusterctl"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

const (
	version = "v0.1.0"
	// upgrade is the patch release of the same series the installation is
	// upgraded to.
	upgrade   = "v0.1.1"
	namespace = "captf-system"
	// The names config/ gives CAPTF's components.
	deployment    = "captf-controller-manager"
	service       = "captf-webhook-service"
	webhookConfig = "captf-validating-webhook-configuration"
	certificate   = "captf-serving-cert"
	certSecret    = "captf-webhook-service-cert"
	webhookPort   = 9443
	// The Quick Start's.
	tenant      = "team-a"
	clusterName = "my-cluster"
	identity    = "aws-prod"
	k8sVersion  = "v1.36.3"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestClusterctlInit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step := func(format string, args ...any) {
		t.Logf("[%6.1fs] %s", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	rel := buildRelease(ctx, t, root, version)
	step("release built in %s", rel)

	e := env.ForTest(t, env.Options{CAPI: true, Kubelet: true, Registry: true, PodNetwork: true})
	step("environment up: API server on %s:%d", e.APIServerHost, e.APIServerPort)
	// The environment's client with CAPTF's kinds.
	scheme := capi.Scheme()
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	managerRef := pushManager(ctx, t, e, rel, version)
	noop := pushNoop(ctx, t, e, rel)
	if _, err := certmanager.PushImages(ctx, e.PushImage); err != nil {
		t.Fatal(err)
	}
	step("images pushed: manager %s", managerRef)

	manifest, err := certmanager.ReleaseManifest()
	if err != nil {
		t.Fatal(err)
	}
	capiVersion, err := capi.ModuleVersion()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterctl.Write(clusterctl.Options{
		Dir:         t.TempDir(),
		Terraform:   clusterctl.Release{Dir: rel, Version: version},
		CAPIVersion: capiVersion,
		CertManager: clusterctl.CertManager{Manifest: manifest, Version: certmanager.Version},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The air-gapped install of the Installation page: its configuration,
	// with every image from the mirror.
	page := readPage(t, root)
	page.applyConfig(t, cfg, e.Registry)
	if err := clusterctl.InstallInventory(ctx, e.KubeconfigPath, clusterctl.CAPIInventory(capiVersion)); err != nil {
		t.Fatal(err)
	}
	u := newUser(t, cfg.Path, e.KubeconfigPath)
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, e)
		}
	})

	// clusterctl init: cert-manager, then CAPTF, waiting for both.
	page.has(t, "clusterctl init --infrastructure terraform:"+version)
	u.run(ctx, "clusterctl init --infrastructure terraform:"+version+" --wait-providers --wait-provider-timeout 600")
	step("clusterctl init done")
	u.run(ctx, "timeout 300 "+page.has(t, "kubectl -n captf-system rollout status deployment/captf-controller-manager"))
	if out := u.run(ctx, page.has(t, "kubectl get providers.clusterctl.cluster.x-k8s.io -A")); !strings.Contains(out, "infrastructure-terraform") {
		t.Errorf("clusterctl's inventory does not list infrastructure-terraform")
	}

	var dep appsv1.Deployment
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, &dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != managerRef {
		t.Fatalf("the manager Deployment runs %s, want the release's image from the mirror, %s", got, managerRef)
	}

	// Two replicas, as the page scales it.
	u.run(ctx, page.has(t, "kubectl -n captf-system scale deployment/captf-controller-manager --replicas=2"))
	pods := waitManagers(ctx, t, e, 2, nil)
	step("two manager pods ready: %s", podList(pods))
	for _, p := range pods {
		if p.Spec.Containers[0].Image != managerRef {
			t.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
		}
	}
	leader := waitLeader(ctx, t, e, pods, "")
	step("leader: %s", leader)

	// The serving certificate: issued by cert-manager, its CA injected by
	// the cainjector, and served by both replicas.
	ca := waitInjectedCA(ctx, t, e)
	for _, p := range pods {
		if err := checkServing(ctx, p.Status.PodIP, ca); err != nil {
			t.Errorf("manager pod %s: %v", p.Name, err)
		}
	}
	waitEndpoints(ctx, t, e, podIPs(pods))
	// The page's check that admission answers: the dry run is admitted,
	// which under the webhook's failurePolicy Fail takes its answer.
	check := page.block(t, "kubectl apply --dry-run=server")
	if out, err := u.try(ctx, check); err != nil || !strings.Contains(out, "created (server dry run)") {
		t.Errorf("the Installation page's admission check: %v, want the object admitted in a dry run", err)
	}
	step("webhooks served by both replicas with cert-manager's certificate")

	// The Quick Start, as the Installation page says: an identity, then
	// the default flavor.
	u.run(ctx, "kubectl create namespace "+tenant)
	u.run(ctx, fmt.Sprintf("TERRAFORM_IDENTITY_NAME=%s NAMESPACE=%s clusterctl generate yaml --from %s | kubectl apply -f -",
		identity, tenant, filepath.Join(rel, "identity.yaml")))
	u.run(ctx, fmt.Sprintf("TERRAFORM_IDENTITY_NAME=%s TERRAFORM_CLUSTER_IMAGE=%s TERRAFORM_MACHINE_IMAGE=%s "+
		"clusterctl generate cluster %s --infrastructure terraform:%s --target-namespace %s --kubernetes-version %s "+
		"--control-plane-machine-count 1 --worker-machine-count 0 | kubectl apply -f -",
		identity, noop["cluster"], noop["machine"], clusterName, version, tenant, k8sVersion))
	step("Quick Start applied")

	// Admission through the Service, checked all along from here.
	adm := startAdmissionProbe(ctx, t, e.Client)

	// The leader is deleted while the first Job runs.
	waitFirstJob(ctx, t, e)
	step("first Job running; deleting the leader %s", leader)
	if err := e.Clientset.CoreV1().Pods(namespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The surviving replica or the Deployment's new pod takes the lease,
	// whichever asks first once the deleted leader has released it.
	step("the lease moved to %s", waitLeader(ctx, t, e, nil, leader))

	q := framework.QuickStart{Client: e.Client, Namespace: tenant, Cluster: clusterName}
	rows, ok := q.Watch(ctx, logWriter{t}, 10*time.Minute)
	var table strings.Builder
	framework.Table(&table, rows)
	t.Log("\n" + table.String())
	if !ok {
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start did not converge: %s", why)
	}
	step("Quick Start converged")
	// One apply Job per object, though its first leader died during it.
	for _, r := range rows {
		if r.Kind != "TerraformCluster" && r.Kind != "TerraformMachine" {
			continue
		}
		if len(r.Jobs) != 1 || !strings.HasSuffix(r.Jobs[0], "(succeeded)") {
			t.Errorf("%s %s ran Jobs %v, want one that succeeded", r.Kind, r.Name, r.Jobs)
		}
	}
	pods = waitManagers(ctx, t, e, 2, []string{leader})
	step("the Deployment replaced the deleted pod: %s", podList(pods))
	answered, failed, gap := adm.stop()
	t.Logf("admission during the takeover: %d calls answered by the webhook, %d not, longest stretch without an answer %s",
		answered, len(failed), gap.Round(time.Millisecond))
	if answered == 0 || gap > 15*time.Second {
		t.Errorf("admission stopped answering for %s (failures: %v)", gap, failed)
	}

	// clusterctl describe cluster shows CAPTF's objects.
	out := u.run(ctx, "clusterctl describe cluster "+clusterName+" -n "+tenant+" --color=false")
	for _, want := range []string{"TerraformCluster " + tenant + "/" + clusterName, "Machine " + tenant + "/" + clusterName + "-control-plane-"} {
		if !strings.Contains(out, want) {
			t.Errorf("clusterctl describe cluster shows no %s:\n%s", want, out)
		}
	}

	// Upgrading, as the page says, to a patch release published beside the
	// first in the local repository: the new manager runs from its image
	// and takes the lease, and the objects stay as they are.
	rel2 := buildRelease(ctx, t, root, upgrade)
	upgradedRef := pushManager(ctx, t, e, rel2, upgrade)
	if err := clusterctl.CopyFiles(rel2, filepath.Join(cfg.RepositoryDir, "infrastructure-terraform", upgrade)); err != nil {
		t.Fatal(err)
	}
	jobs := jobNames(ctx, t, e)
	old := podNames(waitManagers(ctx, t, e, 2, []string{leader}))
	u.run(ctx, page.has(t, "clusterctl upgrade apply --infrastructure captf-system/terraform:"+upgrade))
	upgraded := waitManagers(ctx, t, e, 1, old)
	if got := upgraded[0].Spec.Containers[0].Image; got != upgradedRef {
		t.Errorf("after the upgrade the manager runs %s, want %s", got, upgradedRef)
	}
	step("upgraded: %s leads", waitLeader(ctx, t, e, upgraded, ""))
	if rows, err := q.Rows(ctx); err != nil {
		t.Fatal(err)
	} else if ok, why := framework.Done(rows); !ok {
		t.Errorf("after the upgrade: %s", why)
	}

	// clusterctl delete --infrastructure terraform: the provider goes, the
	// clusters' objects stay.
	u.run(ctx, page.has(t, "clusterctl delete --infrastructure terraform"))
	step("clusterctl delete done")
	checkDeleted(ctx, t, e)
	// Nothing was applied again by the upgraded manager.
	if after := jobNames(ctx, t, e); !slices.Equal(after, jobs) {
		t.Errorf("Jobs before the upgrade %v, at the end %v", jobs, after)
	}
}

// buildRelease runs hack/release all for this machine's platform into a
// folder laid out as a clusterctl repository and returns the release
// folder.
func buildRelease(ctx context.Context, t *testing.T, root, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "infrastructure-terraform", version)
	platform := "linux/" + runtime.GOARCH
	// tools.Build links the command once per change of its sources (go run
	// would link it for each release).
	bin := filepath.Join(t.TempDir(), "release")
	if err := tools.Build(ctx, "./hack/release", bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "all", "--version", version, "--dir", dir,
		"--platforms", platform, "--binary-platforms", platform)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release all: %v\n%s", err, out)
	}
	return dir
}

// pushManager pushes the release's manager image (the whole index, so its
// digest stays the one the components pin) under <registry>/captf/manager
// and returns the reference clusterctl's image override makes of the
// pinned one.
func pushManager(ctx context.Context, t *testing.T, e *env.Env, rel, version string) string {
	t.Helper()
	dir := filepath.Join(rel, "images", "manager")
	_, d, err := imagebuild.LayoutEntry(dir, version)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := imagebuild.ReadIndexLayout(dir, version)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := imagebuild.PushIndex(ctx, e.ImageRef("captf/manager:"+version), idx, true)
	if err != nil {
		t.Fatal(err)
	}
	if dg.DigestStr() != d.Digest.String() {
		t.Fatalf("the registry holds the manager index as %s, the release as %s", dg.DigestStr(), d.Digest)
	}
	return e.ImageRef("captf/manager:" + version + "@" + d.Digest.String())
}

// pushNoop pushes the release's no-op images on OpenTofu under
// <registry>/captf/noop-<role> and returns their references by role.
func pushNoop(ctx context.Context, t *testing.T, e *env.Env, rel string) map[string]string {
	t.Helper()
	noop := map[string]string{}
	for _, role := range []string{"cluster", "machine"} {
		tag := version + "-opentofu"
		img, err := imagebuild.ReadLayout(filepath.Join(rel, "images", "noop-"+role), tag)
		if err != nil {
			t.Fatal(err)
		}
		if noop[role], err = e.PushImage(ctx, "captf/noop-"+role+":"+tag, img); err != nil {
			t.Fatal(err)
		}
	}
	return noop
}

// jobNames lists the Quick Start's Jobs.
func jobNames(ctx context.Context, t *testing.T, e *env.Env) []string {
	t.Helper()
	list, err := e.Clientset.BatchV1().Jobs(tenant).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// user runs commands as a user at a shell: clusterctl and kubectl (the
// pinned builds) on PATH, clusterctl's configuration where clusterctl
// looks for it (~/.config/cluster-api/clusterctl.yaml) and the
// kubeconfig in KUBECONFIG.
type user struct {
	t   *testing.T
	env []string
}

func newUser(t *testing.T, cfg, kubeconfig string) user {
	t.Helper()
	var path []string
	for _, bin := range []string{"clusterctl", "kubectl"} {
		p, err := tools.Path(bin)
		if err != nil {
			t.Fatal(err)
		}
		path = append(path, filepath.Dir(p))
	}
	home := t.TempDir()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".config", "cluster-api")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusterctl.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return user{t: t, env: append(os.Environ(),
		"PATH="+strings.Join(path, ":")+":"+os.Getenv("PATH"),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"KUBECONFIG="+kubeconfig,
		// No network: clusterctl must not ask GitHub for a newer version.
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
	)}
}

// run runs a shell line (pipes fail as a whole) and returns its output;
// the test fails if the line does.
func (u user) run(ctx context.Context, line string) string {
	u.t.Helper()
	out, err := u.try(ctx, line)
	if err != nil {
		u.t.Fatalf("%s: %v", line, err)
	}
	return out
}

// try runs a shell line and returns its output and error.
func (u user) try(ctx context.Context, line string) (string, error) {
	u.t.Helper()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
	cmd.Env = u.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	err := cmd.Run()
	u.t.Logf("$ %s  (%.1fs)\n%s", line, time.Since(begin).Seconds(), out.String())
	return out.String(), err
}

// installPage is the Installation page of the users' book, whose commands
// and configuration the test follows, so that the page stays true.
type installPage struct {
	text   string
	blocks []string
}

func readPage(t *testing.T, root string) installPage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "book", "operator-guide", "installation.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := installPage{text: string(b)}
	var cur []string
	in := false
	for _, line := range strings.Split(p.text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") && !in:
			in, cur = true, nil
		case trimmed == "```" && in:
			in = false
			p.blocks = append(p.blocks, strings.Join(cur, "\n"))
		case in:
			// Blocks inside list items are indented by three spaces.
			cur = append(cur, strings.TrimPrefix(line, "   "))
		}
	}
	return p
}

// has returns line, failing the test unless a code block of the page
// holds it.
func (p installPage) has(t *testing.T, line string) string {
	t.Helper()
	for _, b := range p.blocks {
		for _, l := range strings.Split(b, "\n") {
			if strings.TrimSpace(l) == line || strings.HasPrefix(strings.TrimSpace(l), line+" ") {
				return line
			}
		}
	}
	t.Fatalf("the Installation page no longer says %q", line)
	return ""
}

// block returns the first code block of the page that starts with prefix.
func (p installPage) block(t *testing.T, prefix string) string {
	t.Helper()
	for _, b := range p.blocks {
		if strings.HasPrefix(strings.TrimSpace(b), prefix) {
			return b
		}
	}
	t.Fatalf("the Installation page has no block starting %q", prefix)
	return ""
}

// applyConfig puts the page's configuration for an install without
// internet access into the written clusterctl configuration, with the
// page's folder (/srv/captf) and registry (registry.internal) replaced by
// the local repository and the loopback registry: the keys the page gives
// (the terraform provider, cert-manager, images) are the page's.
func (p installPage) applyConfig(t *testing.T, cfg *clusterctl.Config, registry string) {
	t.Helper()
	var snippet string
	for _, b := range p.blocks {
		if strings.HasPrefix(b, "providers:") && strings.Contains(b, "images:") {
			snippet = b
		}
	}
	if snippet == "" {
		t.Fatal("the Installation page has no clusterctl configuration with images")
	}
	snippet = strings.NewReplacer("/srv/captf", cfg.RepositoryDir, "registry.internal", registry).Replace(snippet)
	var page, written map[string]any
	b, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(snippet), &page); err != nil {
		t.Fatalf("the Installation page's configuration: %v", err)
	}
	if err := yaml.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	for k, v := range page {
		if k != "providers" {
			written[k] = v
			continue
		}
		// The page names terraform only; Cluster API's stay as written.
		list, _ := written[k].([]any)
		list = slices.DeleteFunc(list, func(e any) bool { m, _ := e.(map[string]any); return m["name"] == clusterctl.ProviderName })
		written[k] = append(list, v.([]any)...)
	}
	out, err := yaml.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitManagers waits for n Ready manager pods, none of them named in
// gone, and returns them.
func waitManagers(ctx context.Context, t *testing.T, e *env.Env, n int, gone []string) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	detail, ok := framework.WaitFor(ctx, 5*time.Minute, func() (bool, string) {
		list, err := e.Clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		if err != nil {
			return false, err.Error()
		}
		ready = ready[:0]
		var states []string
		for _, p := range list.Items {
			states = append(states, p.Name+" "+string(p.Status.Phase)+" ready="+fmt.Sprint(podReady(&p)))
			if podReady(&p) && p.DeletionTimestamp == nil && !slices.Contains(gone, p.Name) {
				ready = append(ready, p)
			}
		}
		return len(ready) == n && len(list.Items) == n, strings.Join(states, "; ")
	})
	if !ok {
		t.Fatalf("want %d Ready manager pods: %s", n, detail)
	}
	return slices.Clone(ready)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podList(pods []corev1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name+" ("+p.Status.PodIP+")")
	}
	return strings.Join(s, ", ")
}

func podIPs(pods []corev1.Pod) []string {
	var ips []string
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	return ips
}

// waitLeader waits until the controllers' Lease is held by a pod other
// than not (and, when among is given, by one of those) and returns it.
func waitLeader(ctx context.Context, t *testing.T, e *env.Env, among []corev1.Pod, not string) string {
	t.Helper()
	var holder string
	detail, ok := framework.WaitFor(ctx, 3*time.Minute, func() (bool, string) {
		var l coordinationv1.Lease
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: setup.LeaderElectionID}, &l); err != nil {
			return false, err.Error()
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, "no holder"
		}
		// controller-runtime's identity is <hostname>_<uuid>; a pod's
		// hostname is its name.
		holder, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_")
		if holder == not {
			return false, "still held by " + not
		}
		if among != nil && !slices.ContainsFunc(among, func(p corev1.Pod) bool { return p.Name == holder }) {
			return false, "held by " + holder + ", not a manager pod"
		}
		return true, ""
	})
	if !ok {
		t.Fatalf("the lease %s/%s: %s", namespace, setup.LeaderElectionID, detail)
	}
	return holder
}

// waitInjectedCA waits for cert-manager to issue the serving certificate
// and for the cainjector to put its CA into every webhook of the
// configuration, and returns that CA.
func waitInjectedCA(ctx context.Context, t *testing.T, e *env.Env) []byte {
	t.Helper()
	var ca []byte
	detail, ok := framework.WaitFor(ctx, 3*time.Minute, func() (bool, string) {
		cert := &unstructured.Unstructured{}
		cert.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: certificate}, cert); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
		issued := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "True" {
				issued = true
			}
		}
		if !issued {
			return false, "the Certificate is not Ready"
		}
		var s corev1.Secret
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: certSecret}, &s); err != nil {
			return false, err.Error()
		}
		if s.Annotations["cert-manager.io/certificate-name"] != certificate {
			return false, "the Secret was not written by cert-manager"
		}
		ca = s.Data["ca.crt"]
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := e.Client.Get(ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
			return false, err.Error()
		}
		for _, w := range vwc.Webhooks {
			if len(ca) == 0 || !bytes.Equal(w.ClientConfig.CABundle, ca) {
				return false, "webhook " + w.Name + " has not the Certificate's CA"
			}
		}
		return true, ""
	})
	if !ok {
		t.Fatalf("the webhooks' serving certificate: %s", detail)
	}
	return ca
}

// checkServing dials a manager pod's webhook port as the API server does:
// TLS to the Service's name, trusting only ca.
func checkServing(ctx context.Context, ip string, ca []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("no CA certificate")
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: service + "." + namespace + ".svc", MinVersion: tls.VersionTLS12}}
	var err error
	for range 30 {
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", net.JoinHostPort(ip, fmt.Sprint(webhookPort))); err == nil {
			return c.Close()
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("webhook port: %w", err)
}

// waitEndpoints waits until the webhook Service's EndpointSlices list
// exactly ips, each ready.
func waitEndpoints(ctx context.Context, t *testing.T, e *env.Env, ips []string) {
	t.Helper()
	detail, ok := framework.WaitFor(ctx, 2*time.Minute, func() (bool, string) {
		var slices_ discoveryv1.EndpointSliceList
		if err := e.Client.List(ctx, &slices_, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range slices_.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					got = append(got, ep.Addresses...)
				}
			}
		}
		slices.Sort(got)
		return slices.Equal(got, ips), fmt.Sprintf("ready endpoints %v, want %v", got, ips)
	})
	if !ok {
		t.Fatalf("the Service %s: %s", service, detail)
	}
}

// waitFirstJob waits for a Job of the Quick Start that has not finished.
func waitFirstJob(ctx context.Context, t *testing.T, e *env.Env) {
	t.Helper()
	detail, ok := framework.WaitFor(ctx, 5*time.Minute, func() (bool, string) {
		list, err := e.Clientset.BatchV1().Jobs(tenant).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, j := range list.Items {
			if j.Status.Succeeded == 0 && j.Status.Failed == 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Jobs, none running", len(list.Items))
	})
	if !ok {
		t.Fatalf("no Job started: %s", detail)
	}
}

// admissionProbe asks the API server, twice a second, to create (dry run)
// a TerraformCluster whose image is no image reference: only CAPTF's
// webhook denies it, so each denial naming the image is an answer of a
// manager replica reached through the Service.
type admissionProbe struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	answered int
	failed   []string
	gap      time.Duration
}

func startAdmissionProbe(ctx context.Context, t *testing.T, c client.Client) *admissionProbe {
	t.Helper()
	// The Quick Start's TerraformCluster, valid to the schema, but for
	// its image.
	var qs infrav1.TerraformCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: clusterName}, &qs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &admissionProbe{cancel: cancel}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		last := time.Now()
		for ctx.Err() == nil {
			tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "admission-probe"}, Spec: *qs.Spec.DeepCopy()}
			tc.Spec.Source.Image = "Not An Image!"
			err := c.Create(ctx, tc, client.DryRunAll)
			switch {
			case ctx.Err() != nil:
			case err != nil && strings.Contains(err.Error(), "denied the request") && strings.Contains(err.Error(), "not a valid image reference"):
				a.answered++
				last = time.Now()
			default:
				a.failed = append(a.failed, fmt.Sprint(err))
			}
			a.gap = max(a.gap, time.Since(last))
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return a
}

func (a *admissionProbe) stop() (int, []string, time.Duration) {
	a.cancel()
	a.wg.Wait()
	return a.answered, a.failed, a.gap
}

// checkDeleted checks what clusterctl delete --infrastructure terraform
// promises: the provider's components and inventory entry are gone, its
// CRDs and namespace and every object of its kinds stay.
func checkDeleted(ctx context.Context, t *testing.T, e *env.Env) {
	t.Helper()
	detail, ok := framework.WaitFor(ctx, 2*time.Minute, func() (bool, string) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("the Deployment: %v", err)
		}
		err = e.Client.Get(ctx, client.ObjectKey{Name: webhookConfig}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("the webhook configuration: %v", err)
		}
		return true, ""
	})
	if !ok {
		t.Errorf("after clusterctl delete: %s", detail)
	}
	inv := &unstructured.UnstructuredList{}
	inv.SetGroupVersionKind(clusterctlv1.GroupVersion.WithKind("ProviderList"))
	if err := e.Client.List(ctx, inv); err != nil {
		t.Fatal(err)
	}
	for _, p := range inv.Items {
		if p.GetName() == "infrastructure-terraform" {
			t.Errorf("the inventory still lists %s/%s", p.GetNamespace(), p.GetName())
		}
	}
	var ns corev1.Namespace
	if err := e.Client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		t.Errorf("the namespace %s: %v", namespace, err)
	}
	var tcs infrav1.TerraformClusterList
	var tms infrav1.TerraformMachineList
	if err := errors.Join(e.Client.List(ctx, &tcs, client.InNamespace(tenant)), e.Client.List(ctx, &tms, client.InNamespace(tenant))); err != nil {
		t.Fatalf("CAPTF's kinds after delete: %v", err)
	}
	if len(tcs.Items) != 1 || len(tms.Items) != 1 {
		t.Errorf("after delete: %d TerraformClusters and %d TerraformMachines, want the Quick Start's 1 and 1", len(tcs.Items), len(tms.Items))
	}
	var secrets corev1.SecretList
	if err := e.Client.List(ctx, &secrets, client.InNamespace(tenant)); err != nil {
		t.Fatal(err)
	}
	state := 0
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, "tfstate-") {
			state++
		}
	}
	if state < 2 {
		t.Errorf("after delete: %d state Secrets in %s, want the cluster's and the machine's", state, tenant)
	}
}

func dumpPods(t *testing.T, e *env.Env) {
	for _, ns := range []string{namespace, certmanager.Namespace, tenant} {
		list, err := e.Clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, p := range list.Items {
			for _, c := range p.Spec.Containers {
				logs, _ := e.Logs(ns, p.Name, c.Name)
				if len(logs) > 4000 {
					logs = logs[len(logs)-4000:]
				}
				t.Logf("%s/%s %s (%s):\n%s", ns, p.Name, c.Name, p.Status.Phase, logs)
			}
		}
	}
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
