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
	docs := flag.Bool("docs", true, "write the results file, table and plots under docs/book/operator-guide")
	keep := flag.String("keep", "", "keep each run's environment (logs) under this folder")
	timeout := flag.Duration("timeout", 0, "bound on each bring-up (default 10m + 200ms per machine); a run that times out is recorded as incomplete with its figures so far")
	managerBin := flag.String("manager-bin", "", "a manager binary built beforehand, used by every run (default: each run builds cmd/manager)")
	batch := flag.Int("batch", 100, "machines created per batch; the next batch is created a second later, while earlier machines run their Jobs")
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
	if err := run(ctx, *ns, *delay, *settle, *steadyStart, *steady, strings.Fields(*managerArgs), *docs, *keep, *timeout, *batch, *managerBin); err != nil {
		fmt.Fprintf(os.Stderr, "scale: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, list string, delay, settle, steadyStart, steady time.Duration, extra []string, docs bool, keep string, timeout time.Duration, batch int, managerBin string) error {
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
		cfg := scale.Config{N: n, JobDelay: delay, Timeout: timeout, Settle: settle, SteadyStart: steadyStart, Steady: steady, ManagerArgs: extra, Batch: batch, ManagerBinary: managerBin,
			Logf: func(format string, args ...any) { fmt.Printf("N=%d: %s\n", n, fmt.Sprintf(format, args...)) }}
		if keep != "" {
			cfg.Dir = filepath.Join(keep, "n"+strconv.Itoa(n))
		}
		res, err := scale.Run(ctx, cfg)
		switch {
		case errors.Is(err, scale.ErrTimeout):
			fmt.Printf("N=%d: %v; recording the figures so far\n", n, err)
		case err != nil:
			return fmt.Errorf("run of %d machines: %w", n, err)
		}
		fmt.Printf("N=%d: ready in %.1fs, %.1f Jobs/s, peak RSS %.0f MiB, steady RSS %.0f MiB, steady heap %.0f MiB, bring-up CPU %.0f ms per Job, %.0f passes, steady CPU %.3f cores, reconcile p50/p95/p99 %.3f/%.3f/%.3f s, max queue %.0f\n",
			n, res.AllReadySeconds, res.JobsPerSecond, res.PeakRSSMiB, res.SteadyRSSMiB, res.SteadyHeapMiB, res.CPUPerJobMilli, res.Reconciles, res.SteadyCPU,
			res.ReconcileP50, res.ReconcileP95, res.ReconcileP99, res.MaxQueue)
		if cfg.Dir != "" {
			// The run's own results file, for -merge.
			if err := scale.SaveResults(filepath.Join(cfg.Dir, scale.ResultsFile), []scale.Result{*res}); err != nil {
				return err
			}
		}
		if m := res.Executor.MultiApply; len(m) > 0 {
			fmt.Printf("N=%d: %d objects applied more than once (the harness test fails on this): %v\n", n, len(m), m[:min(len(m), 10)])
		}
		if res.Complete {
			fmt.Print(res.RequestTable())
			fmt.Print(res.EventTable())
		}
		if !docs {
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
