package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// Config is one harness run.
type Config struct {
	// N is the number of TerraformMachines.
	N int
	// JobDelay is how long each Job "runs" before the executor finishes it.
	JobDelay time.Duration
	// ExecutorWorkers finish Jobs at once.
	ExecutorWorkers int
	// Batch is how many machines are created before a pause (default 100),
	// CreateWorkers how many creates run at once (default 8) and
	// BatchPause the pause between batches (default 1s): machines are
	// created while earlier ones run their Jobs, as a fleet grows.
	Batch         int
	CreateWorkers int
	BatchPause    time.Duration
	// Pace, when set, creates the machines one at a time, Pace apart,
	// instead of in batches, from the moment every Cluster is provisioned
	// (machines created earlier would wait for it and start their Jobs
	// together): a fleet that grows slowly enough to leave the manager
	// idle between machines, where reaction times are the manager's own
	// and not a queue's.
	Pace time.Duration
	// Shards is how many managers run against the one API server (default
	// 1). With K > 1, manager i runs with --watch-filter=ShardFilter(i),
	// the fleet has K Clusters (scale-<i>, each with its TerraformCluster)
	// and the N machines are dealt to them in turn, every object labeled
	// for its shard.
	Shards int
	// Settle is the wait after all are Ready before the steady window;
	// the window then also waits for the managers' TerraformMachine
	// workqueues to drain (the passes the bring-up queued), up to
	// DrainTimeout (default 20 minutes).
	Settle       time.Duration
	DrainTimeout time.Duration
	// SteadyStart, when set, holds the steady window back until this long
	// after the run's start: past the drift interval, the window measures
	// drift checks running.
	SteadyStart time.Duration
	// Steady is the measured window with every machine Ready (0: none).
	Steady time.Duration
	// Timeout bounds the bring-up.
	Timeout time.Duration
	// ManagerBinary is a manager built beforehand (default: built from
	// cmd/manager at the start of the run).
	ManagerBinary string
	// ManagerArgs are extra manager flags (after the harness's own).
	ManagerArgs []string
	// ManagerEnv are environment variables (KEY=VALUE) of the manager
	// process alone, e.g. GOMEMLIMIT standing for a container's memory
	// limit.
	ManagerEnv []string
	// Dir keeps the environment (logs) when set; default a temporary
	// folder removed at the end.
	Dir string
	// HostileSecrets, when set, is how many 1 MiB Secrets a hostile
	// tenant labels captf.io/managed=true in the fleet's namespace, and
	// Bomb adds the tenant's TerraformMachine whose state is a gzip bomb
	// (hostile.go): what the manager must hold no more memory for.
	HostileSecrets int
	Bomb           bool
	// Logf reports progress (default: nothing).
	Logf func(format string, args ...any)
}

