package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

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
}

// testWriter sends output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
