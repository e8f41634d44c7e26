package e2e

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// partition is how long a partitioned manager stays cut off.
const partition = 60 * time.Second

// maxCutRate bounds the requests per second a manager cut off from the API
// server (or throttled) may try: its informers and workers back off, so it
// tries a few per second (3 on a quiet machine, 12 beside make test); a
// tight retry loop tries thousands.
const maxCutRate = 50

// TestFaultManagerPartitioned cuts the manager off from the API server for
// a minute (every request fails, every watch breaks) from the moment the
// machine's apply is held; the hold is released at once, so the Job runs
// on and succeeds while the manager cannot see it. On reconnect the
// manager books that Job once, and the bring-up converges with the Jobs
// the book predicts. While cut off, the manager retries with backoff.
func TestFaultManagerPartitioned(t *testing.T) {
	t.Parallel()
	b, ctx := startHeldFaultScenario(t, 46, "TerraformMachine")
	held := b.heldRun(ctx, "apply")
	b.faults.Cut()
	cut := time.Now()
	t.Logf("cut the manager off from the API server, Job %s held", held.job.Name)
	b.hold.Release()
	b.partitioned(ctx, held, cut, b.faults)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// partitioned waits, while the manager is cut off, for the held Job to
// succeed, checks it is not yet booked (no manager of the scenario could
// see it), lets the partition last its minute and mends it, checking the
// rate of requests tried meanwhile.
func (b *faultBringUp) partitioned(ctx context.Context, held heldRun, cut time.Time, f *framework.Faults) {
	t := b.w.t
	j := &batchv1.Job{}
	b.w.eventually(ctx, partition, "Job "+held.job.Name+" to succeed while the manager is cut off", func() (bool, string) {
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.job), j); err != nil {
			return false, err.Error()
		}
		return j.Status.Succeeded == 1, "not succeeded yet"
	})
	t.Logf("Job %s succeeded %v after the cut", j.Name, time.Since(cut).Round(time.Second))
	time.Sleep(time.Until(cut.Add(partition)))
	n := f.Mend()
	rate := float64(n) / time.Since(cut).Seconds()
	t.Logf("mended the partition after %v: the manager tried %d requests while cut off (%.1f/s)", time.Since(cut).Round(time.Second), n, rate)
	if rate > maxCutRate {
		t.Errorf("the cut-off manager tried %.1f requests/s, want at most %d: a retry loop without backoff", rate, maxCutRate)
	}
	if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.job), j); err != nil {
		t.Fatal(err)
	}
	if j.Annotations[infrav1.BookkeptAnnotation] == "true" && f == b.faults {
		t.Errorf("Job %s was booked while its only manager was cut off", j.Name)
	}
}
