package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestQuickStart follows the book's Quick Start on the local environment,
// through the same code as `make quickstart`: an identity, then the default
// flavor with one control-plane machine and no workers on the no-op images.
// The TerraformCluster and the control-plane TerraformMachine reach
// Ready=True and the Cluster and Machine reach phase Provisioned.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	w := start(t, "team-a")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	q := w.quickStart()
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
	w.checkRuntime(ctx, tools.OpenTofu)
	w.logJobTimes(ctx, tools.OpenTofu)

	// Once converged, reconciles decide nothing and so write nothing:
	// touch the objects twice, so that each TerraformCluster and
	// TerraformMachine is reconciled at least twice more (Cluster API's own
	// status updates wake them too).
	touch := []client.Object{&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "my-cluster"}}}
	var watch []framework.Object
	var tcs infrav1.TerraformClusterList
	var tms infrav1.TerraformMachineList
	if err := errors.Join(w.c.List(ctx, &tcs, client.InNamespace(w.ns)), w.c.List(ctx, &tms, client.InNamespace(w.ns))); err != nil {
		t.Fatal(err)
	}
	for i := range tcs.Items {
		touch = append(touch, &tcs.Items[i])
		watch = append(watch, w.obj("TerraformCluster", tcs.Items[i].Name))
	}
	for i := range tms.Items {
		touch = append(touch, &tms.Items[i])
		watch = append(watch, w.obj("TerraformMachine", tms.Items[i].Name))
	}
	writes, none := w.settle(ctx, 2, touch, watch)
	if len(writes) != 0 {
		t.Errorf("the manager made %d API writes in %s after convergence, over %d reconciles that decided nothing; want 0: %v", len(writes), w.ns, none, writes)
	} else {
		t.Logf("API writes in %s by %d converged reconciles of %d objects: 0", w.ns, none, len(watch))
	}
	if none < len(watch) {
		t.Errorf("%d reconciles decided nothing after the objects were touched, want at least one per object", none)
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
				if labels["kind"] == "TerraformCluster" && labels["namespace"] == w.ns && labels["name"] == "my-cluster" {
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
