package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// One API server for the package: CAPTF's CRDs and the Cluster API kinds
// the flow reads (Cluster, Machine, MachinePool). Each test gets a
// namespace of its own.
var (
	scheme *runtime.Scheme
	k8s    client.Client // direct (a client.WithWatch): every read is live, never a stale cache
	// kubeconfig is an admin kubeconfig of the API server, for clusterctl's
	// library, which reads one.
	kubeconfig string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	// The flow logs through controller-runtime; the tests read conditions
	// and events, not logs.
	ctrl.SetLogger(logr.Discard())
	scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, infrav1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go list sigs.k8s.io/cluster-api:", err)
		return 1
	}
	capiCRDs := filepath.Join(strings.TrimSpace(string(out)), "core", "config", "crd", "bases")
	dir, err := os.MkdirTemp("", "captf-lifecycle-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ours, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(ours) == 0 {
		fmt.Fprintln(os.Stderr, "CAPTF's CRDs:", err, ours)
		return 1
	}
	crds, err := labelledForClusterctl(filepath.Join(dir, "crds"), append(ours,
		filepath.Join(capiCRDs, "cluster.x-k8s.io_clusters.yaml"),
		filepath.Join(capiCRDs, "cluster.x-k8s.io_machines.yaml"),
		filepath.Join(capiCRDs, "cluster.x-k8s.io_machinepools.yaml"),
	))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, cfg, err := envtest.Start(crds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if kubeconfig, err = envtest.AdminKubeconfig(env, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 500, 1000
	k8s, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// labelledForClusterctl writes the CRD files into dir labelled as
// clusterctl init and CAPTF's config/crd leave them: every CRD with
// clusterctl's label, the TerraformClusterIdentity CRD with the
// move-hierarchy label too (config/config_test.go checks the shipped CRDs
// carry it). The API server installs them so once; a label patched on later
// would make it rebuild every CRD's handler and OpenAPI document.
func labelledForClusterctl(dir string, files []string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[clusterctlCRDLabel] = ""
		if crd.Spec.Names.Kind == "TerraformClusterIdentity" {
			crd.Labels[infrav1.MoveHierarchyLabel] = ""
		}
		out, err := yaml.Marshal(&crd)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), out, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
