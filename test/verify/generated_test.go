package verify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGeneratedFilesAreCurrent regenerates deepcopy, CRDs and RBAC into a
// scratch directory and compares them with the committed files: run
// `make generate` when it fails.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	r := root(t)
	gen, err := tools.Path("controller-gen")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	// One controller-gen per set of paths, as make generate runs it: the
	// object generator type-checks every package under paths, so adding
	// ./internal/... to its run would check all of CAPTF's code for the
	// two API packages' deepcopy.
	for _, args := range [][]string{
		{"object", "crd", "paths=./api/...", "output:object:dir=" + filepath.Join(out, "object"), "output:crd:dir=" + filepath.Join(out, "crd")},
		{"rbac:roleName=captf-manager-role", "paths=./internal/...", "output:rbac:dir=" + filepath.Join(out, "rbac")},
		{"webhook", "paths=./internal/webhook/...", "output:webhook:dir=" + filepath.Join(out, "webhook")},
	} {
		cmd := exec.Command(gen, args...)
		cmd.Dir = r
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	pairs := map[string]string{
		filepath.Join(out, "object", "zz_generated.deepcopy.go"): filepath.Join(r, "api", "v1alpha1", "zz_generated.deepcopy.go"),
		filepath.Join(out, "rbac", "role.yaml"):                  filepath.Join(r, "config", "rbac", "role.yaml"),
		filepath.Join(out, "webhook", "manifests.yaml"):          filepath.Join(r, "config", "webhook", "manifests.yaml"),
	}
	crds, _ := filepath.Glob(filepath.Join(out, "crd", "*.yaml"))
	committed, _ := filepath.Glob(filepath.Join(r, "config", "crd", "bases", "*.yaml"))
	if len(crds) != 8 || len(committed) != len(crds) {
		t.Fatalf("want 8 CRDs generated and committed, got %d and %d", len(crds), len(committed))
	}
	for _, f := range crds {
		pairs[f] = filepath.Join(r, "config", "crd", "bases", filepath.Base(f))
	}
	for fresh, have := range pairs {
		a, err := os.ReadFile(fresh)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(have)
		if err != nil {
			t.Fatalf("%s: %v (run make generate)", have, err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s is stale: run make generate", strings.TrimPrefix(have, r+"/"))
		}
	}
}

// TestCRDManifestsCarryContractLabels renders config/crd with kustomize and
// checks the labels Cluster API and clusterctl read.
func TestCRDManifestsCarryContractLabels(t *testing.T) {
	k, err := tools.Path("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(k, "build", filepath.Join(root(t), "config", "crd"))
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/crd: %v", err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 8 {
		t.Fatalf("want 8 CRDs, got %d", len(docs))
	}
	for _, d := range docs {
		for _, want := range []string{"cluster.x-k8s.io/v1beta2: v1alpha1", "cluster.x-k8s.io/provider: infrastructure-terraform"} {
			if !strings.Contains(d, want) {
				t.Errorf("a CRD lacks %q:\n%.300s", want, d)
			}
		}
		identity := strings.Contains(d, "name: terraformclusteridentities.infrastructure.cluster.x-k8s.io")
		if identity != strings.Contains(d, "clusterctl.cluster.x-k8s.io/move-hierarchy: \"\"") {
			t.Errorf("move-hierarchy must be on the identity CRD alone:\n%.300s", d)
		}
	}
}
