// Command scale runs the scale harness (package test/scale) for each N of
// -n, merges each result into docs/book/operator-guide/scale-results.json
// and rewrites the Scale page's table and plots from every result there.
// make scale N=... runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/scale"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func main() {
	ns := flag.String("n", "100", "comma-separated fleet sizes (TerraformMachines), run in order")
	delay := flag.Duration("job-delay", 2*time.Second, "how long each simulated Job runs")
	settle := flag.Duration("settle", 30*time.Second, "wait after all Ready before the steady window")
	steadyStart := flag.Duration("steady-start", 0, "start the steady window no sooner than this long after the run's start (past the drift interval, it measures drift checks running)")
	steady := flag.Duration("steady", 3*time.Minute, "steady window measured with every machine Ready")
	managerArgs := flag.String("manager-args", "", "extra manager flags, space-separated")
	managerEnv := flag.String("manager-env", "", "environment variables of the manager process alone, space-separated KEY=VALUE (e.g. GOMEMLIMIT=1350MiB for a container limit of 1.5 GiB)")
	docs := flag.Bool("docs", true, "write the results file, table and plots under docs/book/operator-guide")
	keep := flag.String("keep", "", "keep each run's environment (logs) under this folder")
	timeout := flag.Duration("timeout", 0, "bound on each bring-up (default 10m + 200ms per machine); a run that times out is recorded as incomplete with its figures so far")
	managerBin := flag.String("manager-bin", "", "a manager binary built beforehand, used by every run (default: each run builds cmd/manager)")
	batch := flag.Int("batch", 100, "machines created per batch; the next batch is created a second later, while earlier machines run their Jobs")
	pace := flag.Duration("pace", 0, "create the machines one at a time, this far apart (e.g. 200ms), instead of in batches: a manager that is not saturated, for reaction times")
	shards := flag.Int("shards", 1, "managers run against the one API server, manager i with --watch-filter=scale-shard-<i>, the machines split evenly among K Clusters")
	merge := flag.String("merge", "", "instead of running, merge the results files listed (comma-separated) into the page's and rewrite the table and plots")
	flag.Parse()
	if *merge != "" {
		if err := mergeFiles(strings.Split(*merge, ",")); err != nil {
			fmt.Fprintf(os.Stderr, "scale: %v\n", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *shards < 1 {
		fmt.Fprintf(os.Stderr, "scale: -shards %d: at least one manager runs\n", *shards)
		os.Exit(2)
	}
	opts := options{delay: *delay, settle: *settle, steadyStart: *steadyStart, steady: *steady, extra: strings.Fields(*managerArgs), env: strings.Fields(*managerEnv), docs: *docs,
		keep: *keep, timeout: *timeout, batch: *batch, managerBin: *managerBin, pace: *pace, shards: *shards}
	if err := run(ctx, *ns, opts); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		os.Exit(1)
	}
}

// options are the flags of a run.
type options struct {
	delay, settle, steadyStart, steady, timeout, pace time.Duration
	extra, env                                        []string
	docs                                              bool
	keep, managerBin                                  string
	batch, shards                                     int
}

func run(ctx context.Context, list string, o options) error {
	root, err := tools.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "docs", "book", "operator-guide")
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a fleet size", f)
		}
		cfg := scale.Config{N: n, JobDelay: o.delay, Timeout: o.timeout, Settle: o.settle, SteadyStart: o.steadyStart, Steady: o.steady, ManagerArgs: o.extra, ManagerEnv: o.env,
			Batch: o.batch, ManagerBinary: o.managerBin, Pace: o.pace, Shards: o.shards,
			Logf: func(format string, args ...any) { fmt.Printf("N=%d: %s\n", n, fmt.Sprintf(format, args...)) }}
		if o.keep != "" {
			name := "n" + strconv.Itoa(n)
			if o.shards > 1 {
				name += "-shards" + strconv.Itoa(o.shards)
			}
			if o.pace > 0 {
				name += "-pace" + o.pace.String()
			}
			cfg.Dir = filepath.Join(o.keep, name)
		}
		res, err := scale.Run(ctx, cfg)
		var runErr error
		switch {
		case errors.Is(err, scale.ErrTimeout):
			fmt.Printf("N=%d: %v; recording the figures so far\n", n, err)
		case err != nil && res.Complete:
			// The fleet came up but a check failed (duplicate Jobs,
			// a manager outside its shard): the figures are printed,
			// and the run fails.
			runErr = fmt.Errorf("run of %d machines: %w", n, err)
		case err != nil:
			return fmt.Errorf("run of %d machines: %w", n, err)
		}
		fmt.Println(summary(res))
		if cfg.Dir != "" {
			// The run's own results file, for -merge (and, for a run
			// that failed a check, to look at).
			if err := scale.SaveResults(filepath.Join(cfg.Dir, scale.ResultsFile), []scale.Result{*res}); err != nil {
				return err
			}
		}
		if runErr != nil {
			return runErr
		}
		if m := res.Executor.MultiApply; len(m) > 0 {
			fmt.Printf("N=%d: %d objects applied more than once (the harness test fails on this): %v\n", n, len(m), m[:min(len(m), 10)])
		}
		if res.Complete {
			fmt.Print(res.RequestTable())
			fmt.Print(res.EventTable())
		}
		if !o.docs {
			continue
		}
		path := filepath.Join(dir, scale.ResultsFile)
		rs, err := scale.LoadResults(path)
		if err != nil {
			return err
		}
		rs = scale.MergeResult(rs, *res)
		if err := scale.SaveResults(path, rs); err != nil {
			return err
		}
		if err := scale.WriteDocs(dir, rs); err != nil {
			return err
		}
	}
	return nil
}

