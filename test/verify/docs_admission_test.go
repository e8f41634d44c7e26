package verify

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// TestDocsAdmissionMatchesWebhooks compares the Webhooks table of
// docs/book/reference/admission.md with config/webhook/manifests.yaml
// (generated from internal/webhook's markers): one row per webhook, with
// its path and operations.
func TestDocsAdmissionMatchesWebhooks(t *testing.T) {
	r := docsRoot(t)
	b, err := os.ReadFile(filepath.Join(r, "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(string(b), "---\n")), &vwc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // path -> operations
	for _, w := range vwc.Webhooks {
		var ops []string
		for _, rule := range w.Rules {
			for _, op := range rule.Operations {
				ops = append(ops, string(op))
			}
		}
		want[*w.ClientConfig.Service.Path] = strings.Join(ops, ", ")
	}
	page, err := os.ReadFile(filepath.Join(r, "docs", "book", "reference", "admission.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tbl := range docsParseTables(string(page)) {
		if tbl.Section != "Webhooks" {
			continue
		}
		pc, oc := tbl.column("Path"), tbl.column("Operations")
		for _, row := range tbl.Rows {
			got[strings.Trim(row.Cells[pc], "`")] = row.Cells[oc]
		}
	}
	var problems []string
	for p, ops := range want {
		switch g, ok := got[p]; {
		case !ok:
			problems = append(problems, "admission.md has no row for webhook "+p)
		case g != ops:
			problems = append(problems, "admission.md: "+p+" lists operations "+g+", the configuration "+ops)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			problems = append(problems, "admission.md lists "+p+", which config/webhook does not serve")
		}
	}
	sort.Strings(problems)
	docsReport(t, problems, nil)
	if len(want) != 7 {
		t.Errorf("config/webhook has %d webhooks, want one per kind (7)", len(want))
	}
}
