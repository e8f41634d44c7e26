package config_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

const (
	managerSA    = "system:serviceaccount:captf-system:captf-controller-manager"
	releaseImage = "registry.example/captf/manager:v0.1.0"
	// devImageName is the manager image config/manager names; a release
	// replaces it.
	devImageName = "ghcr.io/captf-io/cluster-api-provider-terraform/manager"
)

var (
	cfg    *rest.Config
	root   string
	scheme = setup.NewScheme()
)

func TestMain(m *testing.M) {
	var err error
	if root, err = tools.RepoRoot(); err != nil {
		panic(err)
	}
	_ = apiextensionsv1.AddToScheme(scheme)
	// CAPTF's CRDs come from the rendered manifests; Cluster API's core CRDs
	// are installed for the workload controllers' watches.
	sets, err := capi.CRDs()
	if err != nil {
		panic(err)
	}
	env, c, err := envtest.Start(sets[0].Path)
	if err != nil {
		panic(err)
	}
	cfg = c
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// rendered keeps kustomize's output for the checkout's own folders, which
// several tests render (config/default four times): one kustomize process
// per folder and run. Each caller decodes fresh objects from the bytes.
var rendered sync.Map

// render runs kustomize build on dir.
func render(t *testing.T, dir string) []byte {
	t.Helper()
	if rel, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(rel) {
		if out, ok := rendered.Load(dir); ok {
			return out.([]byte)
		}
		out := renderUncached(t, dir)
		rendered.Store(dir, out)
		return out
	}
	return renderUncached(t, dir)
}

func renderUncached(t *testing.T, dir string) []byte {
	t.Helper()
	k, err := tools.Path("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(k, "build", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	return out
}

// renderRelease renders what make manifests-release renders: a copy of
// config/ with the manager image set, built from default.
func renderRelease(t *testing.T, image string) []byte {
	t.Helper()
	k, err := tools.Path("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "config"))); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(k, "edit", "set", "image", devImageName+"="+image)
	cmd.Dir = filepath.Join(dir, "default")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kustomize edit set image: %v\n%s", err, out)
	}
	return render(t, filepath.Join(dir, "default"))
}

func decode(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if err == io.EOF {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

func key(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return u.GetKind() + " " + ns + "/" + u.GetName()
	}
	return u.GetKind() + " " + u.GetName()
}

// sameKeys reports whether got lists the objects of want, failing t when not.
func sameKeys(t *testing.T, what string, got, want []string) bool {
	t.Helper()
	if slices.Equal(got, want) {
		return true
	}
	t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	return false
}

// labelledKeys returns the sorted keys of objs, checking that each carries
// the provider label clusterctl selects on.
func labelledKeys(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var keys []string
	for _, u := range objs {
		keys = append(keys, key(u))
		if u.GetLabels()[infrav1.ProviderLabel] != "infrastructure-terraform" {
			t.Errorf("%s lacks the %s label", key(u), infrav1.ProviderLabel)
		}
	}
	slices.Sort(keys)
	return keys
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no Deployment rendered")
	return nil
}

// TestDefaultRendersTheComponents checks config/default against
// reference-facts §4 and §10.
func TestDefaultRendersTheComponents(t *testing.T) {
	objs := decode(t, render(t, filepath.Join(root, "config", "default")))
	got := labelledKeys(t, objs)
	want := []string{
		"Certificate captf-system/captf-serving-cert",
		"ClusterRole captf-autoscaler-reader",
		"ClusterRole captf-manager-role",
		"ClusterRole captf-runner",
		"ClusterRoleBinding captf-manager-rolebinding",
		"CustomResourceDefinition terraformclusteridentities.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformclusters.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformclustertemplates.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformmachinepools.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformmachinepooltemplates.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformmachines.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformmachinetemplates.infrastructure.cluster.x-k8s.io",
		"CustomResourceDefinition terraformplans.infrastructure.cluster.x-k8s.io",
		"Deployment captf-system/captf-controller-manager",
		"Issuer captf-system/captf-selfsigned-issuer",
		"Namespace captf-system",
		"Role captf-system/captf-leader-election-role",
		"RoleBinding captf-system/captf-leader-election-rolebinding",
		"Service captf-system/captf-webhook-service",
		"ServiceAccount captf-system/captf-controller-manager",
		"ValidatingWebhookConfiguration captf-validating-webhook-configuration",
	}
	sameKeys(t, "rendered objects", got, want)

	d := deployment(t, objs)
	if *d.Spec.Replicas != 1 || d.Spec.Template.Labels["control-plane"] != "controller-manager" ||
		d.Spec.Template.Spec.ServiceAccountName != "captf-controller-manager" {
		t.Errorf("Deployment shape: replicas %d, labels %v, service account %s", *d.Spec.Replicas, d.Spec.Template.Labels, d.Spec.Template.Spec.ServiceAccountName)
	}
	if psc := d.Spec.Template.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("the manager pod is not non-root: %+v", psc)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "manager" {
		t.Errorf("container %q, want manager", c.Name)
	}
	if want := []string{"--leader-elect", "--diagnostics-address=:8443", "--insecure-diagnostics=false", "--webhook-port=9443"}; !slices.Equal(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
	// The args must parse with the manager's own flags.
	cmd := setup.Command()
	if err := cmd.ParseFlags(c.Args); err != nil {
		t.Errorf("the manager refuses its shipped args: %v", err)
	}
	// The manager finds its own image (the runner image) through its Pod,
	// so the Deployment names the Pod and sets no image twice.
	for name, field := range map[string]string{setup.PodNameEnv: "metadata.name", setup.PodNamespaceEnv: "metadata.namespace"} {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != field {
			t.Errorf("the manager's %s is not the downward API's %s", name, field)
		}
	}
	if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == setup.ManagerImageEnv }) {
		t.Errorf("the Deployment sets %s: an image override at install would not reach it, and the Jobs would pull another image than the manager's", setup.ManagerImageEnv)
	}
}

// TestCRDsCarryWhatClusterctlMoveReads checks the labels clusterctl reads
// on CAPTF's CRDs (Templates and ClusterClass, move; reference-facts §7):
// the provider label, the contract label, and move-hierarchy on
// TerraformClusterIdentity alone, so clusterctl move carries an identity
// with the objects that reference it. (clusterctl init adds its own
// clusterctl.cluster.x-k8s.io label to every component it installs.)
func TestCRDsCarryWhatClusterctlMoveReads(t *testing.T) {
	crds := decode(t, render(t, filepath.Join(root, "config", "crd")))
	if len(crds) != captfCRDs {
		t.Fatalf("%d CRDs rendered, want %d", len(crds), captfCRDs)
	}
	for _, u := range crds {
		l := u.GetLabels()
		if l[infrav1.ProviderLabel] != "infrastructure-terraform" || l["cluster.x-k8s.io/v1beta2"] != infrav1.GroupVersion.Version {
			t.Errorf("%s: labels %v lack the provider or contract label", u.GetName(), l)
		}
		_, hierarchy := l[infrav1.MoveHierarchyLabel]
		if want := u.GetName() == "terraformclusteridentities."+infrav1.GroupVersion.Group; hierarchy != want {
			t.Errorf("%s: %s present %v, want %v", u.GetName(), infrav1.MoveHierarchyLabel, hierarchy, want)
		}
	}
}

// shortNames are the short name each CAPTF kind declares (Operator
// Guide, kubectl plugin): kubectl get tc,tm -A works, and the plugin
// accepts the same spellings.
var shortNames = map[string]string{
	"TerraformCluster":             "tc",
	"TerraformClusterTemplate":     "tct",
	"TerraformMachine":             "tm",
	"TerraformMachineTemplate":     "tmt",
	"TerraformMachinePool":         "tmp",
	"TerraformMachinePoolTemplate": "tmpt",
	"TerraformClusterIdentity":     "tfci",
	"TerraformPlan":                "tfplan",
}

// TestCRDsFollowKubectlConventions checks every CRD as shipped declares its
// short name and both categories: cluster-api (kubectl get cluster-api,
// Cluster API's convention) and captf (kubectl get captf lists CAPTF's
// objects alone).
func TestCRDsFollowKubectlConventions(t *testing.T) {
	crds := decode(t, render(t, filepath.Join(root, "config", "crd")))
	for _, u := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			t.Fatal(err)
		}
		names := crd.Spec.Names
		want, ok := shortNames[names.Kind]
		if !ok {
			t.Errorf("%s: kind %s has no short name to check: add it here and to its kubebuilder:resource marker", crd.Name, names.Kind)
			continue
		}
		if !slices.Equal(names.ShortNames, []string{want}) {
			t.Errorf("%s: short names %v, want [%s]", crd.Name, names.ShortNames, want)
		}
		for _, c := range []string{"cluster-api", "captf"} {
			if !slices.Contains(names.Categories, c) {
				t.Errorf("%s: categories %v lack %s", crd.Name, names.Categories, c)
			}
		}
	}
}

