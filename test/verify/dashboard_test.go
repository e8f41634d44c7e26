package verify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// grafanaDashboard is what Grafana needs of a dashboard to import it and
// what the check reads of it.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *grafanaSource  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaSource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *grafanaSource `json:"datasource"`
	GridPos     *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *grafanaSource `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// grafanaRanges are Grafana's built-in range variables; a query is parsed
// with each replaced by a duration.
var grafanaRanges = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")

// grafanaVariable is a dashboard variable in a query ($kind, ${kind}).
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// grafanaLabelValues is a query variable's label_values(<selector>, <label>).
var grafanaLabelValues = regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct{ where, expr string }

// checkDashboard returns what is wrong with the dashboard b: the fields
// Grafana needs, every panel answering a question (a title and a
// description) from the dashboard's Prometheus data source, every query
// parsing as PromQL, and every metric a query reads being one the manager
// registers (registered: names from its registry). It also returns the
// metrics the queries read.
func checkDashboard(t *testing.T, b []byte, registered map[string]bool) (problems []string, read map[string]bool) {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return []string{fmt.Sprintf("not JSON: %v", err)}, nil
	}
	read = map[string]bool{}
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		bad("the dashboard needs a uid, a title and a schemaVersion (has %q, %q, %d)", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{}
	sourceVar := ""
	var queries []dashboardQuery
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			var q string
			if json.Unmarshal(v.Query, &q) != nil || q != "prometheus" {
				bad("the data source variable %s does not pick a Prometheus data source", v.Name)
			}
			sourceVar = "${" + v.Name + "}"
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				bad("variable %s: %v", v.Name, err)
				continue
			}
			m := grafanaLabelValues.FindStringSubmatch(q.Query)
			if m == nil {
				bad("variable %s's query %q is not label_values(<metric>, <label>)", v.Name, q.Query)
				continue
			}
			queries = append(queries, dashboardQuery{"variable " + v.Name, m[1]})
		}
	}
	if sourceVar == "" {
		bad("the dashboard has no data source variable, so an importer cannot pick their Prometheus")
	}
	source := func(where string, s *grafanaSource) {
		if s == nil || s.Type != "prometheus" || s.UID != sourceVar {
			bad("%s does not read the dashboard's Prometheus data source %s (has %+v)", where, sourceVar, s)
		}
	}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if p.ID == 0 || ids[p.ID] {
				bad("%s has no id of its own", where)
			}
			ids[p.ID] = true
			if p.Title == "" || p.Type == "" || p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				bad("%s needs a title, a type and a gridPos", where)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Description == "" {
				bad("%s has no description saying what question it answers", where)
			}
			source(where, p.Datasource)
			if len(p.Targets) == 0 {
				bad("%s has no query", where)
			}
			for _, tg := range p.Targets {
				w := where + " query " + tg.RefID
				source(w, tg.Datasource)
				if tg.RefID == "" || tg.Expr == "" {
					bad("%s needs a refId and an expr", w)
				}
				queries = append(queries, dashboardQuery{w, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	if len(ids) == 0 {
		bad("the dashboard has no panels")
	}
	exprs := make([]string, len(queries))
	for i, q := range queries {
		exprs[i] = grafanaRanges.Replace(q.expr)
		for _, m := range grafanaVariable.FindAllStringSubmatch(exprs[i], -1) {
			if !vars[m[1]] {
				bad("%s uses $%s, which is no variable of the dashboard", q.where, m[1])
			}
		}
	}
	for i, p := range promqlParse(t, exprs) {
		q := queries[i]
		if p.Error != "" {
			bad("%s is not PromQL: %s (%s)", q.where, p.Error, q.expr)
			continue
		}
		if len(p.Metrics) == 0 {
			bad("%s reads no metric: %s", q.where, q.expr)
		}
		for _, m := range p.Metrics {
			read[m] = true
			if !registered[docsMetricBase(m, registered)] {
				bad("%s reads %s, which the manager does not export", q.where, m)
			}
		}
	}
	return problems, read
}

// dashboardQuestions are the operator's questions the dashboard must answer,
// each by the metric that answers it.
var dashboardQuestions = map[string]string{
	"Jobs by outcome":              "captf_jobs_total",
	"time to Ready, Job durations": "captf_job_duration_seconds_bucket",
	"queue depth":                  "workqueue_depth",
	"reconcile errors":             "controller_runtime_reconcile_errors_total",
	"lease waits":                  "captf_lease_waits_total",
	"drift found":                  "captf_drift_detected",
	"state size against the limit": "captf_state_bytes",
	"inputs size":                  "captf_inputs_bytes",
	"plan approvals":               "captf_plan_approvals_total",
}

// TestGrafanaDashboard: config/prometheus/dashboard.json is a dashboard
// Grafana imports (uid, title, panels with a data source and queries), every
// query is PromQL that reads only metrics on the manager's registry
// (CAPTF's collectors and controller-runtime's), and a panel answers each of
// the operator's questions.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docsRoot(t), "config", "prometheus", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	problems, read := checkDashboard(t, b, docsAllMetricNames(t))
	docsReport(t, problems, nil)
	var missing []string
	for q, m := range dashboardQuestions {
		if !read[m] {
			missing = append(missing, fmt.Sprintf("%s (%s)", q, m))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("no panel answers: %s", strings.Join(missing, ", "))
	}
}

// TestGrafanaDashboardCheckCatchesMistakes: the check reports a misspelt
// metric, a query that is not PromQL, an unknown variable and a panel
// without a data source.
func TestGrafanaDashboardCheckCatchesMistakes(t *testing.T) {
	registered := docsAllMetricNames(t)
	const board = `{"uid": "u", "title": "t", "schemaVersion": 39,
	 "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
	 "panels": [
	  {"id": 1, "type": "timeseries", "title": "a", "description": "q", "gridPos": {"h": 8, "w": 12, "x": 0, "y": 0},
	   "datasource": {"type": "prometheus", "uid": "${datasource}"},
	   "targets": [
	    {"refId": "A", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": "sum(rate(captf_jobs_totl[$__rate_interval]))"},
	    {"refId": "B", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": "sum(rate(captf_jobs_total[5m])"},
	    {"refId": "C", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": "captf_ready{kind=~\"$knd\"}"}]},
	  {"id": 2, "type": "timeseries", "title": "b", "description": "q", "gridPos": {"h": 8, "w": 12, "x": 12, "y": 0},
	   "targets": [{"refId": "A", "expr": "workqueue_depth"}]}]}`
	problems, _ := checkDashboard(t, []byte(board), registered)
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"reads captf_jobs_totl, which the manager does not export", "query B is not PromQL", "$knd", `panel 2 "b" does not read`} {
		if !strings.Contains(joined, want) {
			t.Errorf("no problem says %q; got:\n%s", want, joined)
		}
	}
}
