package scale

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestHarness runs the harness on a small fleet as a test of the harness
// itself: every machine reaches Ready through the real manager and the
// simulated executor, and the manager never runs two Jobs for one object at
// once nor applies a machine twice (book: The Reconcile Lifecycle, "at most
// one Job per object"). It asserts no time. CAPTF_SCALE_N changes the size.
func TestHarness(t *testing.T) {
	n := 100
	if v := os.Getenv("CAPTF_SCALE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CAPTF_SCALE_N=%q: %v", v, err)
		}
	}
	// The manager is built before the run's bound starts: its first build
	// on a machine takes minutes.
	bin := filepath.Join(t.TempDir(), "manager")
	if err := tools.Build(context.Background(), "./cmd/manager", bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{N: n, JobDelay: 500 * time.Millisecond, Logf: t.Logf, ManagerBinary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if res.Executor.Finished < int64(n+1) {
		t.Errorf("want at least %d Jobs (the cluster and each machine applied), the executor finished %d", n+1, res.Executor.Finished)
	}
	if len(res.Executor.MultiApply) > 0 {
		t.Errorf("objects applied more than once: %v", res.Executor.MultiApply)
	}
	if res.Executor.Failures > 0 {
		t.Logf("the executor retried %d times; last error: %s", res.Executor.Failures, res.Executor.LastError)
	}
	t.Logf("%s", res.RequestTable())
	t.Logf("%s", res.EventTable())
	t.Logf("%d machines Ready in %.1fs, %d Jobs, %.1f TerraformMachine passes per machine, manager peak RSS %.0f MiB, reaction p50/p95/p99 %.0f/%.0f/%.0f ms (%d samples)",
		n, res.AllReadySeconds, res.Jobs, res.Reconciles/float64(n), res.PeakRSSMiB, res.P50Ms, res.P95Ms, res.P99Ms, res.Samples)
}

// BenchmarkReaction measures CAPTF's reaction time on a manager that is not
// saturated: 60 machines created one every 250 ms, each Job running 1 s, so
// the manager waits for work rather than work for the manager. It reports
// the percentiles of the time from a Job finished to the machine's next
// step seen (reaction.go) over every Job of the bring-up. make
// bench-reaction runs it once (-benchtime 1x); CAPTF_SCALE_MANAGER names a
// manager built beforehand.
func BenchmarkReaction(b *testing.B) {
	const n = 100
	bin := os.Getenv("CAPTF_SCALE_MANAGER")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "manager")
		if err := tools.Build(context.Background(), "./cmd/manager", bin); err != nil {
			b.Fatal(err)
		}
	}
	var samples []time.Duration
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		// etcd's data on a tmpfs where there is one, as for make scale:
		// the figure is the manager's reaction, not the disk's fsync.
		dir, err := os.MkdirTemp(tmpfsOr(os.TempDir()), "captf-reaction-")
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(ctx, Config{N: n, JobDelay: time.Second, Pace: 250 * time.Millisecond, ManagerBinary: bin, Logf: b.Logf, Dir: dir})
		cancel()
		_ = os.RemoveAll(dir)
		if err != nil {
			b.Fatal(err)
		}
		if res.Samples < 50 {
			b.Fatalf("%d reaction samples from %d machines (%d finished Jobs without a next step), want at least 50", res.Samples, n, res.Unpaired)
		}
		samples = append(samples, res.reactionSamples...)
	}
	b.StopTimer()
	ms := func(p float64) float64 { return percentile(samples, p) / float64(time.Millisecond) }
	b.ReportMetric(ms(50), "p50-ms")
	b.ReportMetric(ms(95), "p95-ms")
	b.ReportMetric(ms(99), "p99-ms")
	b.ReportMetric(float64(len(samples)), "samples")
	// ns/op is a whole run's time: not a figure of CAPTF's.
	b.ReportMetric(0, "ns/op")
}

// tmpfsOr is /dev/shm when it is a writable folder, else dir.
func tmpfsOr(dir string) string {
	if f, err := os.CreateTemp("/dev/shm", "captf-probe-"); err == nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return "/dev/shm"
	}
	return dir
}
