package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// docsRuleFile is the shape of a Prometheus rule file.
type docsRuleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// docsAlertNames are the alerts CAPTF ships (reference-facts §3.1).
var docsAlertNames = []string{
	"CAPTFJobFailing", "CAPTFDestroyStuck", "CAPTFClusterDrift", "CAPTFStateUnreadable",
	"CAPTFForceUnlocks", "CAPTFReconcileErrors", "CAPTFJobSlow", "CAPTFJobQueueSlow",
	"CAPTFStateNearSecretLimit", "CAPTFInputsNearLimit", "CAPTFNoRecentSuccess",
}

// docsAllMetricNames returns the name of every metric on controller-runtime's
// registry (CAPTF's and controller-runtime's own).
func docsAllMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	coll, ok := ctrlmetrics.Registry.(prometheus.Collector)
	if !ok {
		t.Fatalf("controller-runtime's metrics.Registry (%T) cannot describe its collectors", ctrlmetrics.Registry)
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { coll.Describe(ch); close(ch) }()
	out := map[string]bool{}
	for d := range ch {
		if m := docsDescPattern.FindStringSubmatch(d.String()); m != nil {
			out[strings.Trim(m[1], `"`)] = true
		}
	}
	return out
}

var docsMetricToken = regexp.MustCompile(`\b(?:captf|controller_runtime|workqueue|rest_client)_[a-z_]+`)

// docsMetricBase strips a histogram's series suffix.
func docsMetricBase(name string, registered map[string]bool) string {
	if registered[name] {
		return name
	}
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, s); ok && registered[b] {
			return b
		}
	}
	return name
}

// docsSectionText returns the lines of page under the heading whose anchor
// is anchor, up to the next heading of the same or a higher level.
func docsSectionText(page, anchor string) string {
	lines := strings.Split(page, "\n")
	level := 0
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			n := len(t) - len(strings.TrimLeft(t, "#"))
			if level > 0 && n <= level {
				break
			}
			if level == 0 && docsAnchors(t)[anchor] {
				level = n
				continue
			}
		}
		if level > 0 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDocsAlertRules: config/prometheus/rules.yaml is a PrometheusRule