// TestReleaseManifests: make manifests-release substitutes the image in the
// manager container; metadata.yaml maps the release series to contract
// v1beta2.
func TestReleaseManifests(t *testing.T) {
	out := renderRelease(t, releaseImage)
	c := deployment(t, decode(t, out)).Spec.Template.Spec.Containers[0]
	if c.Image != releaseImage {
		t.Errorf("image %q, want %q", c.Image, releaseImage)
	}
	if bytes.Contains(out, []byte(devImageName+":dev")) {
		t.Errorf("the development image is left in the release manifests")
	}
	if bytes.Contains(out, []byte("${")) {
		t.Errorf("the release manifests hold a clusterctl variable; none is defined")
	}

	b, err := os.ReadFile(filepath.Join(root, "config", "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clusterctlReads(t, out, b)
	var md struct {
		APIVersion    string `json:"apiVersion"`
		Kind          string `json:"kind"`
		ReleaseSeries []struct {
			Major, Minor int
			Contract     string
		} `json:"releaseSeries"`
	}
	if err := yaml.UnmarshalStrict(b, &md); err != nil {
		t.Fatal(err)
	}
	if md.APIVersion != "clusterctl.cluster.x-k8s.io/v1alpha3" || md.Kind != "Metadata" || len(md.ReleaseSeries) == 0 {
		t.Fatalf("metadata %+v", md)
	}
	for _, r := range md.ReleaseSeries {
		if r.Contract != "v1beta2" {
			t.Errorf("release series %d.%d has contract %q, want v1beta2", r.Major, r.Minor, r.Contract)
		}
	}
}

// clusterctlReads has clusterctl read the two release files from a local
// repository, as `clusterctl init --infrastructure terraform` would.
func clusterctlReads(t *testing.T, components, metadata []byte) {
	t.Helper()
	cc, err := tools.Path("clusterctl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	release := filepath.Join(dir, "infrastructure-terraform", "v0.1.0")
	if err := os.MkdirAll(release, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"infrastructure-components.yaml": components, "metadata.yaml": metadata} {
		if err := os.WriteFile(filepath.Join(release, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(conf, []byte("providers:\n- name: terraform\n  type: InfrastructureProvider\n  url: "+
		filepath.Join(release, "infrastructure-components.yaml")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cc, "generate", "provider", "--infrastructure", "terraform:v0.1.0", "--config", conf)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("clusterctl generate provider: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(out, []byte("image: "+releaseImage)) {
		t.Errorf("clusterctl's rendering lost the release image")
	}
}

// apply server-side applies the rendered objects: the CRDs and the
// Namespace first, waiting until the CRDs are served.
func apply(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	first := func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "CustomResourceDefinition" || u.GetKind() == "Namespace"
	}
	for _, pass := range []bool{true, false} {
		for _, u := range objs {
			if first(u) != pass || servedOnly(u) {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("captf-config-test"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s: %v", key(u), err)
			}
		}
		if pass {
			waitForCRDs(t, c)
		}
	}
}

// servedOnly are the objects the test API server cannot take: cert-manager's
// kinds (no cert-manager there) and the webhook configuration, whose Service
// has no manager behind it (failurePolicy Fail would refuse every write).
// TestWebhookConfiguration checks them as rendered.
func servedOnly(u *unstructured.Unstructured) bool {
	switch u.GetKind() {
	case "Certificate", "Issuer", "ValidatingWebhookConfiguration":
		return true
	}
	return false
}

// captfCRDs is the number of CAPTF's CRDs: the seven kinds of Cluster API's
// contracts and TerraformPlan.
const captfCRDs = 8

func waitForCRDs(t *testing.T, c client.Client) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(context.Background(), list); err == nil {
			established := 0
			for _, crd := range list.Items {
				if crd.Spec.Group == infrav1.GroupVersion.Group {
					for _, cond := range crd.Status.Conditions {
						if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
							established++
						}
					}
				}
			}
			if established == captfCRDs {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("CAPTF's CRDs were not established within a minute")
}

var applyOnce sync.Once

// applied applies config/default once per run.
func applied(t *testing.T, c client.Client) {
	applyOnce.Do(func() { apply(t, c, decode(t, render(t, filepath.Join(root, "config", "default")))) })
}

// TestDefaultAppliesToAnAPIServer applies config/default to a real API
// server, the Deployment included (it never runs: no controllers here).
func TestDefaultAppliesToAnAPIServer(t *testing.T) {
	c := newClient(t)
	applied(t, c)
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "captf-system", Name: "captf-controller-manager"}, d); err != nil {
		t.Fatal(err)
	}
	if c := d.Spec.Template.Spec.Containers[0]; c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("the manager container may escalate privileges: %+v", c.SecurityContext)
	}
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunnerRole: what the static captf-runner ClusterRole grants a runner
// in its own namespace (reference-facts §10.2), and nothing else.
func TestRunnerRole(t *testing.T) {
	c := newClient(t)
	applied(t, c)
	create(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "runner-ns"}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "runner-ns", Name: "captf-runner"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "captf-runner"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "runner-ns", Name: "captf-runner"}},
		})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var qs []access
	for _, c := range []struct {
		ns, group, resource, verb string
		allowed                   bool
	}{
		{"runner-ns", "", "secrets", "create", true},
		{"runner-ns", "", "secrets", "list", true},
		{"runner-ns", "", "secrets", "delete", true},
		{"runner-ns", "coordination.k8s.io", "leases", "update", true},
		{"runner-ns", "events.k8s.io", "events", "create", true},
		{"runner-ns", "", "secrets", "watch", false},
		{"runner-ns", "coordination.k8s.io", "leases", "delete", false},
		{"runner-ns", "", "pods", "list", false},
		{"runner-ns", "infrastructure.cluster.x-k8s.io", "terraformclusters", "get", false},
		{"default", "", "secrets", "get", false},
	} {
		qs = append(qs, access{
			what: fmt.Sprintf("runner %s %s.%s in %s", c.verb, c.resource, c.group, c.ns),
			spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:runner-ns:captf-runner",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:runner-ns"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.ns, Group: c.group, Resource: c.resource, Verb: c.verb},
			},
			allowed: c.allowed,
		})
	}
	checkAccess(t, cs, qs)
}

