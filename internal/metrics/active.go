package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The workload kinds and operations captf_jobs_active always reports (0 when none run),
// so a dashboard sees stable series.
var (
	activeOps = []string{
		string(infrav1.OperationApply), string(infrav1.OperationDestroy), string(infrav1.OperationDrift),
		string(infrav1.OperationRefresh), string(infrav1.OperationRestore), string(infrav1.OperationPlan),
	}
)

// activeJobsCollector counts running Jobs from a reader (the manager's
// cache) at scrape time, so the gauge can never drift from what exists.
type activeJobsCollector struct {
	desc *prometheus.Desc
	mu   sync.RWMutex
	r    client.Reader
}

var activeJobs = &activeJobsCollector{
	desc: prometheus.NewDesc("captf_jobs_active",
		alpha+"Runner Jobs running now, counted from the manager's cache at scrape time.",
		[]string{"kind", "op"}, nil),
}

// SetActiveJobsReader makes captf_jobs_active count the CAPTF Jobs r lists
// (the manager's cache, which holds only captf.io/managed=true Jobs). With
// no reader, or while the cache cannot answer, the gauge is not exported.
func SetActiveJobsReader(r client.Reader) {
	activeJobs.mu.Lock()
	activeJobs.r = r
	activeJobs.mu.Unlock()
}

func (c *activeJobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *activeJobsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	r := c.r
	c.mu.RUnlock()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &batchv1.JobList{}
	if err := r.List(ctx, list, client.MatchingLabels{infrav1.ManagedLabel: "true"}); err != nil {
		return
	}
	counts := CountActive(list.Items)
	for _, kind := range infrav1.WorkloadKinds() {
		k := string(kind)
		for _, op := range activeOps {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[[2]string{k, op}]), k, op)
		}
	}
}

// CountActive counts the unfinished Jobs by owner kind and operation label.
// Jobs of another kind or operation are not counted.
func CountActive(jobs []batchv1.Job) map[[2]string]int {
	out := map[[2]string]int{}
	for i := range jobs {
		j := &jobs[i]
		if finished(j) {
			continue
		}
		out[[2]string{j.Labels[infrav1.OwnerKindLabel], j.Labels[infrav1.OpLabel]}]++
	}
	return out
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
