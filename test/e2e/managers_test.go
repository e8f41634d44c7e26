package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestTwoManagersNeverRunTwoJobsOfOneObject runs a second manager, without
// leader election, beside the environment's: the run leases keep them from
// ever running two Jobs of one object at once (book: The Reconcile
// Lifecycle, "Run leases and the cluster operation gate"), and the Quick
// Start still converges.
func TestTwoManagersNeverRunTwoJobsOfOneObject(t *testing.T) {
	w := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	second, stopSecond := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := framework.RunManager(second, w.e, managerOptions(w.images.Runner)); err != nil && second.Err() == nil {
			t.Errorf("second manager: %v", err)
		}
	}()
	defer func() { stopSecond(); wg.Wait() }()

	// Sample the Jobs while the cluster comes up: no object may ever have
	// two unfinished Jobs.
	var mu sync.Mutex
	var overlaps []string
	sampling, stopSampling := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sampling.Err() == nil {
			var jobs batchv1.JobList
			if err := w.c.List(sampling, &jobs, client.InNamespace("team-a")); err == nil {
				active := map[string][]string{}
				for _, j := range jobs.Items {
					if j.Status.CompletionTime == nil && j.Status.Failed == 0 && j.DeletionTimestamp.IsZero() {
						owner := j.Labels[infrav1.OwnerKindLabel] + "/" + j.Labels[infrav1.OwnerNameLabel]
						active[owner] = append(active[owner], j.Name)
					}
				}
				for owner, names := range active {
					if len(names) > 1 {
						mu.Lock()
						overlaps = append(overlaps, owner+": "+strings.Join(names, ", "))
						mu.Unlock()
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	q := framework.QuickStart{Root: root(t), Client: w.c, Images: w.images, Namespace: "team-a", Cluster: "my-cluster"}
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute)
	stopSampling()
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start did not finish with two managers: %s", why)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(overlaps) > 0 {
		t.Fatalf("two Jobs of one object ran at once: %v", overlaps)
	}
}
