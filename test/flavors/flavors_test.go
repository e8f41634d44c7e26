package flavors

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/viper"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// One API server for the package with CAPTF's CRDs and Cluster API's
// (core, kubeadm bootstrap, kubeadm control plane); no webhooks, no
// controllers: the schemas decide what is accepted, strictly (an unknown
// field is refused, not pruned).
var k8s client.Client

// restConfig is the API server's admin configuration.
var restConfig *rest.Config

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	root, err := tools.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go list sigs.k8s.io/cluster-api:", err)
		return 1
	}
	capi := strings.TrimSpace(string(out))
	env, cfg, err := envtest.Start(
		filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(capi, "core", "config", "crd", "bases"),
		filepath.Join(capi, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(capi, "controlplane", "kubeadm", "config", "crd", "bases"),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// An unknown or duplicate field is an error, not a warning.
	k8s = client.WithFieldValidation(c, metav1.FieldValidationStrict)
	restConfig = cfg
	return m.Run()
}

// docVariables reads the Variables table of the clusterctl Variables
// reference page (docs/book/reference/clusterctl-variables.md): for each
// file, each variable it reads and its default (nil: required, "–").
func docVariables(t *testing.T) map[string]map[string]*string {
	t.Helper()
	rows := docTable(t, "## Variables")
	out := map[string]map[string]*string{}
	for _, r := range rows {
		if len(r) != 4 {
			t.Fatalf("Variables row %v has %d cells, want 4", r, len(r))
		}
		name := strings.Trim(r[0], "`")
		var def *string
		if r[2] != "–" {
			def = ptr.To(strings.Trim(r[2], "`"))
		}
		for _, f := range strings.Split(r[1], ",") {
			f = strings.Trim(strings.TrimSpace(f), "`")
			if out[f] == nil {
				out[f] = map[string]*string{}
			}
			if _, dup := out[f][name]; dup {
				t.Fatalf("%s has two rows for %s", f, name)
			}
			out[f][name] = def
		}
	}
	return out
}

// docTable returns the cells of the first table under heading on the
// clusterctl Variables page, header and separator rows left out.
func docTable(t *testing.T, heading string) [][]string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "book", "reference", "clusterctl-variables.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the clusterctl Variables page has no %q section", heading)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		in = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 3 {
		t.Fatalf("the %q table of the clusterctl Variables page is empty", heading)
	}
	return rows[2:]
}

// TestDocsFilesTable: the Files table of the clusterctl Variables page names
// exactly the files of templates/.
func TestDocsFilesTable(t *testing.T) {
	t.Parallel()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "templates", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, f := range files {
		want = append(want, filepath.Base(f))
	}
	for _, r := range docTable(t, "## Files") {
		got = append(got, strings.Trim(r[0], "`"))
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("the Files table names %v; templates/ holds %v", got, want)
	}
}

// values are what a user exports for every variable without a default.
var values = map[string]string{
	"TERRAFORM_CLUSTER_IMAGE": "registry.example/you/noop-cluster:v0.1.0-opentofu",
	"TERRAFORM_MACHINE_IMAGE": "registry.example/you/noop-machine:v0.1.0-opentofu",
	"TERRAFORM_IDENTITY_NAME": "aws-prod",
	"TERRAFORM_VIP":           "192.168.150.210",
}

// repository is a clusterctl local repository holding templates/ as
// provider terraform v0.1.0 (the layout manifests-release writes), and a
// clusterctl configuration naming it, with vars set in it as a user's
// clusterctl.yaml would.
func repository(t *testing.T, vars map[string]string) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	version := filepath.Join(dir, "infrastructure-terraform", "v0.1.0")
	if err := os.MkdirAll(version, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "templates", "cluster*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cluster templates: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(version, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	components := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: captf-system\n"
	if err := os.WriteFile(filepath.Join(version, "infrastructure-components.yaml"), []byte(components), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"providers": []map[string]string{{
		"name": "terraform", "type": "InfrastructureProvider",
		"url": "file://" + filepath.Join(version, "infrastructure-components.yaml"),
	}}}
	for k, v := range vars {
		cfg[k] = v
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterctlMu serializes clusterctl: its configuration lives in viper's
// global instance, where the values one command sets (NAMESPACE,
// CLUSTER_NAME...) outlive it.
var clusterctlMu sync.Mutex

// newClient is a clusterctl client reading config and nothing left over
// from an earlier command. Hold clusterctlMu while using it.
func newClient(ctx context.Context, config string) (clusterctl.Client, error) {
	viper.Reset()
	return clusterctl.New(ctx, config)
}

// generate is clusterctl generate cluster <name> --infrastructure
// terraform:v0.1.0 --flavor <flavor> --target-namespace <ns>
// --kubernetes-version v1.36.3 --control-plane-machine-count 1
// --worker-machine-count 2, through clusterctl's library.
func generate(ctx context.Context, config, flavor, ns, name string, listOnly bool) (clusterctl.Template, error) {
	clusterctlMu.Lock()
	defer clusterctlMu.Unlock()
	c, err := newClient(ctx, config)
	if err != nil {
		return nil, err
	}
	return c.GetClusterTemplate(ctx, clusterctl.GetClusterTemplateOptions{
		ProviderRepositorySource: &clusterctl.ProviderRepositorySourceOptions{InfrastructureProvider: "terraform:v0.1.0", Flavor: flavor},
		TargetNamespace:          ns,
		ClusterName:              name,
		KubernetesVersion:        "v1.36.3",
		ControlPlaneMachineCount: ptr.To[int64](1),
		WorkerMachineCount:       ptr.To[int64](2),
		ListVariablesOnly:        listOnly,
	})
}

// generateYAML is clusterctl generate yaml --from templates/<file>.
func generateYAML(ctx context.Context, config, file string, listOnly bool) (clusterctl.Template, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return nil, err
	}
	clusterctlMu.Lock()
	defer clusterctlMu.Unlock()
	c, err := newClient(ctx, config)
	if err != nil {
		return nil, err
	}
	out, err := c.ProcessYAML(ctx, clusterctl.ProcessYAMLOptions{
		URLSource:           &clusterctl.URLSourceOptions{URL: filepath.Join(root, "templates", file)},
		SkipTemplateProcess: listOnly,
	})
	if err != nil {
		return nil, err
	}
	tpl, ok := out.(clusterctl.Template)
	if !ok {
		return nil, fmt.Errorf("clusterctl generate yaml returned a %T, not a template", out)
	}
	return tpl, nil
}

func describe(m map[string]*string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if m[k] == nil {
			parts = append(parts, k+" (required)")
		} else {
			parts = append(parts, k+"="+*m[k])
		}
	}
	return strings.Join(parts, ", ")
}

