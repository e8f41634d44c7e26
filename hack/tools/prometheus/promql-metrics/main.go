// Command promql-metrics parses PromQL expressions with Prometheus's own
// parser (the one promtool and the Prometheus server use) and names the
// metrics each one reads. CAPTF's tests run it over the alert rules and the
// Grafana dashboard's queries, to check that every expression is valid PromQL
// and reads only metrics the manager exports.
//
// It reads a JSON array of expressions on stdin and writes a JSON array with
// one object per expression, in the same order:
//
//	{"metrics": ["captf_jobs_total", ...]}   the metric names it selects, sorted
//	{"error": "..."}                          the parser's error
//
// A selector that does not name its metric with a plain name or an equality
// matcher on __name__ is reported as an error: its metrics cannot be known.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Metrics []string `json:"metrics,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintf(os.Stderr, "promql-metrics: stdin is not a JSON array of strings: %v\n", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]result, 0, len(exprs))
	for _, e := range exprs {
		out = append(out, names(p, e))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "promql-metrics: %v\n", err)
		os.Exit(1)
	}
}

// names parses expr and collects the metric name of every vector selector in
// it (range selectors and subqueries included).
func names(p parser.Parser, expr string) result {
	ast, err := p.ParseExpr(expr)
	if err != nil {
		return result{Error: err.Error()}
	}
	var metrics []string
	var unnamed error
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" && unnamed == nil {
			unnamed = fmt.Errorf("the selector %s names no metric", vs.String())
		}
		if name != "" && !slices.Contains(metrics, name) {
			metrics = append(metrics, name)
		}
		return nil
	})
	if unnamed != nil {
		return result{Error: unnamed.Error()}
	}
	slices.Sort(metrics)
	return result{Metrics: metrics}
}