// whose spec parses strictly as a plain rule file with one group captf holding the 11 alerts; each alert's severity and for
// match the observability page's table; every expression parses as PromQL
// (Prometheus's parser) and every metric its selectors read is registered; the table's "Fires today" says whether every captf_* metric
// the alert reads is recorded; each alert has a section whose anchor is its
// name in lower case, which its runbook_url points at and which links to a
// runbook that exists.
func TestDocsAlertRules(t *testing.T) {
	r := docsRoot(t)
	b, err := os.ReadFile(filepath.Join(r, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       json.RawMessage   `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		t.Fatalf("config/prometheus/rules.yaml: %v", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("config/prometheus/rules.yaml is a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	var rf docsRuleFile
	if err := yaml.UnmarshalStrict(pr.Spec, &rf); err != nil {
		t.Fatalf("the spec of config/prometheus/rules.yaml is not a rule file: %v", err)
	}
	if len(rf.Groups) != 1 || rf.Groups[0].Name != "captf" {
		t.Fatalf("config/prometheus/rules.yaml must hold one group named captf, has %d groups", len(rf.Groups))
	}
	rules := rf.Groups[0].Rules
	var names []string
	for _, rule := range rules {
		names = append(names, rule.Alert)
	}
	want := append([]string(nil), docsAlertNames...)
	sort.Strings(want)
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("rules.yaml has the alerts %v, want %v", names, want)
	}

	obsPath := filepath.Join(r, "docs", "book", "operator-guide", "observability.md")
	ob, err := os.ReadFile(obsPath)
	if err != nil {
		t.Fatal(err)
	}
	obs := string(ob)
	type row struct{ Severity, For, Fires string }
	table := map[string]row{}
	for _, tb := range docsParseTables(obs) {
		if tb.column("Alert") < 0 || tb.column("Severity") < 0 || tb.column("For") < 0 || tb.column("Fires today") < 0 {
			continue
		}
		for _, rw := range tb.Rows {
			table[docsFirstCode(docsCell(tb, rw, "Alert"))] = row{docsCell(tb, rw, "Severity"), docsCell(tb, rw, "For"), docsCell(tb, rw, "Fires today")}
		}
	}
	recorded, err := docsRecordedMetrics(r)
	if err != nil {
		t.Fatal(err)
	}
	registered := docsAllMetricNames(t)
	anchors := docsAnchors(obs)
	exprs := make([]string, len(rules))
	for i, rule := range rules {
		exprs[i] = rule.Expr
	}
	parsed := promqlParse(t, exprs)
	for i, rule := range rules {
		a := rule.Alert
		if rule.Expr == "" {
			t.Errorf("%s has no expression", a)
		}
		if parsed[i].Error != "" {
			t.Errorf("%s's expression is not PromQL: %s", a, parsed[i].Error)
		}
		got, ok := table[a]
		if !ok {
			t.Errorf("observability.md's alert table has no row for %s", a)
		} else {
			if got.Severity != rule.Labels["severity"] {
				t.Errorf("%s has severity %q in rules.yaml, the table says %q", a, rule.Labels["severity"], got.Severity)
			}
			f := rule.For
			if f == "" {
				f = "–"
			}
			if got.For != f {
				t.Errorf("%s has for %q in rules.yaml, the table says %q", a, f, got.For)
			}
		}
		fires := "yes"
		for _, m := range parsed[i].Metrics {
			base := docsMetricBase(m, registered)
			if !registered[base] {
				t.Errorf("%s reads %s, which the manager does not register", a, m)
				continue
			}
			if strings.HasPrefix(base, "captf_") && !recorded[base] {
				fires = "no"
			}
		}
		if ok && got.Fires != fires {
			t.Errorf("%s: the metrics it reads are recorded today: %s, but the table says %q", a, fires, got.Fires)
		}
		anchor := strings.ToLower(a)
		if !anchors[anchor] {
			t.Errorf("observability.md has no section with the anchor #%s", anchor)
			continue
		}
		if u := rule.Annotations["runbook_url"]; !strings.HasSuffix(u, "/docs/book/operator-guide/observability.md#"+anchor) {
			t.Errorf("%s's runbook_url %q does not point at observability.md#%s", a, u, anchor)
		}
		for _, k := range []string{"summary", "description"} {
			if rule.Annotations[k] == "" {
				t.Errorf("%s has no %s annotation", a, k)
			}
		}
		section := docsSectionText(obs, anchor)
		linked := false
		for _, l := range docsLinks(section) {
			target, _, _ := strings.Cut(l, "#")
			if strings.HasPrefix(target, "../runbooks/") {
				if _, err := os.Stat(filepath.Join(filepath.Dir(obsPath), filepath.FromSlash(target))); err == nil {
					linked = true
				}
			}
		}
		if !linked {
			t.Errorf("observability.md's section #%s links to no runbook that exists", anchor)
		}
	}
	for a := range table {
		if !anchors[strings.ToLower(a)] || !strings.HasPrefix(a, "CAPTF") {
			continue
		}
		found := false
		for _, rule := range rules {
			found = found || rule.Alert == a
		}
		if !found {
			t.Errorf("observability.md lists the alert %s, which rules.yaml does not have", a)
		}
	}
	problems, err := docsCheckKeysExist(filepath.Join(r, "api", "v1alpha1"), obsPath)
	docsReport(t, problems, err)
}

// docsRunbooks are the runbooks of reference-facts §13.
var docsRunbooks = []string{
	"job-failures", "stuck-destroy", "state-unreadable", "state-restore", "stale-lock", "size-limits",
	"slow-jobs", "reconcile-errors", "identity-and-credentials", "webhook-unavailable", "move",
}

// docsKubernetesWords are PascalCase names a page may put in a code span
// that neither CAPTF's code nor docsNamePackages declare: condition
// statuses and event types written as words, Kubernetes event reasons and
// admission plugins, and the fields of the state backend's lock JSON.
var docsKubernetesWords = map[string]bool{
	"True": true, "False": true, "Unknown": true, "Normal": true, "Warning": true,
	"Pending": true, "FailedScheduling": true, "NotFound": true,
	"Manual": true, "Automatic": true, "Report": true, "Remediate": true,
	// Fields of the state backend's app.terraform.io/lock-info JSON.
	"Operation": true, "Who": true, "Created": true, "Version": true,
	// The kube-apiserver admission plugin that checks ownerReferences.
	"OwnerReferencesPermissionEnforcement": true,
}

// docsContractInputs are the module contract's input names (captf_*), which
// are not metrics.
func docsContractInputs() map[string]bool {
	out := map[string]bool{}
	for _, role := range contract.Roles() {
		for _, n := range role.InputNames() {
			out[n] = true
		}
	}
	return out
}

var docsPascal = regexp.MustCompile(`^[A-Z][a-z]+(?:[A-Z][a-zA-Z]*)*$`)

// docsHCLDeclaration matches a module variable or output declared by name,
// as tfcapi-lint's messages quote one: `variable "captf_extra"` names a
// module's variable, not a metric.
var docsHCLDeclaration = regexp.MustCompile(`\b(?:variable|output) "captf_[a-z_]+"`)

// docsCheckPageNames reports every code span of a page that looks like a
// condition type, reason, event or other name of the code (PascalCase) and
// is none, every metric it names that the manager does not register, and
// every CAPTF key that api/v1alpha1 does not define. vocabulary is
// docsCodeVocabulary: the names the code and Kubernetes declare, besides
// the condition, reason and event values of apiDir.
func docsCheckPageNames(apiDir, page string, registered, vocabulary map[string]bool) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, c := range docsWithSuffix(consts, "Condition", "Reason", "Event") {
		known[c.Value] = true
	}
	for _, k := range []string{"TerraformCluster", "TerraformMachine", "TerraformMachinePool", "TerraformClusterIdentity",
		"TerraformClusterTemplate", "TerraformMachineTemplate", "TerraformMachinePoolTemplate"} {
		known[k] = true
	}
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(page)
	inputs := docsContractInputs()
	var problems []string
	for i, line := range strings.Split(string(b), "\n") {
		for _, span := range docsCodeNames(line) {
			switch {
			case docsPascal.MatchString(span):
				// A decision waiting for a retry backoff is reported as its
				// reason with "Backoff" appended (internal/decide's
				// Reason.Backoff), a name no constant spells out.
				waiting, backoff := strings.CutSuffix(span, "Backoff")
				if !known[span] && !vocabulary[span] && !docsKubernetesWords[span] && !(backoff && vocabulary[waiting]) {
					problems = append(problems, fmt.Sprintf("%s line %d: `%s` looks like a condition, reason, event or other name of the code, but api/v1alpha1 has no such constant and neither CAPTF's code nor Kubernetes declares it", base, i+1, span))
				}
			}
		}
		for _, m := range docsMetricToken.FindAllString(docsHCLDeclaration.ReplaceAllString(line, ""), -1) {
			if !registered[docsMetricBase(m, registered)] && !inputs[m] {
				problems = append(problems, fmt.Sprintf("%s line %d names the metric %s, which the manager does not register", base, i+1, m))
			}
		}
	}
	keys, err := docsCheckKeysExist(apiDir, page)
	if err != nil {
		return nil, err
	}
	return append(problems, keys...), nil
}

// TestDocsPagesNameRealThings: every runbook exists, and every condition,
// reason, event or other code name, metric and CAPTF key that any page of
// the book names in a code span (or, for keys and metrics, in a code
// block) exists in the code. Every page under docs/book is checked.
func TestDocsPagesNameRealThings(t *testing.T) {
	r := docsRoot(t)
	docsRegisteredMetrics(t) // registers every series, so histograms resolve
	registered := docsAllMetricNames(t)
	for _, name := range docsRunbooks {
		page := filepath.Join(r, "docs", "book", "runbooks", name+".md")
		if _, err := os.Stat(page); err != nil {
			t.Errorf("runbook %s is missing: %v", name, err)
		}
	}
	vocabulary, err := docsCodeVocabulary(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range docsBookPages(t, r) {
		problems, err := docsCheckPageNames(filepath.Join(r, "api", "v1alpha1"), page, registered, vocabulary)
		docsReport(t, problems, err)
	}
}

// TestDocsRunbookCheckCatchesInventedNames proves the page check reports
// an invented reason, metric, key and tag key, and a PascalCase name the
// code does not declare, while real names of the code, of Kubernetes and
// of tests, the captf_tags keys and a module variable quoted in a lint
// message pass.
func TestDocsRunbookCheckCatchesInventedNames(t *testing.T) {
	r := docsRoot(t)
	vocabulary, err := docsCodeVocabulary(r)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "rb.md")
	docsWriteFile(t, page, "`ApplyFailed` and `StateMelted` on `TerraformCluster`; watch `captf_jobs_total` and `captf_melt_total`; set `captf.io/melt=true`.\n"+
		"`ApplyPolicyAutomatic`, `IfNotPresent`, `InfrastructureReady`, `TestDocsPagesNameRealThings` and `TerraformWidget`.\n"+
		"Tags `captf.io/template` and `captf.io/colour`; `variable \"captf_extra\" uses the reserved prefix`.\n")
	problems, err := docsCheckPageNames(filepath.Join(r, "api", "v1alpha1"), page, docsAllMetricNames(t), vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"`StateMelted`", "captf_melt_total", "captf.io/melt", "`TerraformWidget`", "captf.io/colour"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no problem names %s; got:\n%s", want, joined)
		}
	}
	if len(problems) != 5 {
		t.Errorf("got %d problems, want 5:\n%s", len(problems), joined)
	}
}