// create creates every object in ns (unless it has its own), creating the
// namespaces first.
func create(ctx context.Context, t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	for i := range objs {
		o := &objs[i]
		if err := k8s.Create(ctx, o); err != nil {
			t.Errorf("the API server refused %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// TestFlavors: every flavor renders through clusterctl's own
// generate-cluster path from a local repository, with exactly the variables
// and defaults of the clusterctl Variables page, and every rendered object is
// accepted by an API server with Cluster API's CRDs and CAPTF's; a missing
// required variable fails with clusterctl's own error.
func TestFlavors(t *testing.T) {
	t.Parallel()
	doc := docVariables(t)
	for _, tc := range []struct {
		flavor string
		file   string
		kinds  []string
	}{
		{"", "cluster-template.yaml", []string{"Cluster", "TerraformCluster", "KubeadmControlPlane", "TerraformMachineTemplate",
			"MachineDeployment", "KubeadmConfigTemplate", "MachineHealthCheck"}},
		// clusterctl adds the class the Cluster names
		// (clusterclass-noop.yaml) from the repository.
		{"clusterclass", "cluster-template-clusterclass.yaml", []string{"Cluster", "ClusterClass", "TerraformClusterTemplate",
			"KubeadmControlPlaneTemplate", "TerraformMachineTemplate", "KubeadmConfigTemplate"}},
		{"libvirt", "cluster-template-libvirt.yaml", []string{"Cluster", "TerraformCluster", "KubeadmControlPlane", "TerraformMachineTemplate",
			"MachineDeployment", "KubeadmConfigTemplate", "MachineHealthCheck"}},
	} {
		name := tc.flavor
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := doc[tc.file]
			ctx := context.Background()
			ns := "flavor-" + name
			list, err := generate(ctx, repository(t, nil), tc.flavor, ns, "c-"+name, true)
			if err != nil {
				t.Fatalf("clusterctl generate cluster --list-variables: %v", err)
			}
			if got := list.VariableMap(); !maps.EqualFunc(got, want, func(a, b *string) bool { return ptr.Equal(a, b) }) {
				t.Errorf("variables of %s\n got %s\nthe clusterctl Variables page says %s", tc.file, describe(got), describe(want))
			}

			vars := map[string]string{}
			for k, v := range want {
				if w, ok := values[k]; ok && v == nil {
					vars[k] = w
				}
			}
			tpl, err := generate(ctx, repository(t, vars), tc.flavor, ns, "c-"+name, false)
			if err != nil {
				t.Fatalf("clusterctl generate cluster: %v", err)
			}
			var kinds []string
			for _, o := range tpl.Objs() {
				if o.GetNamespace() != ns {
					t.Errorf("%s %s is in namespace %q, want the target namespace %q", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
				}
				if !slices.Contains(kinds, o.GetKind()) {
					kinds = append(kinds, o.GetKind())
				}
			}
			if !slices.Equal(slices.Sorted(slices.Values(kinds)), slices.Sorted(slices.Values(tc.kinds))) {
				t.Errorf("rendered kinds %v, want %v", kinds, tc.kinds)
			}
			create(ctx, t, tpl.Objs())

			// Each required variable left out fails clusterctl itself.
			for k, v := range want {
				if _, user := values[k]; !user || v != nil {
					continue
				}
				partial := maps.Clone(vars)
				delete(partial, k)
				_, err := generate(ctx, repository(t, partial), tc.flavor, ns, "c-"+name, false)
				if err == nil || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "is not set") {
					t.Errorf("without %s clusterctl said %v; want its own \"value for variables [%s] is not set\"", k, err, k)
				}
			}
		})
	}
}

func classObjects(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "templates", "clusterclass-noop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "${") {
		t.Fatal("clusterclass-noop.yaml carries a clusterctl variable; it must have none")
	}
	var objs []unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var o unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatal(err)
		}
		if len(o.Object) == 0 {
			continue
		}
		if o.GetNamespace() != "" {
			t.Fatalf("%s %s in clusterclass-noop.yaml has a namespace", o.GetKind(), o.GetName())
		}
		objs = append(objs, o)
	}
	return objs
}

