package e2e

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// jobLag is how far behind the API server the second manager's Job cache
// runs.
const jobLag = 8 * time.Second

// TestTwoManagersNeverRunTwoJobsOfOneObject runs a second manager, without
// leader election, beside the shared one on the scenario's namespace, its
// Job cache lagging jobLag behind (a stale Job cache: book, The Reconcile
// Lifecycle, "Run leases and the cluster operation gate"; Contract -
// Changelog, run leases). The Quick Start converges. Then the
// TerraformCluster's inputs change twice in a row: the first change starts
// an apply Job; the second comes while it runs, and the second manager, whose
// cache does not show that Job yet, decides an apply of the newer inputs at
// once. Only the run lease keeps it from creating that Job beside the
// running one: it waits (a WaitingForRunLease event), and no object ever has
// two unfinished Jobs.
func TestTwoManagersNeverRunTwoJobsOfOneObject(t *testing.T) {
	t.Parallel()
	const ns = "team-two"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	second, stopSecond := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		o := managerOptions(w.images.Runner)
		o.Namespace = ns
		o.WebhookPort = 0 // the shared manager serves the webhooks
		err := framework.RunObservedManager(second, w.e, o, framework.Observe{Wrap: framework.LaggingWatch("jobs", jobLag)})
		if err != nil && second.Err() == nil {
			t.Errorf("second manager: %v", err)
		}
	}()
	defer func() { stopSecond(); wg.Wait() }()

	// Watch the Jobs all along: no object may ever have two unfinished
	// Jobs. A watch delivers every change of every Job in order, so an
	// overlap however short is seen (a poll could fall between).
	var mu sync.Mutex
	var overlaps []string
	sampling, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	jw, err := w.e.Clientset.BatchV1().Jobs(ns).Watch(sampling, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer jw.Stop()
		// unfinished holds each object's unfinished Jobs.
		unfinished := map[string]map[string]bool{}
		for {
			var ev watch.Event
			select {
			case <-sampling.Done():
				return
			case e, ok := <-jw.ResultChan():
				if !ok {
					if sampling.Err() == nil {
						mu.Lock()
						overlaps = append(overlaps, "the Job watch ended early")
						mu.Unlock()
					}
					return
				}
				ev = e
			}
			j, ok := ev.Object.(*batchv1.Job)
			if !ok {
				continue
			}
			owner := j.Labels[infrav1.OwnerKindLabel] + "/" + j.Labels[infrav1.OwnerNameLabel]
			if unfinished[owner] == nil {
				unfinished[owner] = map[string]bool{}
			}
			if ev.Type != watch.Deleted && j.Status.CompletionTime == nil && j.Status.Failed == 0 && j.DeletionTimestamp.IsZero() {
				unfinished[owner][j.Name] = true
			} else {
				delete(unfinished[owner], j.Name)
			}
			if len(unfinished[owner]) > 1 {
				mu.Lock()
				overlaps = append(overlaps, owner+": "+strings.Join(slices.Sorted(maps.Keys(unfinished[owner])), ", "))
				mu.Unlock()
			}
		}
	}()
	noOverlap := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(overlaps) > 0 {
			t.Fatalf("two Jobs of one object ran at once: %v", overlaps)
		}
	}

	q := w.quickStart()
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute)
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start did not finish with two managers: %s", why)
	}
	noOverlap()

	// Two input changes in a row.
	key := client.ObjectKey{Namespace: ns, Name: "my-cluster"}
	tc := &infrav1.TerraformCluster{}
	setRound := func(round string) {
		t.Helper()
		if err := w.c.Get(ctx, key, tc); err != nil {
			t.Fatal(err)
		}
		before := tc.DeepCopy()
		if tc.Spec.Variables == nil {
			tc.Spec.Variables = map[string]apiextensionsv1.JSON{}
		}
		tc.Spec.Variables["extra_tags"] = apiextensionsv1.JSON{Raw: []byte(`{"round":"` + round + `"}`)}
		if err := w.c.Patch(ctx, tc, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	// seen are the apply Jobs ever listed: history pruning deletes old
	// ones, so the count of Jobs listed at once would stop growing.
	seen := map[string]bool{}
	applies := func() []batchv1.Job {
		var jobs batchv1.JobList
		if err := w.c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: "TerraformCluster", infrav1.OpLabel: string(infrav1.OperationApply)}); err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Items {
			seen[j.Name] = true
		}
		return sortedJobs(jobs.Items)
	}
	// The lagging manager decides while the first Job runs. Two guards
	// keep it from starting a second Job: status.activeJob names a Job its
	// cache lacks (it waits for the cache, JobCacheStale), and the run
	// lease. test/lifecycle proves the run lease on its own
	// (run_lease_keeps_a_second_Job_from_starting); here the safety
	// property is checked: never two unfinished Jobs, one apply a change.
	{
		const attempt = 1
		applies()
		appliesBefore := len(seen)
		waitsBefore := w.eventCounts(ctx, ns, "TerraformCluster")[infrav1.WaitingForRunLeaseEvent]
		setRound(strconv.Itoa(2*attempt - 1))
		var first batchv1.Job
		w.eventually(ctx, 2*time.Minute, "the first change's apply Job", func() (bool, string) {
			js := applies()
			if len(seen) == appliesBefore {
				return false, "no new apply Job"
			}
			first = js[len(js)-1]
			return true, ""
		})
		if first.Status.CompletionTime != nil || first.Status.Failed > 0 {
			t.Fatalf("apply Job %s finished before the second change was made", first.Name)
		}
		setRound(strconv.Itoa(2 * attempt))
		w.eventually(ctx, 5*time.Minute, "both changes to be applied, one after the other", func() (bool, string) {
			if err := w.c.Get(ctx, key, tc); err != nil {
				return false, err.Error()
			}
			js := applies()
			ok, why := ready(tc)
			last := js[len(js)-1]
			return ok && tc.Status.ActiveJob == nil && len(seen) >= appliesBefore+2 && last.Status.Succeeded > 0 && last.Name != first.Name,
				why + "; newest apply " + last.Name
		})
		noOverlap()
		applies()
		if n := len(seen) - appliesBefore; n != 2 {
			t.Errorf("the two changes ran %d apply Jobs, want 2", n)
		}
		// The second manager did race when it asked for the run lease
		// while the first change's Job held it.
		waits := w.eventCounts(ctx, ns, "TerraformCluster")[infrav1.WaitingForRunLeaseEvent] - waitsBefore
		t.Logf("%d %s events on the TerraformCluster after the changes", waits, infrav1.WaitingForRunLeaseEvent)
	}
	stopSampling()
	noOverlap()
}
