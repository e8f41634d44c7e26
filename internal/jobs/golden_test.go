package jobs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenApplyJob compares the apply Job of TerraformCluster prod
// against its golden file (reference-facts §8.1): testdata/apply.yaml with
// the default policy, testdata/apply-placed.yaml with every placement
// field set (book: Tuning Jobs, "Where runner pods run"). Run with -update
// to rewrite them after an intended change.
func TestGoldenApplyJob(t *testing.T) {
	for _, tt := range []struct {
		file   string
		policy *infrav1.JobPolicy
	}{
		{"apply.yaml", nil},
		{"apply-placed.yaml", goldenPlacementPolicy()},
	} {
		t.Run(tt.file, func(t *testing.T) {
			r := testRun()
			p := Effective(tt.policy, nil)
			r.Policy = &p
			job, dropped := mustBuild(t, r)
			if len(dropped) != 0 {
				t.Fatalf("dropped env %v from a policy without env", dropped)
			}
			got, err := yaml.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tt.file)
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
		})
	}
}

// goldenPlacementPolicy is the jobs policy of testdata/apply-placed.yaml:
// the book's example of a Job kept on a dedicated node pool.
func goldenPlacementPolicy() *infrav1.JobPolicy {
	return &infrav1.JobPolicy{
		PodMetadata: &infrav1.PodMetadata{
			Labels:      map[string]string{"team": "platform"},
			Annotations: map[string]string{"example.com/cost-center": "c-17"},
		},
		NodeSelector: map[string]string{"example.com/pool": "terraform"},
		Tolerations: []corev1.Toleration{{Key: "example.com/pool", Operator: corev1.TolerationOpEqual, Value: "terraform",
			Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 50, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{infrav1.ManagedLabel: "true"}}},
		}}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{infrav1.ManagedLabel: "true"}}}},
		PriorityClassName: "infra-low",
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