// Result is what a run measured. Durations are in seconds, memory in MiB.
// With more than one shard, memory figures are the largest manager's, CPU
// figures and reconcile counts the sum over the managers, and Managers
// holds each manager's.
type Result struct {
	N               int      `json:"n"`
	When            string   `json:"when"`
	Machine         string   `json:"machine"`
	LoadBefore      string   `json:"loadBefore"`
	ManagerFlags    []string `json:"managerFlags"`
	ManagerEnv      []string `json:"managerEnv,omitempty"`
	JobDelaySeconds float64  `json:"jobDelaySeconds"`
	// Shards is how many managers ran, each on its own shard of the fleet
	// (0 in results recorded before shards: one). PaceSeconds is the
	// paced mode's interval between machines (0: batches).
	Shards      int     `json:"shards"`
	PaceSeconds float64 `json:"paceSeconds,omitempty"`

	// Complete is false when the bring-up timed out; ReadyAtEnd is how
	// many machines were Ready then, and the figures cover the run so far.
	Complete   bool `json:"complete"`
	ReadyAtEnd int  `json:"readyAtEnd"`

	CreateSeconds   float64 `json:"createSeconds"`
	AllReadySeconds float64 `json:"allReadySeconds"`
	Jobs            int64   `json:"jobs"`
	JobsPerSecond   float64 `json:"jobsPerSecond"`

	PeakRSSMiB    float64 `json:"peakRssMiB"`
	SteadyRSSMiB  float64 `json:"steadyRssMiB"`
	PeakHeapMiB   float64 `json:"peakHeapMiB"`
	SteadyHeapMiB float64 `json:"steadyHeapMiB"`
	BringUpCPU    float64 `json:"bringUpCpuCores"`
	SteadyCPU     float64 `json:"steadyCpuCores"`
	SteadySeconds float64 `json:"steadySeconds"`
	// DrainSeconds is the time from all Ready to the steady window's
	// start: the settle wait and the workqueue's drain; Drained says the
	// queue emptied before the window.
	DrainSeconds   float64 `json:"drainSeconds"`
	Drained        bool    `json:"drained"`
	SteadyJobs     int64   `json:"steadyJobs"`
	CPUPerJobMilli float64 `json:"cpuMsPerJob"`

	ReconcileP50 float64 `json:"reconcileP50Seconds"`
	ReconcileP95 float64 `json:"reconcileP95Seconds"`
	ReconcileP99 float64 `json:"reconcileP99Seconds"`
	Reconciles   float64 `json:"reconciles"`
	MaxQueue     float64 `json:"maxWorkqueueDepth"`
	SteadyP99    float64 `json:"steadyReconcileP99Seconds"`

	// Reaction is the time from a machine's Job finished to its next step
	// seen (reaction.go), over the Jobs finished during the bring-up;
	// reactionSamples are the samples themselves (not recorded).
	Reaction
	reactionSamples []time.Duration

	// Requests per second by "VERB resource" over the bring-up and the
	// steady window (API server's apiserver_request_total; includes the
	// executor's stand-in writes).
	BringUpRequests map[string]float64 `json:"bringUpRequestsPerSecond"`
	SteadyRequests  map[string]float64 `json:"steadyRequestsPerSecond"`
	// Request counts over the bring-up by "VERB resource": all of the API
	// server's, and the harness's own (executor, fleet creation, Cluster
	// API's stand-in, readiness watch) counted on its client side.
	BringUpRequestCounts map[string]float64 `json:"bringUpRequestCounts,omitempty"`
	HarnessRequestCounts map[string]float64 `json:"harnessRequestCounts,omitempty"`
	// Events recorded over the bring-up by "Type Reason": the events
	// (each a create) and their repeats (series, each first repeat a
	// patch), read from the API server after every machine was Ready.
	Events map[string]EventCount `json:"events,omitempty"`

	// Managers are each manager's figures in a sharded run.
	Managers []ManagerResult `json:"managers,omitempty"`
	// CrossShardPasses and CrossShardEvents add up the managers': a
	// sharded run whose managers kept to their shards has both 0.
	CrossShardPasses int `json:"crossShardPasses"`
	CrossShardEvents int `json:"crossShardEvents"`

	Executor ExecutorStats `json:"executor"`
}

