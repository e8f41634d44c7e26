package scale

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/controlplane"
)

// ManagerResult is one manager's figures in a sharded run.
type ManagerResult struct {
	Name        string   `json:"name"`
	WatchFilter string   `json:"watchFilter,omitempty"`
	Flags       []string `json:"flags"`

	PeakRSSMiB    float64 `json:"peakRssMiB"`
	SteadyRSSMiB  float64 `json:"steadyRssMiB"`
	PeakHeapMiB   float64 `json:"peakHeapMiB"`
	SteadyHeapMiB float64 `json:"steadyHeapMiB"`
	BringUpCPU    float64 `json:"bringUpCpuCores"`
	SteadyCPU     float64 `json:"steadyCpuCores"`
	MaxQueue      float64 `json:"maxWorkqueueDepth"`

	// Reconciles is the manager's
	// controller_runtime_reconcile_total{controller="terraformmachine"} at
	// the end of the run.
	Reconciles float64 `json:"reconciles"`
	// LoggedPasses are the TerraformMachine passes its log shows (distinct
	// reconcile IDs; ShardFlags has every pass log its start), of which
	// CrossShardPasses were of another shard's machines.
	// CrossShardEvents are the events it recorded about another shard's
	// machines.
	LoggedPasses     int `json:"loggedPasses"`
	CrossShardPasses int `json:"crossShardPasses"`
	CrossShardEvents int `json:"crossShardEvents"`
}

// ShardFlags are manager i's flags in a sharded run:
//   - its watch-filter;
//   - no leader election: every manager is the only one of its shard, and
//     the manager has no flag to name its own election Lease, so K managers
//     electing would fight over one Lease (--leader-elect is off by
//     default; the flag says so in the run's record);
//   - controller-runtime's "Reconciling" line (verbosity 5 in its
//     controller.go) for every pass, so the log names each object the
//     manager reconciled.
func ShardFlags(i int) []string {
	return []string{"--watch-filter=" + ShardFilter(i), "--leader-elect=false", "--vmodule=controller=5"}
}

// manager is one manager process of a run.
type manager struct {
	name, filter string
	flags        []string
	proc         *controlplane.Process
	url          string
	mon          *monitor
	cpuStart     procStat
	res          ManagerResult
}

// startManagers starts one manager per shard, each with its own metrics
// address, and their monitors (which stop with ctx).
func startManagers(ctx context.Context, e *env.Env, bin string, l layout, extra, vars []string) ([]*manager, error) {
	used := map[int]bool{}
	var out []*manager
	for i := range max(l.shards, 1) {
		port, err := controlplane.FreePort()
		for err == nil && used[port] {
			port, err = controlplane.FreePort()
		}
		if err != nil {
			return nil, err
		}
		used[port] = true
		addr := "127.0.0.1:" + strconv.Itoa(port)
		m := &manager{name: "manager", url: "http://" + addr + "/metrics"}
		args := extra
		if l.sharded() {
			m.name, m.filter = fmt.Sprintf("manager-%d", i), ShardFilter(i)
			args = append(ShardFlags(i), extra...)
		}
		m.flags = ManagerFlags(addr, args)
		if m.proc, err = e.StartProcessWithEnv(m.name, append([]string{bin}, m.flags...), vars); err != nil {
			return nil, err
		}
		m.res = ManagerResult{Name: m.name, WatchFilter: m.filter, Flags: m.flags}
		m.mon = &monitor{pid: m.proc.Pid(), url: m.url}
		go m.mon.run(ctx, time.Second)
		out = append(out, m)
	}
	return out, nil
}

func managerResults(mgrs []*manager) []ManagerResult {
	out := make([]ManagerResult, len(mgrs))
	for i, m := range mgrs {
		out[i] = m.res
	}
	return out
}

// each formats f of every manager, joined by "/".
func each(mgrs []*manager, format string, f func(*manager) float64) string {
	parts := make([]string, len(mgrs))
	for i, m := range mgrs {
		parts[i] = fmt.Sprintf(format, f(m))
	}
	return strings.Join(parts, "/")
}

// reconcileHistogram is the TerraformMachine reconcile-time histogram
// summed over the managers.
func reconcileHistogram(ctx context.Context, mgrs []*manager) (histogram, error) {
	var h histogram
	for _, m := range mgrs {
		mf, err := scrapeManager(ctx, m.url)
		if err != nil {
			return h, err
		}
		h = h.plus(mf.histogram("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "terraformmachine"}))
	}
	return h, nil
}

// checkShards reads each manager's log for the machines it reconciled and
// fills res.Managers and the cross-shard counts. It fails a run in which a
// manager reconciled no machine, or any manager reconciled or recorded
// events about another shard's machine.
func checkShards(res *Result, mgrs []*manager, l layout) error {
	var errs []error
	for i, m := range mgrs {
		f, err := os.Open(m.proc.LogPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := countLog(f, i, l)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to read the log of %s: %w", m.name, err))
		}
		m.res.LoggedPasses, m.res.CrossShardPasses, m.res.CrossShardEvents = c.Passes, c.CrossPasses, c.CrossEvents
		res.CrossShardPasses += c.CrossPasses
		res.CrossShardEvents += c.CrossEvents
		if m.res.Reconciles == 0 {
			errs = append(errs, fmt.Errorf("%s reconciled no TerraformMachine", m.name))
		}
	}
	res.Managers = managerResults(mgrs)
	if res.CrossShardPasses > 0 || res.CrossShardEvents > 0 {
		errs = append(errs, fmt.Errorf("managers reconciled another shard's machines: %d passes, %d events", res.CrossShardPasses, res.CrossShardEvents))
	}
	return errors.Join(errs...)
}

// logCount is what a manager's log shows of its TerraformMachine work.
type logCount struct {
	// Passes are the distinct reconcile IDs of the TerraformMachine
	// controller naming a fleet machine, CrossPasses those of them naming
	// a machine of another shard than the manager's.
	Passes, CrossPasses int
	// CrossEvents are the events recorded about another shard's machines.
	CrossEvents int
}

var (
	tmController = regexp.MustCompile(` controller="terraformmachine"( |$)`)
	tmObject     = regexp.MustCompile(` TerraformMachine="[^"/]*/([^"]*)"`)
	reconcileID  = regexp.MustCompile(` reconcileID="([^"]*)"`)
	tmEvent      = regexp.MustCompile(`"Event occurred" .*\bobject="[^"/]*/([^"]*)" kind="TerraformMachine"`)
)

// countLog reads a manager's log (klog's text format, as the manager writes
// it) as the manager of shard.
func countLog(r io.Reader, shard int, l layout) (logCount, error) {
	var c logCount
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := tmEvent.FindStringSubmatch(line); m != nil {
			if s, ok := l.shardOf(m[1]); ok && s != shard {
				c.CrossEvents++
			}
			continue
		}
		if !tmController.MatchString(line) {
			continue
		}
		obj, id := tmObject.FindStringSubmatch(line), reconcileID.FindStringSubmatch(line)
		if obj == nil || id == nil || seen[id[1]] {
			continue
		}
		s, ok := l.shardOf(obj[1])
		if !ok {
			continue
		}
		seen[id[1]] = true
		c.Passes++
		if s != shard {
			c.CrossPasses++
		}
	}
	return c, sc.Err()
}
