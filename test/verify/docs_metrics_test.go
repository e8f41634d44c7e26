package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// docsMetric is what the registry says about one captf_* metric.
type docsMetric struct {
	Name   string
	Type   string // counter, gauge, histogram
	Labels []string
}

var docsDescPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: .*, variableLabels: \{([^{}]*)\}\}$`)

// docsRegisteredMetrics describes every collector on controller-runtime's
// registry (the one the manager serves) and returns the captf_* ones with
// their label names in declaration order. The type comes from a Gather after
// every metrics helper has been called once, since a vector without series
// is not gathered.
func docsRegisteredMetrics(t *testing.T) map[string]*docsMetric {
	t.Helper()
	docsExerciseMetrics(t)
	coll, ok := ctrlmetrics.Registry.(prometheus.Collector)
	if !ok {
		t.Fatalf("controller-runtime's metrics.Registry (%T) cannot describe its collectors", ctrlmetrics.Registry)
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { coll.Describe(ch); close(ch) }()
	out := map[string]*docsMetric{}
	for d := range ch {
		m := docsDescPattern.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the metric descriptor %s", d.String())
		}
		name, err := strconv.Unquote(m[1])
		if err != nil {
			t.Fatalf("descriptor %s: %v", d.String(), err)
		}
		if !strings.HasPrefix(name, "captf_") {
			continue
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[name] = &docsMetric{Name: name, Labels: labels}
	}
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the registry: %v", err)
	}
	for _, f := range fams {
		if m := out[f.GetName()]; m != nil {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				m.Type = "counter"
			case dto.MetricType_GAUGE:
				m.Type = "gauge"
			case dto.MetricType_HISTOGRAM:
				m.Type = "histogram"
			default:
				m.Type = strings.ToLower(f.GetType().String())
			}
		}
	}
	return out
}

// docsExerciseMetrics calls every exported helper of internal/metrics once,
// so every family has a series to gather.
func docsExerciseMetrics(t *testing.T) {
	t.Helper()
	const kind, ns, name = "TerraformMachine", "docs-check", "docs-check"
	metrics.JobFinished(kind, "apply", metrics.ResultSucceeded, time.Second)
	metrics.JobStep(kind, "apply", "init", time.Second)
	metrics.JobQueued(kind, "apply", time.Second)
	metrics.JobError(kind, "apply", metrics.ErrorKindStep, "apply")
	metrics.JobAttempts(kind, "apply", 1)
	metrics.ResourcesChanged(kind, "apply", "add", 1)
	metrics.DriftResources(kind, "change", 1)
	metrics.Decision(kind, metrics.OpNone, "UpToDate")
	metrics.StateReadError(kind, metrics.StateErrorCorrupt)
	metrics.OutputsInvalid(kind, "OutputsMissing")
	metrics.SetDriftDetected(kind, ns, name, false)
	metrics.SetReady(kind, ns, name, metav1.ConditionTrue)
	metrics.SetInfrastructureHealthy(kind, ns, name, metav1.ConditionTrue)
	metrics.SetStateResources(kind, ns, name, 1)
	metrics.SetStateBytes(kind, ns, name, 1)
	metrics.SetInputsBytes(kind, ns, name, 1)
	metrics.SetLastSuccess(kind, ns, name, "apply", time.Unix(1, 0))
	metrics.SetUnhealthySamples(ns, name, 0)
	metrics.LockForceUnlocked(kind)
	metrics.IdentityDenied(metrics.IdentityDeniedNamespace)
	metrics.ImageInspectError(metrics.InspectNotFound)
	metrics.InputsHashChanged(kind)
	metrics.RemediationRequest(metrics.RemediationRequested)
	metrics.DestructivePlanApprovalConsumed(kind)
	metrics.LeaseWait(kind, metrics.LeaseWaitRun)
	metrics.StateBackup(kind, metrics.BackupTaken)
	metrics.StateRestore(kind, metrics.RestoreSucceeded)
	metrics.PlanApproval(kind, metrics.PlanApproved)
	metrics.SetBuildInfo("docs-check", "docs-check", "v1alpha1")
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: ns, Labels: map[string]string{
		infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kind, infrav1.OpLabel: "apply"}}}
	metrics.SetActiveJobsReader(fake.NewClientBuilder().WithScheme(scheme).WithObjects(job).Build())
	t.Cleanup(func() { metrics.SetActiveJobsReader(nil) })
}

// docsRecordedMetrics reads internal/metrics with go/ast and answers, for
// each captf_* metric, whether code outside that package (tests excluded)
// calls a helper that writes it. A helper writes the collectors its body
// names; ObjectDeleted and Delete* helpers only remove series and do not
// count.
func docsRecordedMetrics(root string) (map[string]bool, error) {
	pkgDir := filepath.Join(root, "internal", "metrics")
	fset := token.NewFileSet()
	varMetric := map[string]string{}    // collector variable -> metric name
	helperVars := map[string][]string{} // exported helper -> variables it names
	files, err := filepath.Glob(filepath.Join(pkgDir, "*.go"))
	if err != nil {
		return nil, err
	}
	var decls []*ast.File
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		decls = append(decls, f)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if n := docsFirstMetricName(vs.Values[i]); n != "" {
						varMetric[id.Name] = n
					}
				}
			}
		}
	}
	for _, f := range decls {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || fd.Body == nil {
				continue
			}
			if fd.Name.Name == "ObjectDeleted" || strings.HasPrefix(fd.Name.Name, "Delete") {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					if _, isVar := varMetric[id.Name]; isVar {
						helperVars[fd.Name.Name] = append(helperVars[fd.Name.Name], id.Name)
					}
				}
				return true
			})
		}
	}
	const metricsImport = "github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	called := map[string]bool{}
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p == pkgDir || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			local := ""
			for _, im := range f.Imports {
				if v, _ := strconv.Unquote(im.Path.Value); v == metricsImport {
					local = "metrics"
					if im.Name != nil {
						local = im.Name.Name
					}
				}
			}
			if local == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if se, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := se.X.(*ast.Ident); ok && x.Name == local {
						called[se.Sel.Name] = true
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := map[string]bool{}
	for _, m := range varMetric {
		out[m] = false
	}
	for helper, vars := range helperVars {
		if !called[helper] {
			continue
		}
		for _, v := range vars {
			out[varMetric[v]] = true
		}
	}
	return out, nil
}

// docsFirstMetricName returns the first string literal starting with
// captf_ inside e.
func docsFirstMetricName(e ast.Expr) string {
	name := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if name != "" {
			return false
		}
		if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
			if v, err := strconv.Unquote(bl.Value); err == nil && strings.HasPrefix(v, "captf_") {
				name = v
			}
		}
		return true
	})
	return name
}

// docsMetricRow is one row of metrics.md.
type docsMetricRow struct {
	Type, Recorded string
	Labels         []string
	Where          string
}

// docsMetricRows reads the tables of page that have Metric, Type and Labels
// columns.
func docsMetricRows(page string) (map[string]docsMetricRow, []string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Base(page)
	rows := map[string]docsMetricRow{}
	var problems []string
	for _, t := range docsParseTables(string(b)) {
		mc, tc, lc, rc := t.column("Metric"), t.column("Type"), t.column("Labels"), t.column("Recorded")
		if mc < 0 || tc < 0 || lc < 0 || rc < 0 {
			continue
		}
		for _, r := range t.Rows {
			where := fmt.Sprintf("%s line %d (section %q)", base, r.Line, t.Section)
			if len(r.Cells) <= max(mc, tc, lc, rc) {
				problems = append(problems, where+": row has too few cells")
				continue
			}
			names := docsCodeNames(r.Cells[mc])
			if len(names) != 1 {
				problems = append(problems, where+": the Metric cell must name exactly one metric in backquotes")
				continue
			}
			if prev, dup := rows[names[0]]; dup {
				problems = append(problems, fmt.Sprintf("%s: %s already has a row at %s", where, names[0], prev.Where))
				continue
			}
			rows[names[0]] = docsMetricRow{
				Type:     strings.TrimSpace(r.Cells[tc]),
				Labels:   docsCodeNames(r.Cells[lc]),
				Recorded: strings.TrimSpace(r.Cells[rc]),
				Where:    where,
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s has no table with Metric, Type, Labels and Recorded columns", page)
	}
	return rows, problems, nil
}

// docsCheckMetrics compares the registry with the page.
func docsCheckMetrics(registered map[string]*docsMetric, recorded map[string]bool, page string) ([]string, error) {
	rows, problems, err := docsMetricRows(page)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(page)
	var names []string
	for n := range registered {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := registered[n]
		row, ok := rows[n]
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %s (registered by internal/metrics) has no row in %s", n, base))
			continue
		}
		if m.Type == "" {
			problems = append(problems, fmt.Sprintf("metric %s has no series after every metrics helper was called: call its helper in docsExerciseMetrics", n))
		} else if row.Type != m.Type {
			problems = append(problems, fmt.Sprintf("%s: %s is a %s, but the row says %q", row.Where, n, m.Type, row.Type))
		}
		if !slices.Equal(row.Labels, m.Labels) {
			problems = append(problems, fmt.Sprintf("%s: %s has the labels %v, but the row lists %v", row.Where, n, m.Labels, row.Labels))
		}
		want := "no"
		if recorded[n] {
			want = "yes"
		}
		if _, known := recorded[n]; !known {
			problems = append(problems, fmt.Sprintf("metric %s is registered, but no collector variable of internal/metrics names it", n))
		} else if row.Recorded != want {
			problems = append(problems, fmt.Sprintf("%s: %s is recorded by code outside internal/metrics: %s, but the row says %q", row.Where, n, want, row.Recorded))
		}
	}
	var docNames []string
	for n := range rows {
		docNames = append(docNames, n)
	}
	sort.Strings(docNames)
	for _, n := range docNames {
		if _, ok := registered[n]; !ok {
			problems = append(problems, fmt.Sprintf("%s names %s, which the manager does not register: remove the row or register the metric", rows[n].Where, n))
		}
	}
	return problems, nil
}

// TestDocsMetricsMatchRegistry: every captf_* metric on controller-runtime's
// registry has one row in metrics.md with its type, its labels in order and
// whether code records it; every row names a registered metric.
func TestDocsMetricsMatchRegistry(t *testing.T) {
	r := docsRoot(t)
	recorded, err := docsRecordedMetrics(r)
	if err != nil {
		t.Fatal(err)
	}
	registered := docsRegisteredMetrics(t)
	if len(registered) == 0 {
		t.Fatal("no captf_* metric on controller-runtime's registry: is internal/metrics imported?")
	}
	problems, err := docsCheckMetrics(registered, recorded, filepath.Join(r, docsReferenceDir, "metrics.md"))
	docsReport(t, problems, err)
}

// TestDocsMetricsCheckCatchesMismatches proves the metrics check fails on a
// page with a missing row, an unknown metric, a wrong type, wrong labels and
// a wrong Recorded cell.
func TestDocsMetricsCheckCatchesMismatches(t *testing.T) {
	registered := map[string]*docsMetric{
		"captf_a_total": {Name: "captf_a_total", Type: "counter", Labels: []string{"kind", "op"}},
		"captf_b":       {Name: "captf_b", Type: "gauge", Labels: []string{"kind"}},
		"captf_c":       {Name: "captf_c", Type: "gauge"},
	}
	recorded := map[string]bool{"captf_a_total": true, "captf_b": false, "captf_c": false}
	page := filepath.Join(t.TempDir(), "metrics.md")
	docsWriteFile(t, page, "# M\n\n| Metric | Type | Labels | Recorded | Meaning |\n| --- | --- | --- | --- | --- |\n"+
		"| `captf_a_total` | gauge | `op`, `kind` | no | x |\n"+
		"| `captf_b` | gauge | `kind` | no | x |\n"+
		"| `captf_ghost` | counter | | yes | x |\n")
	problems, err := docsCheckMetrics(registered, recorded, page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"captf_c (registered by internal/metrics) has no row",
		"captf_a_total is a counter, but the row says \"gauge\"",
		"captf_a_total has the labels [kind op], but the row lists [op kind]",
		"captf_a_total is recorded by code outside internal/metrics: yes, but the row says \"no\"",
		"names captf_ghost, which the manager does not register",
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem reported containing %q; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 5 {
		t.Errorf("got %d problems, want 5:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}
