package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// ruleFileName is the name config/prometheus/tests/*.yaml load the alert
// rules under (rule_files), relative to the test file.
const ruleFileName = "captf-rules.yaml"

// writeRuleFile writes the spec of config/prometheus/rules.yaml (a
// PrometheusRule) as the plain rule file Prometheus and promtool read into
// dir, and returns its alert names.
func writeRuleFile(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatalf("config/prometheus/rules.yaml: %v", err)
	}
	var spec struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(pr.Spec, &spec); err != nil {
		t.Fatalf("the spec of config/prometheus/rules.yaml: %v", err)
	}
	var alerts []string
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	out, err := yaml.JSONToYAML(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ruleFileName), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return alerts
}

// promtool runs the pinned promtool with args in dir and fails the test,
// with promtool's report, when it does not exit 0.
func promtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	p, err := tools.Path("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out.String())
}

// TestPrometheusRulesCheck: Prometheus's own rule checker accepts the alert
// rules the PrometheusRule ships (every expression parses, every template
// renders, no rule is duplicated), its linter included.
func TestPrometheusRulesCheck(t *testing.T) {
	dir := t.TempDir()
	if alerts := writeRuleFile(t, dir); len(alerts) == 0 {
		t.Fatal("config/prometheus/rules.yaml holds no alert")
	}
	promtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", ruleFileName)
}

// alertTests is what TestPrometheusRulesUnitTests reads of a promtool test
// file.
type alertTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name  string `json:"name"`
		Cases []struct {
			EvalTime  string            `json:"eval_time"`
			Alertname string            `json:"alertname"`
			ExpAlerts []json.RawMessage `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestPrometheusRulesUnitTests runs promtool's unit tests of the alerts
// (config/prometheus/tests) and checks that they test every alert both
// ways: for each alert some evaluation expects it firing and some expects it
// silent while series near its threshold or its for: are present.
func TestPrometheusRulesUnitTests(t *testing.T) {
	dir := t.TempDir()
	alerts := writeRuleFile(t, dir)
	files, err := filepath.Glob(filepath.Join(root, "config", "prometheus", "tests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("config/prometheus/tests holds no promtool test file")
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var at alertTests
		if err := yaml.Unmarshal(b, &at); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !slices.Equal(at.RuleFiles, []string{ruleFileName}) {
			t.Errorf("%s loads the rule files %v, want [%s]", f, at.RuleFiles, ruleFileName)
		}
		for _, tg := range at.Tests {
			for _, c := range tg.Cases {
				if len(c.ExpAlerts) > 0 {
					fires[c.Alertname] = true
				} else {
					silent[c.Alertname] = true
				}
			}
		}
		name := filepath.Base(f)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	for _, a := range alerts {
		if !fires[a] {
			t.Errorf("no promtool test expects %s to fire", a)
		}
		if !silent[a] {
			t.Errorf("no promtool test expects %s to stay silent", a)
		}
	}
	promtool(t, dir, append([]string{"test", "rules"}, names...)...)
}