// access is one question to the API server's authorizer and its expected
// answer.
type access struct {
	what    string
	spec    authorizationv1.SubjectAccessReviewSpec
	allowed bool
}

// checkAccess asks the authorizer each question as a client would after
// writing RBAC: the authorizer learns of a new binding from its own watch,
// some time after the write, so the questions whose answer is yes are asked
// until they get it (within a deadline); once every one has, the binding is
// in force and the questions whose answer is no are asked once each.
func checkAccess(t *testing.T, cs kubernetes.Interface, qs []access) {
	t.Helper()
	ask := func(q access) bool {
		res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: q.spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Status.Allowed
	}
	for _, q := range qs {
		if q.allowed {
			envtest.Eventually(t, 30*time.Second, q.what+" allowed", func() (bool, string) {
				return ask(q), "allowed false, want true"
			})
		}
	}
	for _, q := range qs {
		if !q.allowed && ask(q) {
			t.Errorf("%s: allowed true, want false", q.what)
		}
	}
}

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// TestManagerRunsWithTheShippedRBAC runs the manager in-process as its
// ServiceAccount (impersonated), with exactly the rendered RBAC: leader
// election in captf-system, every controller's caches, and the identity
// and template controllers' reads and writes.
func TestManagerRunsWithTheShippedRBAC(t *testing.T) {
	admin := newClient(t)
	applied(t, admin)
	create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}})

	asManager := rest.CopyConfig(cfg)
	asManager.Impersonate = rest.ImpersonationConfig{
		UserName: managerSA,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:captf-system", "system:authenticated"},
	}
	o := setup.DefaultOptions()
	o.RunnerImage = releaseImage
	// No webhook server: nothing routes admission to it here.
	o.WebhookPort = 0
	o.LeaderElect = true
	o.LeaderElectionNamespace = "captf-system"
	o.DiagnosticsAddress = "0"
	o.HealthAddr = "0"
	o.SyncPeriod = 2 * time.Second
	o.SkipControllerNameValidation = true
	logs := &lockedBuffer{}
	o.Logger = zap.New(zap.WriteTo(logs))
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := setup.New(ctx, asManager, o)
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
		logs.close()
		if t.Failed() {
			t.Log(logs.String())
		}
	})

	create(t, admin,
		&infrav1.TerraformClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: "rbac-check"},
			Spec:       infrav1.TerraformClusterIdentitySpec{SecretRef: infrav1.SecretReference{Name: "creds", Namespace: "tenant"}},
		},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "tenant"}, Data: map[string][]byte{"k": []byte("v")}},
	)
	tmt := &infrav1.TerraformMachineTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "rbac-check"}}
	tmt.Spec.Template.Spec.Source.Image = "127.0.0.1:1/none:v1"
	tmt.Spec.Template.Spec.Jobs = &infrav1.JobPolicy{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}}
	create(t, admin, tmt)

	envtest.Eventually(t, 60*time.Second, "the identity Ready True, read and written as the manager", func() (bool, string) {
		id := &infrav1.TerraformClusterIdentity{}
		if err := admin.Get(ctx, client.ObjectKey{Name: "rbac-check"}, id); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(id.Status.Conditions, infrav1.ReadyCondition)
		return r != nil && r.Status == metav1.ConditionTrue, fmt.Sprint(r)
	})
	envtest.Eventually(t, 60*time.Second, "the template's CapacityResolved written as the manager", func() (bool, string) {
		got := &infrav1.TerraformMachineTemplate{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(tmt), got); err != nil {
			return false, err.Error()
		}
		r := meta.FindStatusCondition(got.Status.Conditions, infrav1.CapacityResolvedCondition)
		return r != nil && r.Reason == infrav1.ImageInspectFailedReason, fmt.Sprint(r)
	})
	envtest.Eventually(t, 60*time.Second, "the leader Lease held", func() (bool, string) {
		l := &unstructured.Unstructured{}
		l.SetAPIVersion("coordination.k8s.io/v1")
		l.SetKind("Lease")
		err := admin.Get(ctx, client.ObjectKey{Namespace: "captf-system", Name: setup.LeaderElectionID}, l)
		return err == nil, fmt.Sprint(err)
	})
	if s := logs.String(); strings.Contains(s, "is forbidden") {
		t.Errorf("the manager was refused something with the shipped RBAC:\n%s", forbiddenLines(s))
	}
}

func forbiddenLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "is forbidden") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
}

// The shipped files are the ones kustomize reads: nothing under config/
// but YAML, the Grafana dashboard's JSON, these tests and doc.go.
func TestConfigHoldsOnlyManifests(t *testing.T) {
	err := filepath.WalkDir(filepath.Join(root, "config"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".go":
			return nil
		case ".json":
			if p == filepath.Join(root, "config", "prometheus", "dashboard.json") {
				return nil
			}
		}
		t.Errorf("unexpected file %s", p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// renderWithPrometheus renders config/default with the Prometheus component,
// as an operator's own kustomization would.
func renderWithPrometheus(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "config"))); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "with-prometheus")
	if err := os.MkdirAll(own, 0o755); err != nil {
		t.Fatal(err)
	}
	k := "resources:\n- ../default\ncomponents:\n- ../prometheus\n"
	if err := os.WriteFile(filepath.Join(own, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return decode(t, render(t, own))
}

// TestPrometheusComponent: config/prometheus adds the metrics Service on
// 8443 selecting the manager's pod and port, a ServiceMonitor scraping it
// over HTTPS (insecureSkipVerify), the alert rules as a PrometheusRule, the
// Grafana dashboard as a ConfigMap for Grafana's sidecar, and
// captf-metrics-reader bound to monitoring/prometheus-k8s (reference-facts
// §3), which the API server's authorizer lets get /metrics and nothing else.
func TestPrometheusComponent(t *testing.T) {
	objs := renderWithPrometheus(t)
	base := map[string]bool{}
	for _, u := range decode(t, render(t, filepath.Join(root, "config", "default"))) {
		base[key(u)] = true
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		byKey[key(u)] = u
	}
	added := slices.DeleteFunc(labelledKeys(t, objs), func(k string) bool { return base[k] })
	const (
		role    = "ClusterRole captf-metrics-reader"
		binding = "ClusterRoleBinding captf-metrics-reader"
		rule    = "PrometheusRule captf-system/captf-alerts"
		service = "Service captf-system/captf-controller-manager-metrics"
		monitor = "ServiceMonitor captf-system/captf-controller-manager-metrics"
		board   = "ConfigMap captf-system/captf-dashboard"
	)
	if !sameKeys(t, "the component adds", added, []string{role, binding, board, rule, service, monitor}) {
		t.FailNow()
	}

	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKey[service].Object, svc); err != nil {
		t.Fatal(err)
	}
	pod := deployment(t, objs).Spec.Template
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the manager's pod lacks", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 {
		t.Fatalf("metrics Service ports %+v, want one on 8443", svc.Spec.Ports)
	}
	sp := svc.Spec.Ports[0]
	var target *corev1.ContainerPort
	for i, p := range pod.Spec.Containers[0].Ports {
		if p.Name == sp.TargetPort.StrVal {
			target = &pod.Spec.Containers[0].Ports[i]
		}
	}
	if target == nil || target.ContainerPort != 8443 || !slices.Contains(pod.Spec.Containers[0].Args, "--diagnostics-address=:8443") {
		t.Errorf("the Service's targetPort %q is not the manager's diagnostics port 8443", sp.TargetPort.String())
	}

	sm := byKey[monitor]
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks", k, v)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", eps)
	}
	ep := eps[0].(map[string]any)
	skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
	if ep["port"] != sp.Name || ep["scheme"] != "https" || ep["path"] != "/metrics" || !skip || ep["bearerTokenFile"] == nil {
		t.Errorf("ServiceMonitor endpoint %v: want port %q, https, /metrics, a bearer token and insecureSkipVerify", ep, sp.Name)
	}
	dashboard, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	cm := byKey[board]
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "captf.json"); got != string(dashboard) || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the ConfigMap %s does not hold dashboard.json as captf.json with the label grafana_dashboard=1 (labels %v)", board, cm.GetLabels())
	}
	if groups, _, _ := unstructured.NestedSlice(byKey[rule].Object, "spec", "groups"); len(groups) != 1 {
		t.Errorf("the PrometheusRule has %d groups, want the one group captf", len(groups))
	}

	// The RBAC, applied to the API server and asked as Prometheus.
	c := newClient(t)
	applied(t, c)
	apply(t, c, []*unstructured.Unstructured{byKey[role], byKey[binding]})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var qs []access
	for _, q := range []struct {
		path, verb string
		allowed    bool
	}{
		{"/metrics", "get", true},
		{"/debug/pprof/profile", "get", false},
		{"/debug/flags/v", "put", false},
	} {
		qs = append(qs, access{
			what: fmt.Sprintf("Prometheus %s %s", q.verb, q.path),
			spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  "system:serviceaccount:monitoring:prometheus-k8s",
				Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:monitoring"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: q.path, Verb: q.verb},
			},
			allowed: q.allowed,
		})
	}
	checkAccess(t, cs, qs)
}

