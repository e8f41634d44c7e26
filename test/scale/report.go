package scale

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The Scale page's files under docs/book/operator-guide.
const (
	ResultsFile = "scale-results.json"
	PageFile    = "scale.md"
	MemoryPlot  = "scale-memory.png"
	CPUPlot     = "scale-cpu.png"
	LatencyPlot = "scale-latency.png"

	tableStart = "<!-- scale-table:start (written by make scale) -->"
	tableEnd   = "<!-- scale-table:end -->"
)

// LoadResults reads the results file (none yet: empty).
func LoadResults(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []Result
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	return rs, nil
}

// MergeResult replaces the result of the same N, shards and pace, keeping
// them ordered by N (then shards, then pace).
func MergeResult(rs []Result, r Result) []Result {
	out := []Result{r}
	for _, o := range rs {
		if o.N != r.N || o.shards() != r.shards() || o.PaceSeconds != r.PaceSeconds {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.N != b.N {
			return a.N < b.N
		}
		if a.shards() != b.shards() {
			return a.shards() < b.shards()
		}
		return a.PaceSeconds < b.PaceSeconds
	})
	return out
}

// shards is how many managers ran (results recorded before shards: one).
func (r Result) shards() int { return max(r.Shards, 1) }

// Size is the run's N as the table shows it: "N", "K×M" for K managers of
// M machines each (K×M = N; "K×M…" when the shards differ by one machine),
// and the pace of a paced run.
func (r Result) Size() string {
	s := fmt.Sprint(r.N)
	if k := r.shards(); k > 1 {
		s = fmt.Sprintf("%d×%d", k, r.N/k)
		if r.N%k != 0 {
			s = fmt.Sprintf("%d×%d…%d", k, r.N/k, r.N/k+1)
		}
	}
	if r.PaceSeconds > 0 {
		s += fmt.Sprintf(" (paced, %s)", time.Duration(r.PaceSeconds*float64(time.Second)))
	}
	return s
}

// SaveResults writes the results file.
func SaveResults(path string, rs []Result) error {
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteDocs renders the table into the page (between its markers) and the
// three plots, in dir.
func WriteDocs(dir string, rs []Result) error {
	if len(rs) == 0 {
		return errors.New("no results to write")
	}
	page := filepath.Join(dir, PageFile)
	b, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, tableStart), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q … %q markers", page, tableStart, tableEnd)
	}
	s = s[:i+len(tableStart)] + "\n" + Table(rs) + s[j:]
	if err := os.WriteFile(page, []byte(s), 0o644); err != nil {
		return err
	}
	// The plots follow one manager as its fleet grows in batches: sharded
	// and paced runs are in the table only.
	var one []Result
	for _, r := range rs {
		if r.shards() == 1 && r.PaceSeconds == 0 {
			one = append(one, r)
		}
	}
	if len(one) == 0 {
		return nil
	}
	rs = one
	ns := func() []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = float64(r.N)
		}
		return out
	}()
	pick := func(f func(Result) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	// Figures a run that did not reach all Ready never measured.
	done := func(f func(Result) float64) func(Result) float64 {
		return func(r Result) float64 {
			if !r.Complete {
				return math.NaN()
			}
			return f(r)
		}
	}
	if err := linePlot(filepath.Join(dir, MemoryPlot), "Manager memory against TerraformMachines", "MiB", ns, []series{
		{"peak RSS", pick(func(r Result) float64 { return r.PeakRSSMiB })},
		{"steady RSS", pick(func(r Result) float64 { return r.SteadyRSSMiB })},
		{"steady Go heap", pick(func(r Result) float64 { return r.SteadyHeapMiB })},
	}); err != nil {
		return err
	}
	if err := linePlot(filepath.Join(dir, CPUPlot), "Manager CPU against TerraformMachines", "cores", ns, []series{
		{"bring-up", pick(func(r Result) float64 { return r.BringUpCPU })},
		{"steady (drift on)", pick(done(func(r Result) float64 { return r.SteadyCPU }))},
	}); err != nil {
		return err
	}
	return linePlot(filepath.Join(dir, LatencyPlot), "TerraformMachine reconcile latency (bring-up)", "seconds", ns, []series{
		{"p50", pick(done(func(r Result) float64 { return r.ReconcileP50 }))},
		{"p95", pick(done(func(r Result) float64 { return r.ReconcileP95 }))},
		{"p99", pick(done(func(r Result) float64 { return r.ReconcileP99 }))},
	})
}

