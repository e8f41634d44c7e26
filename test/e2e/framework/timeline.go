package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Timeline watches one namespace from the outside, as an operator would, and
// notes when each thing was first seen: every Job created (so none is missed
// once pruned), every Job finished, and every Terraform* object whose status
// reports a finished Job (status.lastRun naming it) with Ready=True. All
// times come from this process's clock on the watch events, so they compare.
type Timeline struct {
	mu   sync.Mutex
	jobs map[types.UID]*JobTimes
	// settled is when an object was first seen Ready with lastRun naming
	// a Job, by "<kind>/<name>/<job>".
	settled map[string]time.Time
	// gone is when an object was seen deleted, by "<kind>/<name>".
	gone map[string]time.Time
}

// JobTimes is one Job as the Timeline saw it.
type JobTimes struct {
	Name, Owner, Op string
	Created         time.Time
	// Finished is zero while the Job runs.
	Finished  time.Time
	Succeeded bool
}

// Reaction is how long the manager took, after a Job finished, to take the
// next step on the same object: create its next Job, report the Job's
// result with Ready=True, or, after a destroy, let the object go.
type Reaction struct {
	Job   JobTimes
	Next  string
	Delay time.Duration
}

// StartTimeline starts watching namespace until ctx ends.
func StartTimeline(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string) (*Timeline, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("timeline cache: %w", err)
	}
	t := &Timeline{jobs: map[types.UID]*JobTimes{}, settled: map[string]time.Time{}, gone: map[string]time.Time{}}
	watch := func(obj client.Object, note func(any)) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("timeline informer for %T: %w", obj, err)
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { note(o) },
			UpdateFunc: func(_, o any) { note(o) },
			DeleteFunc: t.noteGone,
		})
		return err
	}
	for _, w := range []struct {
		obj  client.Object
		note func(any)
	}{
		{&batchv1.Job{}, t.noteJob},
		{&infrav1.TerraformCluster{}, t.noteWorkload},
		{&infrav1.TerraformMachine{}, t.noteWorkload},
		{&infrav1.TerraformMachinePool{}, t.noteWorkload},
	} {
		if err := watch(w.obj, w.note); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("timeline cache did not sync")
	}
	return t, nil
}

func (t *Timeline) noteJob(o any) {
	j, ok := o.(*batchv1.Job)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	jt := t.jobs[j.UID]
	if jt == nil {
		jt = &JobTimes{Name: j.Name, Owner: j.Labels[infrav1.OwnerKindLabel] + "/" + j.Labels[infrav1.OwnerNameLabel],
			Op: j.Labels[infrav1.OpLabel], Created: now}
		t.jobs[j.UID] = jt
	}
	if !jt.Finished.IsZero() {
		return
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			jt.Finished, jt.Succeeded = now, true
		case batchv1.JobFailed:
			jt.Finished = now
		}
	}
}

// workloadKey is "<kind>/<name>" of a Terraform* object.
func workloadKey(o any) (infrav1.Workload, string) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	w, ok := o.(infrav1.Workload)
	if !ok {
		return nil, ""
	}
	kind := fmt.Sprintf("%T", o)
	return w, kind[strings.LastIndex(kind, ".")+1:] + "/" + w.GetName()
}

func (t *Timeline) noteGone(o any) {
	if _, key := workloadKey(o); key != "" {
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		t.gone[key] = now
	}
}

func (t *Timeline) noteWorkload(o any) {
	w, owner := workloadKey(o)
	if w == nil {
		return
	}
	last := w.GetWorkspaceStatus().LastRun
	if last == nil || !meta.IsStatusConditionTrue(w.GetConditions(), infrav1.ReadyCondition) {
		return
	}
	key := owner + "/" + last.Job
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.settled[key]; !seen {
		t.settled[key] = now
	}
}

// Jobs returns every Job seen, oldest first.
func (t *Timeline) Jobs() []JobTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]JobTimes, 0, len(t.jobs))
	for _, j := range t.jobs {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Created.Before(out[b].Created) })
	return out
}

// Reactions returns, for each finished Job, the first next step on its
// object: the creation of the object's next Job, or the object reporting
// that Job's result with Ready=True. A Job with neither yet is left out.
func (t *Timeline) Reactions() []Reaction {
	jobs := t.Jobs()
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Reaction
	for _, j := range jobs {
		if j.Finished.IsZero() {
			continue
		}
		r := Reaction{Job: j, Delay: -1}
		for _, n := range jobs {
			if n.Owner == j.Owner && !n.Created.Before(j.Finished) && (r.Delay < 0 || n.Created.Sub(j.Finished) < r.Delay) {
				r.Next, r.Delay = "Job "+n.Name, n.Created.Sub(j.Finished)
			}
		}
		if at, ok := t.settled[j.Owner+"/"+j.Name]; ok {
			d := max(at.Sub(j.Finished), 0)
			if r.Delay < 0 || d < r.Delay {
				r.Next, r.Delay = "Ready", d
			}
		}
		if at, ok := t.gone[j.Owner]; ok && j.Op == "destroy" && !at.Before(j.Finished) {
			if d := at.Sub(j.Finished); r.Delay < 0 || d < r.Delay {
				r.Next, r.Delay = "gone", d
			}
		}
		if r.Delay >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Percentile returns the q-th quantile (nearest rank) of the delays.
func Percentile(rs []Reaction, q float64) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(rs))
	for i, r := range rs {
		ds[i] = r.Delay
	}
	sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
