package verify

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// promqlParsed is what Prometheus's PromQL parser says of one expression:
// the metrics its selectors read, or why it does not parse.
type promqlParsed struct {
	Metrics []string `json:"metrics"`
	Error   string   `json:"error"`
}

// promqlParse parses each expression with Prometheus's own parser (the
// pinned promql-metrics, built with promtool from the same module) and
// returns what it found, in order.
func promqlParse(t *testing.T, exprs []string) []promqlParsed {
	t.Helper()
	bin, err := tools.Path("promql-metrics")
	if err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promql-metrics: %v\n%s", err, stderr.String())
	}
	var parsed []promqlParsed
	if err := json.Unmarshal(out, &parsed); err != nil {
		t.Fatalf("promql-metrics wrote %q: %v", out, err)
	}
	if len(parsed) != len(exprs) {
		t.Fatalf("promql-metrics answered %d of %d expressions", len(parsed), len(exprs))
	}
	return parsed
}