// summary is the one line a run prints.
func summary(r *scale.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "N=%d: ", r.N)
	if r.Shards > 1 {
		fmt.Fprintf(&b, "%d shards, ", r.Shards)
	}
	if r.PaceSeconds > 0 {
		fmt.Fprintf(&b, "paced %s, ", time.Duration(r.PaceSeconds*float64(time.Second)))
	}
	fmt.Fprintf(&b, "ready in %.1fs, %.1f Jobs/s, peak RSS %.0f MiB, steady RSS %.0f MiB, steady heap %.0f MiB, bring-up CPU %.0f ms per Job, %.0f passes, steady CPU %.3f cores, reconcile p50/p95/p99 %.3f/%.3f/%.3f s, max queue %.0f",
		r.AllReadySeconds, r.JobsPerSecond, r.PeakRSSMiB, r.SteadyRSSMiB, r.SteadyHeapMiB, r.CPUPerJobMilli, r.Reconciles, r.SteadyCPU,
		r.ReconcileP50, r.ReconcileP95, r.ReconcileP99, r.MaxQueue)
	if r.Samples > 0 {
		fmt.Fprintf(&b, ", reaction p50/p95/p99 %.0f/%.0f/%.0f ms (%d samples)", r.P50Ms, r.P95Ms, r.P99Ms, r.Samples)
	} else {
		b.WriteString(", reaction not measured (no samples)")
	}
	if r.Unpaired > 0 {
		fmt.Fprintf(&b, ", %d finished Jobs without a next step", r.Unpaired)
	}
	for _, m := range r.Managers {
		fmt.Fprintf(&b, "; %s (%s): peak RSS %.0f MiB, bring-up CPU %.2f cores, %.0f passes (%d in its log), cross-shard passes %d, events %d",
			m.Name, m.WatchFilter, m.PeakRSSMiB, m.BringUpCPU, m.Reconciles, m.LoggedPasses, m.CrossShardPasses, m.CrossShardEvents)
	}
	if r.Shards > 1 {
		fmt.Fprintf(&b, "; crossShardPasses %d", r.CrossShardPasses)
	}
	return b.String()
}

func mergeFiles(files []string) error {
	root, err := tools.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "docs", "book", "operator-guide")
	path := filepath.Join(dir, scale.ResultsFile)
	rs, err := scale.LoadResults(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		more, err := scale.LoadResults(f)
		if err != nil {
			return err
		}
		for _, r := range more {
			rs = scale.MergeResult(rs, r)
		}
	}
	if err := scale.SaveResults(path, rs); err != nil {
		return err
	}
	return scale.WriteDocs(dir, rs)
}
