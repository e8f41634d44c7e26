package jobs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenApplyJob compares the apply Job of TerraformCluster prod, with
// the default policy, against testdata/apply.yaml (reference-facts §8.1).
// Run with -update to rewrite it after an intended change.
func TestGoldenApplyJob(t *testing.T) {
	job, dropped := mustBuild(t, testRun())
	if len(dropped) != 0 {
		t.Fatalf("dropped env %v from a policy without env", dropped)
	}
	got, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "apply.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden Job (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the apply Job differs from %s (run with -update if intended):\n%s", path, lineDiff(string(want), string(got)))
	}
	if bytes.Contains(got, []byte(sentinel)) {
		t.Errorf("the Job carries an input value")
	}
}

// lineDiff lists the lines that differ, for a readable failure.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