// TestClusterClassNoop: templates/clusterclass-noop.yaml defines ClusterClass
// noop, the five templates it names, the three required string topology
// variables and the identity, clusterImage and machineImage patches
// (Templates and ClusterClass, "The noop ClusterClass").
func TestClusterClassNoop(t *testing.T) {
	t.Parallel()
	objs := classObjects(t)
	byKindName := map[string]unstructured.Unstructured{}
	for _, o := range objs {
		byKindName[o.GetKind()+"/"+o.GetName()] = o
	}
	want := []string{"ClusterClass/noop", "TerraformClusterTemplate/noop", "KubeadmControlPlaneTemplate/noop-control-plane",
		"TerraformMachineTemplate/noop-control-plane", "TerraformMachineTemplate/noop-worker", "KubeadmConfigTemplate/noop-worker"}
	if got := slices.Sorted(maps.Keys(byKindName)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	for _, k := range want[1:] {
		if !strings.HasPrefix(k, "Terraform") {
			continue
		}
		img, _, _ := unstructured.NestedString(byKindName[k].Object, "spec", "template", "spec", "source", "image")
		if img != "example.invalid/captf/set-by-clusterclass:unset" {
			t.Errorf("%s image %q, want the placeholder", k, img)
		}
	}
	cc := byKindName["ClusterClass/noop"].Object
	vars, _, _ := unstructured.NestedSlice(cc, "spec", "variables")
	var names []string
	for _, v := range vars {
		m := v.(map[string]any)
		typ, _, _ := unstructured.NestedString(m, "schema", "openAPIV3Schema", "type")
		if m["required"] != true || typ != "string" {
			t.Errorf("topology variable %v is not a required string", m["name"])
		}
		names = append(names, m["name"].(string))
	}
	if !slices.Equal(names, []string{"identityName", "clusterImage", "machineImage"}) {
		t.Errorf("topology variables %v, want identityName, clusterImage, machineImage", names)
	}
	patches, _, _ := unstructured.NestedSlice(cc, "spec", "patches")
	var pnames []string
	for _, p := range patches {
		pnames = append(pnames, p.(map[string]any)["name"].(string))
	}
	if !slices.Equal(pnames, []string{"identity", "clusterImage", "machineImage"}) {
		t.Errorf("patches %v, want identity, clusterImage, machineImage", pnames)
	}
	maxSurge, _, _ := unstructured.NestedFieldNoCopy(byKindName["KubeadmControlPlaneTemplate/noop-control-plane"].Object,
		"spec", "template", "spec", "rollout", "strategy", "rollingUpdate", "maxSurge")
	if fmt.Sprint(maxSurge) != "0" {
		t.Errorf("the control plane's maxSurge is %v, want 0", maxSurge)
	}
}

// TestIdentityTemplates: identity.yaml and identity-libvirt.yaml render
// through clusterctl generate yaml with the variables of the clusterctl
// Variables page, and are accepted.
func TestIdentityTemplates(t *testing.T) {
	t.Parallel()
	doc := docVariables(t)
	for _, tc := range []struct {
		file string
		set  map[string]string
	}{
		{"identity.yaml", map[string]string{"TERRAFORM_IDENTITY_NAME": "flavors-default", "NAMESPACE": "team-flavors"}},
		{"identity-libvirt.yaml", map[string]string{"NAMESPACE": "team-flavors"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			list, err := generateYAML(ctx, repository(t, nil), tc.file, true)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := list.VariableMap(), doc[tc.file]; !maps.EqualFunc(got, want, func(a, b *string) bool { return ptr.Equal(a, b) }) {
				t.Errorf("variables of %s\n got %s\nthe clusterctl Variables page says %s", tc.file, describe(got), describe(want))
			}
			if _, err := generateYAML(ctx, repository(t, nil), tc.file, false); err == nil || !strings.Contains(err.Error(), "NAMESPACE") {
				t.Errorf("without NAMESPACE clusterctl said %v; want its own error naming NAMESPACE", err)
			}
			out, err := generateYAML(ctx, repository(t, tc.set), tc.file, false)
			if err != nil {
				t.Fatal(err)
			}
			create(ctx, t, out.Objs())
		})
	}
}
