package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// families are parsed Prometheus metrics.
type families map[string]*dto.MetricFamily

func parseMetrics(r io.Reader) (families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("failed to parse metrics: %w", err)
	}
	return f, nil
}

// scrapeManager reads the manager's /metrics (plain HTTP).
func scrapeManager(ctx context.Context, url string) (families, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to scrape the manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the manager's metrics answered %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// scrapeAPIServer reads the API server's own /metrics.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (families, error) {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to scrape the API server's metrics: %w", err)
	}
	return parseMetrics(bytes.NewReader(raw))
}

func labelsOf(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.GetLabel()))
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func matches(m *dto.Metric, want map[string]string) bool {
	l := labelsOf(m)
	for k, v := range want {
		if l[k] != v {
			return false
		}
	}
	return true
}

// gauge returns the value of a gauge or counter (summed over the series
// matching want); false when the family is missing.
func (f families) value(name string, want map[string]string) (float64, bool) {
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, true
}

// histogram is cumulative bucket counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
	sum    float64
}

func (f families) histogram(name string, want map[string]string) histogram {
	var h histogram
	acc := map[float64]float64{}
	mf, ok := f[name]
	if !ok {
		return h
	}
	for _, m := range mf.GetMetric() {
		if !matches(m, want) || m.Histogram == nil {
			continue
		}
		h.count += float64(m.GetHistogram().GetSampleCount())
		h.sum += m.GetHistogram().GetSampleSum()
		for _, b := range m.GetHistogram().GetBucket() {
			acc[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	for b := range acc {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, acc[b])
	}
	return h
}

// minus is h less an earlier snapshot of the same histogram.
func (h histogram) minus(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, count: h.count - earlier.count, sum: h.sum - earlier.sum}
	for i, b := range h.bounds {
		c := h.counts[i]
		for j, eb := range earlier.bounds {
			if eb == b {
				c -= earlier.counts[j]
			}
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// plus is the sum of two histograms of the same buckets (two managers of
// one build).
func (h histogram) plus(o histogram) histogram {
	acc := map[float64]float64{}
	for i, b := range h.bounds {
		acc[b] += h.counts[i]
	}
	for i, b := range o.bounds {
		acc[b] += o.counts[i]
	}
	out := histogram{count: h.count + o.count, sum: h.sum + o.sum}
	for b := range acc {
		out.bounds = append(out.bounds, b)
	}
	sort.Float64s(out.bounds)
	for _, b := range out.bounds {
		out.counts = append(out.counts, acc[b])
	}
	return out
}

// quantile estimates the q-quantile by linear interpolation inside the
// bucket that holds it, as Prometheus' histogram_quantile does.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return 0
	}
	rank := q * h.count
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if h.counts[i] == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(h.counts[i]-prevCount)
		}
		prevBound, prevCount = b, h.counts[i]
	}
	return prevBound
}

// requestRates are API requests by "VERB resource", from
// apiserver_request_total.
func requestCounts(f families) map[string]float64 {
	out := map[string]float64{}
	mf, ok := f["apiserver_request_total"]
	if !ok {
		return out
	}
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// procStat is a process's resident memory (now and peak) and CPU time.
type procStat struct {
	RSS, HWM int64
	CPU      time.Duration
}

// clockTick is USER_HZ, 100 on every Linux Go supports.
const clockTick = 100

func readProc(pid int) (procStat, error) {
	var s procStat
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			s.RSS = n << 10
		case "VmHWM":
			s.HWM = n << 10
		}
	}
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return s, err
	}
	// The command may hold spaces: fields count from the last ')'.
	rest := string(raw[bytes.LastIndexByte(raw, ')')+2:])
	fields := strings.Fields(rest)
	if len(fields) > 12 {
		ut, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		s.CPU = time.Duration(ut+st) * time.Second / clockTick
	}
	return s, nil
}