type series struct {
	name string
	ys   []float64
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

func linePlot(path, title, unit string, xs []float64, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "TerraformMachines (N)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, s := range ss {
		pts := make(plotter.XYs, 0, len(xs))
		for k, x := range xs {
			if !math.IsNaN(s.ys[k]) {
				pts = append(pts, plotter.XY{X: x, Y: s.ys[k]})
			}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = palette[i%len(palette)], palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}

func f1(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

func f2(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func ms(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.0f", v*1000)
}

// perManager formats each manager's figure, joined by " / ".
func perManager(ms []ManagerResult, format string, f func(ManagerResult) float64) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf(format, f(m))
	}
	return strings.Join(parts, " / ")
}

// Table is the Scale page's results table, the top API requests of the
// steady window, and the conditions of each run.
func Table(rs []Result) string {
	var b strings.Builder
	b.WriteString("\n| N | time to all Ready (s) | Jobs | Jobs/s | peak RSS (MiB) | steady RSS (MiB) | peak heap (MiB) | steady heap (MiB) | bring-up CPU (cores) | steady CPU (cores) | CPU per Job (ms) | reconcile p50 / p95 / p99 (ms) | reaction p50 / p95 / p99 (ms) | max queue depth | API req/s bring-up | API req/s steady |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	sum := func(m map[string]float64) float64 {
		t := 0.0
		for _, v := range m {
			t += v
		}
		return t
	}
	sharded := false
	for _, r := range rs {
		sharded = sharded || r.shards() > 1
		ready := f1(r.AllReadySeconds)
		steadyCPU, p50, p95, p99, upReq, steadyReq := f2(r.SteadyCPU), ms(r.ReconcileP50), ms(r.ReconcileP95), ms(r.ReconcileP99), f1(sum(r.BringUpRequests)), f2(sum(r.SteadyRequests))
		if !r.Complete {
			// A run that ended before all Ready measured neither a
			// steady window nor the bring-up's latency and requests;
			// its "steady" memory is the last sample.
			ready = fmt.Sprintf("not reached: %d Ready after %s", r.ReadyAtEnd, f1(r.AllReadySeconds))
			steadyCPU, p50, p95, p99, upReq, steadyReq = "–", "–", "–", "–", "–", "–"
		}
		reaction := "–"
		if r.Samples > 0 {
			reaction = fmt.Sprintf("%.0f / %.0f / %.0f", r.P50Ms, r.P95Ms, r.P99Ms)
		}
		peakRSS, steadyRSS := f1(r.PeakRSSMiB), f1(r.SteadyRSSMiB)
		if len(r.Managers) > 1 {
			peakRSS = perManager(r.Managers, "%.1f", func(m ManagerResult) float64 { return m.PeakRSSMiB })
			steadyRSS = perManager(r.Managers, "%.1f", func(m ManagerResult) float64 { return m.SteadyRSSMiB })
			if !r.Complete {
				steadyRSS = "–"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %.0f | %s | %s |\n",
			r.Size(), ready, r.Jobs, f1(r.JobsPerSecond), peakRSS, steadyRSS, f1(r.PeakHeapMiB), f1(r.SteadyHeapMiB),
			f2(r.BringUpCPU), steadyCPU, f1(r.CPUPerJobMilli), p50, p95, p99, reaction, r.MaxQueue, upReq, steadyReq)
	}
	b.WriteString("\nReaction: from the moment a machine's Job was finished to the harness seeing the machine's next step (Ready, removed, or its next Job), over the Jobs finished during the bring-up; nearest-rank percentiles.\n")
	if sharded {
		b.WriteString("A row K×M ran K managers of M machines each against one API server: its RSS cells give each manager's, its heap and queue the largest manager's, and its CPU the sum over the managers.\n")
	}
	b.WriteString("\nAPI requests per second during bring-up, by verb and resource (the ten busiest; the executor's stand-in writes for the kubelet, the Job controller and the runner's backend are included):\n\n")
	b.WriteString("| N | requests/s |\n| ---: | --- |\n")
	for _, r := range rs {
		var parts []string
		for i, k := range SortedKeys(r.BringUpRequests) {
			if i == 10 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.1f", k, r.BringUpRequests[k]))
		}
		if len(parts) == 0 {
			parts = []string{"not measured (the run did not reach all Ready)"}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", r.Size(), strings.Join(parts, ", "))
	}
	b.WriteString("\nAPI requests per second in the steady window (every machine Ready, drift checks scheduled; the window starts once the manager's TerraformMachine workqueue has drained what the bring-up queued):\n\n")
	b.WriteString("| N | window starts after all Ready (s) | window (s) | Jobs in window | requests/s |\n| ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rs {
		var parts []string
		for i, k := range SortedKeys(r.SteadyRequests) {
			if i == 10 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.2f", k, r.SteadyRequests[k]))
		}
		if len(parts) == 0 {
			parts = []string{"none"}
			if !r.Complete {
				parts = []string{"not measured (the run did not reach all Ready)"}
			}
		}
		start := f1(r.DrainSeconds)
		if r.Complete && !r.Drained {
			start += " (queue not drained)"
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %d | %s |\n", r.Size(), start, r.SteadySeconds, r.SteadyJobs, strings.Join(parts, ", "))
	}
	b.WriteString("\nEach run: when, the machine, its load average before the run, the Job delay and the manager's flags:\n\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "- N=%s: %s, %s, load average before %s, Job delay %.1fs, executor retries %d, flags `%s`",
			r.Size(), r.When, r.Machine, strings.TrimSpace(r.LoadBefore), r.JobDelaySeconds, r.Executor.Failures, strings.Join(r.ManagerFlags, " "))
		if len(r.ManagerEnv) > 0 {
			fmt.Fprintf(&b, ", environment `%s`", strings.Join(r.ManagerEnv, " "))
		}
		if len(r.Managers) > 1 {
			fmt.Fprintf(&b, " (manager 0's; the others differ in --diagnostics-address and --watch-filter), TerraformMachine passes per manager %s, passes on another shard's machines %d",
				perManager(r.Managers, "%.0f", func(m ManagerResult) float64 { return m.Reconciles }), r.CrossShardPasses)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	return b.String()
}
