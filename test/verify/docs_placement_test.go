package verify

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/webhook"
)

var docsYAMLBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDocsRunnerPlacementPage: the operator guide's "where runner pods
// run" page shows a TerraformCluster the webhook accepts, decoded strictly
// (a misspelt field fails), and its refused-keys table lists domains and
// keys the Job build's rule refuses (jobs.ReservedPodMetadataKey), a
// domain's subdomains included.
func TestDocsRunnerPlacementPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docsRoot(t), "docs", "book", "operator-guide", "runner-placement.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	clusters := 0
	for _, block := range docsYAMLBlock.FindAllStringSubmatch(text, -1) {
		for _, doc := range strings.Split(block[1], "\n---\n") {
			if !strings.Contains(doc, "kind: TerraformCluster\n") {
				continue
			}
			var tc infrav1.TerraformCluster
			if err := yaml.UnmarshalStrict([]byte(doc), &tc); err != nil {
				t.Fatalf("the page's TerraformCluster does not decode: %v", err)
			}
			if errs := webhook.ValidateClusterSpec(field.NewPath("spec"), &tc.Spec, false); len(errs) > 0 {
				t.Errorf("the webhook refuses the page's TerraformCluster: %v", errs.ToAggregate())
			}
			if tc.Spec.Jobs == nil || tc.Spec.Jobs.NodeSelector == nil || len(tc.Spec.Jobs.Tolerations) == 0 {
				t.Error("the page's TerraformCluster sets no placement")
			}
			clusters++
		}
	}
	if clusters == 0 {
		t.Fatal("the page shows no TerraformCluster")
	}
	rows := 0
	for _, tb := range docsParseTables(text) {
		if tb.column("Refused") < 0 {
			continue
		}
		for _, r := range tb.Rows {
			cell := docsCell(tb, r, "Refused")
			domain := strings.Contains(cell, "domain") || strings.Contains(cell, "subdomain")
			for _, name := range docsCodeNames(cell) {
				rows++
				keys := []string{name}
				if domain {
					keys = []string{name + "/x", "sub." + name + "/x"}
				}
				for _, k := range keys {
					if jobs.ReservedPodMetadataKey(k) == "" {
						t.Errorf("the page refuses %s (row at line %d), the Job build's rule does not", k, r.Line)
					}
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("the page has no refused-keys table")
	}
}
