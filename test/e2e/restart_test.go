package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestManagerRestartMidBringUp stops the manager as soon as the cluster's
// first Job exists and starts a new one: the bring-up converges and no Job
// is created twice (deterministic Job names, the run lease, and bookkeeping
// that survives a lost pass). Its namespace is left out of the shared
// manager: the scenario's own managers, scoped to it, are the only ones.
func TestManagerRestartMidBringUp(t *testing.T) {
	t.Parallel()
	w := start(t, restartNamespace)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e, c, imgs := w.e, w.c, w.images
	passesBefore := w.passes.InNamespace(w.ns)

	var wg sync.WaitGroup
	run := func(ctx context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := managerOptions(imgs.Runner)
			o.Namespace = w.ns
			o.WebhookPort = 0 // the shared manager serves the webhooks
			if err := framework.RunManager(ctx, e, o); err != nil && ctx.Err() == nil {
				t.Errorf("manager: %v", err)
			}
		}()
	}
	first, stopFirst := context.WithCancel(ctx)
	run(first)

	q := w.quickStart()
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 5*time.Minute, "the cluster's first Job", func() (bool, string) {
		var jobs batchv1.JobList
		_ = c.List(ctx, &jobs, client.InNamespace(w.ns))
		return len(jobs.Items) > 0, "no Job yet"
	})
	stopFirst()
	wg.Wait()
	second, stopSecond := context.WithCancel(ctx)
	defer func() { stopSecond(); wg.Wait() }()
	run(second)

	rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute)
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the bring-up did not converge after the restart: %s", why)
	}
	// Every Job was created once: one JobCreated event per Job name, and
	// one apply per object (the no-op modules succeed the first time).
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	created := map[string]int{}
	for _, ev := range evs.Items {
		if ev.Reason == infrav1.JobCreatedEvent && ev.Related != nil {
			created[ev.Related.Name]++
		}
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	perOwner := map[string]int{}
	for _, j := range jobs.Items {
		perOwner[j.Labels[infrav1.OwnerKindLabel]+"/"+j.Labels[infrav1.OwnerNameLabel]+"/"+j.Labels[infrav1.OpLabel]]++
	}
	for name, n := range created {
		if n > 1 {
			t.Errorf("Job %s was created %d times", name, n)
		}
	}
	for owner, n := range perOwner {
		if n != 1 {
			t.Errorf("%s ran %d Jobs, want 1", owner, n)
		}
	}
	if len(perOwner) != 2 {
		t.Errorf("Jobs by owner and operation: %v, want one apply each for the cluster and the machine", perOwner)
	}
	if n := w.passes.InNamespace(w.ns) - passesBefore; n != 0 {
		t.Errorf("the shared manager reconciled %d times in %s, which it leaves to the scenario's managers", n, w.ns)
	}
}
