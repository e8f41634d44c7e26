package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestQuickStart follows the book's Quick Start on the local environment,
// through the same code as `make quickstart`: an identity, then the default
// flavor with one control-plane machine and no workers on the no-op images.
// The TerraformCluster and the control-plane TerraformMachine reach
// Ready=True and the Cluster and Machine reach phase Provisioned.
func TestQuickStart(t *testing.T) {
	w := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	q := framework.QuickStart{Root: root(t), Client: w.c, Images: w.images, Namespace: "team-a", Cluster: "my-cluster"}
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute)
	var table strings.Builder
	framework.Table(&table, rows)
	t.Log("\n" + table.String())
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start did not finish: %s", why)
	}

	// Once converged, reconciles decide nothing and so write nothing:
	// Cluster API's own status updates still wake them for a while.
	before := w.writes.Count()
	time.Sleep(30 * time.Second)
	if n := w.writes.Count() - before; n != 0 {
		t.Errorf("the manager made %d API writes in 30 s after convergence, want 0", n)
	} else {
		t.Logf("API writes in the 30 s after convergence: 0 (%d in the whole bring-up)", before)
	}

	// The manager in this process counted the Jobs and reports Ready.
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	succeeded, ready := 0.0, -2.0
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "captf_jobs_total":
				if labels["result"] == "succeeded" {
					succeeded += m.GetCounter().GetValue()
				}
			case "captf_ready":
				if labels["kind"] == "TerraformCluster" && labels["name"] == "my-cluster" {
					ready = m.GetGauge().GetValue()
				}
			}
		}
	}
	if succeeded < 2 || ready != 1 {
		t.Fatalf("captf_jobs_total{result=succeeded} = %v (want at least the cluster's and the machine's apply), captf_ready = %v (want 1)", succeeded, ready)
	}
}

// testWriter sends output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