// TestWebhookConfiguration checks the rendered admission objects against
// reference-facts §10.4: one rule per kind, failurePolicy Fail, no
// namespaceSelector, status not covered, DELETE validated for
// TerraformClusterIdentity and TerraformMachine only, Service 443 → the
// manager's webhook-server port, and a cert-manager Certificate from the
// self-signed Issuer whose CA is injected into the configuration.
func TestWebhookConfiguration(t *testing.T) {
	objs := decode(t, render(t, filepath.Join(root, "config", "default")))
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		byKey[key(u)] = u
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	u := byKey["ValidatingWebhookConfiguration captf-validating-webhook-configuration"]
	if u == nil {
		t.Fatal("captf-validating-webhook-configuration is not rendered")
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vwc); err != nil {
		t.Fatal(err)
	}
	if got := vwc.Annotations["cert-manager.io/inject-ca-from"]; got != "captf-system/captf-serving-cert" {
		t.Errorf("inject-ca-from = %q", got)
	}
	kinds := map[string][]admissionregistrationv1.OperationType{}
	for _, w := range vwc.Webhooks {
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("%s: failurePolicy is not Fail", w.Name)
		}
		if w.NamespaceSelector != nil && (len(w.NamespaceSelector.MatchLabels) > 0 || len(w.NamespaceSelector.MatchExpressions) > 0) {
			t.Errorf("%s: has a namespaceSelector", w.Name)
		}
		svc := w.ClientConfig.Service
		if svc == nil || svc.Name != "captf-webhook-service" || svc.Namespace != "captf-system" || svc.Path == nil {
			t.Errorf("%s: clientConfig %+v", w.Name, w.ClientConfig)
		}
		if len(w.Rules) != 1 || len(w.Rules[0].Resources) != 1 {
			t.Fatalf("%s: want one rule for one resource, got %+v", w.Name, w.Rules)
		}
		r := w.Rules[0].Resources[0]
		if strings.Contains(r, "/") {
			t.Errorf("%s covers a subresource %s", w.Name, r)
		}
		kinds[r] = w.Rules[0].Operations
	}
	for _, r := range []string{"terraformclusters", "terraformclustertemplates", "terraformmachines", "terraformmachinetemplates",
		"terraformmachinepools", "terraformmachinepooltemplates", "terraformclusteridentities"} {
		ops, ok := kinds[r]
		if !ok {
			t.Errorf("no webhook for %s", r)
			continue
		}
		wantDelete := r == "terraformmachines" || r == "terraformclusteridentities"
		if slices.Contains(ops, admissionregistrationv1.Delete) != wantDelete {
			t.Errorf("%s: operations %v (DELETE validated: want %v)", r, ops, wantDelete)
		}
	}
	if len(kinds) != 7 {
		t.Errorf("%d webhooks, want one per kind (7)", len(kinds))
	}
	svc := byKey["Service captf-system/captf-webhook-service"]
	if svc == nil {
		t.Fatal("no captf-webhook-service")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "443" || ports[0].(map[string]any)["targetPort"] != "webhook-server" {
		t.Errorf("Service ports %v, want 443 → webhook-server", ports)
	}
	cert := byKey["Certificate captf-system/captf-serving-cert"]
	if cert == nil {
		t.Fatal("no captf-serving-cert")
	}
	if n, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name"); n != "captf-selfsigned-issuer" {
		t.Errorf("Certificate issuer %q", n)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	d := deployment(t, objs)
	mounted := false
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret {
			for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
				mounted = mounted || (m.Name == v.Name && m.MountPath == strings.TrimSuffix(setup.DefaultOptions().WebhookCertDir, "/"))
			}
		}
	}
	if !mounted {
		t.Errorf("the manager does not mount Secret %s at its --webhook-cert-dir", secret)
	}
	var port int32
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "webhook-server" {
			port = p.ContainerPort
		}
	}
	if int(port) != setup.DefaultOptions().WebhookPort {
		t.Errorf("webhook-server port %d, want %d", port, setup.DefaultOptions().WebhookPort)
	}
}