func (c *Config) defaults() {
	if c.JobDelay == 0 {
		c.JobDelay = 2 * time.Second
	}
	if c.ExecutorWorkers == 0 {
		c.ExecutorWorkers = 16
	}
	if c.Batch == 0 {
		c.Batch = 100
	}
	if c.CreateWorkers == 0 {
		c.CreateWorkers = 8
	}
	if c.BatchPause == 0 {
		c.BatchPause = time.Second
	}
	if c.Shards < 1 {
		c.Shards = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 10*time.Minute + time.Duration(c.N)*(200*time.Millisecond+c.Pace)
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// ManagerFlags are the manager flags of a run: the defaults but for what
// the harness needs (no webhooks, metrics over plain HTTP on addr, no
// health server, a runner image that is never pulled), then extra.
func ManagerFlags(metricsAddr string, extra []string) []string {
	return append([]string{
		"--webhook-port=0",
		"--diagnostics-address=" + metricsAddr, "--insecure-diagnostics",
		"--health-addr=0",
		"--runner-image=" + runnerImage,
	}, extra...)
}

// Run brings the environment up, creates the fleet, drives it to Ready and
// measures. The returned Result is filled as far as the run got.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	// controller-runtime's envtest helpers log through its global logger.
	ctrl.SetLogger(logr.Discard())
	res := &Result{N: cfg.N, When: time.Now().UTC().Format(time.RFC3339), Machine: machine(), LoadBefore: loadavg(),
		JobDelaySeconds: cfg.JobDelay.Seconds(), Shards: cfg.Shards, PaceSeconds: cfg.Pace.Seconds()}
	lay := layout{shards: cfg.Shards}
	if cfg.N < cfg.Shards {
		return res, fmt.Errorf("%d machines cannot be split into %d shards", cfg.N, cfg.Shards)
	}
	root, err := tools.RepoRoot()
	if err != nil {
		return res, err
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "captf-scale-"); err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
	}
	build := filepath.Join(dir, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return res, err
	}
	managerBin := cfg.ManagerBinary
	if managerBin == "" {
		managerBin = filepath.Join(build, "manager")
		if err := tools.Build(ctx, "./cmd/manager", managerBin); err != nil {
			return res, fmt.Errorf("failed to build the manager: %w", err)
		}
	}
	crds, err := framework.RenderedCRDs(root, build)
	if err != nil {
		return res, err
	}
	cfg.Logf("starting etcd and kube-apiserver")
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	e, err := env.Start(startCtx, env.Options{Dir: filepath.Join(dir, "env"), KeepDir: true})
	if err != nil {
		return res, err
	}
	defer func() { _ = e.Stop() }()
	sets, err := capi.CRDs()
	if err != nil {
		return res, err
	}
	sets = append(sets, capi.CRDSet{Path: crds})
	if err := capi.InstallCRDSets(e.Config, sets...); err != nil {
		return res, err
	}
	counter := &requestCounter{}
	harnessConfig := counter.wrap(e.Config)
	cs, c, err := clients(harnessConfig)
	if err != nil {
		return res, err
	}
	if err := framework.RunnerClusterRole(ctx, root, c); err != nil {
		return res, err
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	reactions := &reactionLog{}
	x := &Executor{Client: cs, Delay: cfg.JobDelay, Workers: cfg.ExecutorWorkers, reactions: reactions}
	if err := x.Run(runCtx); err != nil {
		return res, err
	}
	mgrs, err := startManagers(runCtx, e, managerBin, lay, cfg.ManagerArgs, cfg.ManagerEnv)
	if err != nil {
		return res, err
	}
	res.ManagerFlags = mgrs[0].flags
	res.ManagerEnv = cfg.ManagerEnv
	exited := make(chan *manager, len(mgrs))
	for _, m := range mgrs {
		go func() {
			select {
			case <-m.proc.Exited():
				exited <- m
			case <-runCtx.Done():
			}
		}()
	}

	apiStart, err := scrapeAPIServer(ctx, cs)
	if err != nil {
		return res, err
	}
	harnessStart := counter.snapshot()
	view, err := fleetView(runCtx, harnessConfig, c, reactions)
	if err != nil {
		return res, err
	}
	start := time.Now()
	for _, m := range mgrs {
		m.cpuStart, _ = readProc(m.proc.Pid())
	}
	if cfg.Pace > 0 {
		cfg.Logf("creating %d cluster(s) and %d machines (one every %s)", cfg.Shards, cfg.N, cfg.Pace)
	} else {
		cfg.Logf("creating %d cluster(s) and %d machines (batches of %d)", cfg.Shards, cfg.N, cfg.Batch)
	}
	if err := createShared(ctx, c); err != nil {
		return res, err
	}
	for i, name := range lay.clusters() {
		if err := createCluster(ctx, c, name, lay.labels(i)); err != nil {
			return res, err
		}
	}
	// Cluster API's part: each Cluster is marked provisioned as soon as
	// its TerraformCluster is, while machines are still being created, so
	// machines flow through their Jobs from the first batch on.
	clustersUp, marked := make(chan struct{}), 0
	provisioned := provisioner(runCtx, c, view, lay.clusters(), func(name string) {
		cfg.Logf("%s: Cluster %s marked provisioned", time.Since(start).Round(time.Second), name)
		if marked++; marked == lay.shards {
			close(clustersUp)
		}
	})
	if cfg.HostileSecrets > 0 {
		cfg.Logf("a hostile tenant creates %d Secrets of 1 MiB labeled %s", cfg.HostileSecrets, infrav1.ManagedLabel)
		if err := createHostileSecrets(ctx, c, cfg.HostileSecrets); err != nil {
			return res, err
		}
	}
	if cfg.Bomb {
		if err := createMachine(ctx, c, BombMachine, lay.labels(0)); err != nil {
			return res, err
		}
	}
	cr := &creator{c: c, layout: lay, workers: cfg.CreateWorkers, batch: cfg.Batch, pace: cfg.Pace, after: clustersUp}
	createDone := make(chan error, 1)
	go func() {
		createDone <- cr.run(runCtx, cfg.N, cfg.BatchPause)
	}()

	// Bring-up: wait for every machine to be Ready.
	deadline := time.Now().Add(cfg.Timeout)
	poll := time.Second
	if cfg.N >= 1000 {
		poll = 5 * time.Second
	}
	lastLog := time.Time{}
	created := false
	for {
		select {
		case m := <-exited:
			return res, fmt.Errorf("the manager exited: %v\n%s", m.proc.ExitError(), m.proc.LogTail(40))
		case <-ctx.Done():
			// The view's informers and the executor stop with ctx: a
			// bring-up that goes on would watch a frozen fleet.
			partial(res, x, mgrs, reactions, time.Since(start))
			return res, fmt.Errorf("the bring-up ended after %s, %d created, %d/%d machines Ready: %w", time.Since(start).Round(time.Second), cr.created.Load(), res.ReadyAtEnd, cfg.N, ctx.Err())
		case err := <-createDone:
			if err != nil {
				return res, fmt.Errorf("failed to create the fleet: %w", err)
			}
			created = true
			res.CreateSeconds = time.Since(start).Seconds()
			cfg.Logf("%s: all %d machines created", time.Since(start).Round(time.Second), cfg.N)
		case err := <-provisioned:
			if err != nil {
				return res, err
			}
		default:
		}
		ready, total, clustersProvisioned, err := readiness(ctx, view, lay.clusters())
		if err != nil {
			return res, err
		}
		if time.Since(lastLog) > 30*time.Second {
			st := x.Stats()
			cfg.Logf("%s: %d created, %d/%d machines Ready, %d Jobs finished, manager RSS %s MiB", time.Since(start).Round(time.Second),
				cr.created.Load(), ready, total, st.Finished, each(mgrs, "%.0f", func(m *manager) float64 { return m.mon.last().RSS / (1 << 20) }))
			lastLog = time.Now()
		}
		if created && ready == cfg.N && total == cfg.N {
			break
		}
		res.ReadyAtEnd = ready
		if time.Now().After(deadline) {
			partial(res, x, mgrs, reactions, time.Since(start))
			return res, fmt.Errorf("%w after %s: %d created, %d/%d machines Ready (%d/%d clusters provisioned)", ErrTimeout, cfg.Timeout, cr.created.Load(), ready, total, clustersProvisioned, cfg.Shards)
		}
		time.Sleep(poll)
	}
	bringUpEnd := time.Now()
	bringUp := bringUpEnd.Sub(start)
	res.Complete = true
	res.AllReadySeconds = bringUp.Seconds()
	st := x.Stats()
	res.Jobs = st.Finished
	res.JobsPerSecond = float64(st.Finished) / bringUp.Seconds()
	var cpu time.Duration
	for _, m := range mgrs {
		up, _ := readProc(m.proc.Pid())
		m.res.BringUpCPU = (up.CPU - m.cpuStart.CPU).Seconds() / bringUp.Seconds()
		cpu += up.CPU - m.cpuStart.CPU
	}
	res.BringUpCPU = cpu.Seconds() / bringUp.Seconds()
	if st.Finished > 0 {
		res.CPUPerJobMilli = float64(cpu.Milliseconds()) / float64(st.Finished)
	}
	apiUp, err := scrapeAPIServer(ctx, cs)
	if err != nil {
		return res, err
	}
	res.BringUpRequests = rates(requestCounts(apiStart), requestCounts(apiUp), bringUp)
	res.BringUpRequestCounts = minus(requestCounts(apiUp), requestCounts(apiStart))
	res.HarnessRequestCounts = minus(counter.snapshot(), harnessStart)
	if res.Events, err = countEvents(ctx, cs); err != nil {
		return res, err
	}
	h, err := reconcileHistogram(ctx, mgrs)
	if err != nil {
		return res, err
	}
	res.ReconcileP50, res.ReconcileP95, res.ReconcileP99, res.Reconciles = h.quantile(0.5), h.quantile(0.95), h.quantile(0.99), h.count
	cfg.Logf("all %d machines Ready in %s (%d Jobs, %.1f Jobs/s)", cfg.N, bringUp.Round(time.Second), st.Finished, res.JobsPerSecond)

	// Steady window: every machine Ready, drift checks scheduled.
	if cfg.Steady > 0 {
		time.Sleep(cfg.Settle)
		res.Drained = true
		for _, m := range mgrs {
			drained, err := drain(ctx, m.url, cmp.Or(cfg.DrainTimeout, 20*time.Minute))
			if err != nil {
				return res, err
			}
			res.Drained = res.Drained && drained
		}
		if wait := cfg.SteadyStart - time.Since(start); wait > 0 {
			cfg.Logf("waiting %s for drift checks to start", wait.Round(time.Second))
			time.Sleep(wait)
		}
		res.DrainSeconds = time.Since(start).Seconds() - res.AllReadySeconds
		cfg.Logf("steady window starts %s after all Ready (workqueue drained: %v)", time.Duration(res.DrainSeconds*float64(time.Second)).Round(time.Second), res.Drained)
		before := make([]procStat, len(mgrs))
		for i, m := range mgrs {
			before[i], _ = readProc(m.proc.Pid())
		}
		apiBefore, err := scrapeAPIServer(ctx, cs)
		if err != nil {
			return res, err
		}
		hBefore, err := reconcileHistogram(ctx, mgrs)
		if err != nil {
			return res, err
		}
		jobsBefore := x.Stats().Finished
		for _, m := range mgrs {
			m.mon.resetWindow()
		}
		t0 := time.Now()
		time.Sleep(cfg.Steady)
		win := time.Since(t0)
		var steadyCPU time.Duration
		for i, m := range mgrs {
			after, _ := readProc(m.proc.Pid())
			steadyCPU += after.CPU - before[i].CPU
			m.res.SteadyCPU = (after.CPU - before[i].CPU).Seconds() / win.Seconds()
			w := m.mon.window()
			m.res.SteadyRSSMiB, m.res.SteadyHeapMiB = w.rssAvg/(1<<20), w.heapAvg/(1<<20)
			res.SteadyRSSMiB, res.SteadyHeapMiB = max(res.SteadyRSSMiB, m.res.SteadyRSSMiB), max(res.SteadyHeapMiB, m.res.SteadyHeapMiB)
		}
		apiAfter, err := scrapeAPIServer(ctx, cs)
		if err != nil {
			return res, err
		}
		hAfter, err := reconcileHistogram(ctx, mgrs)
		if err != nil {
			return res, err
		}
		res.SteadySeconds = win.Seconds()
		res.SteadyCPU = steadyCPU.Seconds() / win.Seconds()
		res.SteadyRequests = rates(requestCounts(apiBefore), requestCounts(apiAfter), win)
		res.SteadyJobs = x.Stats().Finished - jobsBefore
		res.SteadyP99 = hAfter.minus(hBefore).quantile(0.99)
	}
	for _, m := range mgrs {
		mf, err := scrapeManager(ctx, m.url)
		if err != nil {
			return res, err
		}
		m.res.Reconciles, _ = mf.value("controller_runtime_reconcile_total", map[string]string{"controller": "terraformmachine"})
	}
	stopRun()
	for _, m := range mgrs {
		final, _ := readProc(m.proc.Pid())
		all := m.mon.all()
		m.res.PeakRSSMiB = float64(max(final.HWM, int64(all.rssMax))) / (1 << 20)
		m.res.PeakHeapMiB = all.heapMax / (1 << 20)
		m.res.MaxQueue = all.queueMax
		res.PeakRSSMiB, res.PeakHeapMiB, res.MaxQueue = max(res.PeakRSSMiB, m.res.PeakRSSMiB), max(res.PeakHeapMiB, m.res.PeakHeapMiB), max(res.MaxQueue, m.res.MaxQueue)
	}
	res.reactionSamples, res.Reaction.Unpaired = reactions.samples(bringUpEnd)
	res.Reaction = reactionOf(res.reactionSamples, res.Reaction.Unpaired)
	res.Executor = x.Stats()
	var shardErr error
	if lay.sharded() {
		shardErr = checkShards(res, mgrs, lay)
	}
	if n := len(res.Executor.Duplicates); n > 0 {
		return res, fmt.Errorf("%d duplicate Jobs: %v", n, res.Executor.Duplicates[:min(n, 5)])
	}
	return res, shardErr
}

// drain waits until a manager's TerraformMachine workqueue is empty in
// two samples a second apart, or until timeout; it says whether it
// emptied.
func drain(ctx context.Context, metricsURL string, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	empty := 0
	for time.Now().Before(deadline) {
		mf, err := scrapeManager(ctx, metricsURL)
		if err != nil {
			return false, err
		}
		if depth, _ := mf.value("workqueue_depth", map[string]string{"name": "terraformmachine"}); depth == 0 {
			empty++
		} else {
			empty = 0
		}
		if empty >= 2 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return false, nil
}

// ErrTimeout is returned when the bring-up did not finish in time; the
// Result then holds the figures of the run so far.
var ErrTimeout = errors.New("timed out")

// partial fills a timed-out run's figures: Jobs, CPU, memory, queue and
// reaction times so far.
func partial(res *Result, x *Executor, mgrs []*manager, reactions *reactionLog, d time.Duration) {
	res.AllReadySeconds = d.Seconds()
	res.Executor = x.Stats()
	res.Jobs = res.Executor.Finished
	res.JobsPerSecond = float64(res.Jobs) / d.Seconds()
	var cpu time.Duration
	for _, m := range mgrs {
		if p, err := readProc(m.proc.Pid()); err == nil {
			cpu += p.CPU - m.cpuStart.CPU
			m.res.BringUpCPU = (p.CPU - m.cpuStart.CPU).Seconds() / d.Seconds()
			m.res.PeakRSSMiB = float64(p.HWM) / (1 << 20)
		}
		all, last := m.mon.all(), m.mon.last()
		m.res.PeakHeapMiB, m.res.MaxQueue = all.heapMax/(1<<20), all.queueMax
		m.res.SteadyRSSMiB, m.res.SteadyHeapMiB = last.RSS/(1<<20), last.Heap/(1<<20)
		res.PeakRSSMiB, res.PeakHeapMiB, res.MaxQueue = max(res.PeakRSSMiB, m.res.PeakRSSMiB), max(res.PeakHeapMiB, m.res.PeakHeapMiB), max(res.MaxQueue, m.res.MaxQueue)
		res.SteadyRSSMiB, res.SteadyHeapMiB = max(res.SteadyRSSMiB, m.res.SteadyRSSMiB), max(res.SteadyHeapMiB, m.res.SteadyHeapMiB)
	}
	res.BringUpCPU = cpu.Seconds() / d.Seconds()
	if res.Jobs > 0 {
		res.CPUPerJobMilli = float64(cpu.Milliseconds()) / float64(res.Jobs)
	}
	res.reactionSamples, res.Reaction.Unpaired = reactions.samples(time.Now())
	res.Reaction = reactionOf(res.reactionSamples, res.Reaction.Unpaired)
	if len(mgrs) > 1 {
		res.Managers = managerResults(mgrs)
	}
}

func clients(cfg *rest.Config) (kubernetes.Interface, client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	s := capi.Scheme()
	if err := infrav1.AddToScheme(s); err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	return cs, c, err
}

func rates(before, after map[string]float64, d time.Duration) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if r := (v - before[k]) / d.Seconds(); r >= 0.005 {
			out[k] = math.Round(r*100) / 100
		}
	}
	return out
}

// monitor samples the manager's RSS, Go heap and workqueue depth.
type monitor struct {
	pid int
	url string

	mu             sync.Mutex
	lastSample     sample
	allAgg, winAgg agg
	procErrors     int
}

type sample struct{ RSS, Heap, Queue float64 }

type agg struct {
	n                         int
	rssMax, heapMax, queueMax float64
	rssSum, heapSum           float64
	rssAvg, heapAvg           float64
}

func (a *agg) add(s sample) {
	a.n++
	a.rssMax, a.heapMax, a.queueMax = math.Max(a.rssMax, s.RSS), math.Max(a.heapMax, s.Heap), math.Max(a.queueMax, s.Queue)
	a.rssSum += s.RSS
	a.heapSum += s.Heap
	a.rssAvg, a.heapAvg = a.rssSum/float64(a.n), a.heapSum/float64(a.n)
}

func (m *monitor) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	metricsEvery := 0
	var heap, queue float64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p, err := readProc(m.pid)
		if err != nil {
			m.procErrors++
			continue
		}
		// /metrics costs the manager CPU: read it every 5 s.
		if metricsEvery%5 == 0 {
			if f, err := scrapeManager(ctx, m.url); err == nil {
				heap, _ = f.value("go_memstats_heap_alloc_bytes", nil)
				queue, _ = f.value("workqueue_depth", map[string]string{"name": "terraformmachine"})
			}
		}
		metricsEvery++
		s := sample{RSS: float64(p.RSS), Heap: heap, Queue: queue}
		m.mu.Lock()
		m.lastSample = s
		m.allAgg.add(s)
		m.winAgg.add(s)
		m.mu.Unlock()
	}
}

func (m *monitor) last() sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastSample
}

func (m *monitor) resetWindow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.winAgg = agg{}
}

func (m *monitor) window() agg {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.winAgg
}

func (m *monitor) all() agg {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allAgg
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	s := string(b)
	if len(s) > 14 {
		s = s[:14]
	}
	return s
}

func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "MemTotal" {
				mem = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s RAM, %s/%s, %s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// SortedKeys returns m's keys by descending value.
func SortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
