package watches

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// shardFleet holds a blue and a green TerraformMachine, each with a Job it
// controls, and a Job whose owner is gone.
func shardFleet(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := infrav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{}
	for _, shard := range []string{"blue", "green", "gone"} {
		tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: shard, UID: types.UID("uid-" + shard),
			Labels: map[string]string{clusterv1.WatchLabel: shard}}}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-" + shard, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: infrav1.GroupVersion.String(), Kind: string(infrav1.KindTerraformMachine), Name: shard, UID: tm.UID, Controller: new(true)}}}}
		objs = append(objs, job)
		if shard != "gone" {
			objs = append(objs, tm)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// TestShardQueueAdmitsOnlyTheShard checks --watch-filter at the queue
// (Manager flags, --watch-filter: however an object is woken): each way in
// admits the shard's object and the object nothing can read, and drops the
// other shard's.
func TestShardQueueAdmitsOnlyTheShard(t *testing.T) {
	c := shardFleet(t)
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}}
	}
	for _, c2 := range []struct {
		filter string
		want   map[string]bool
	}{
		{"blue", map[string]bool{"blue": true, "green": false, "gone": true}},
		{"", map[string]bool{"blue": true, "green": true, "gone": true}},
	} {
		newQueue := Shard{Filter: c2.filter}.Queue(c, func() client.Object { return &infrav1.TerraformMachine{} })
		q := newQueue("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](0, 0))
		pq := q.(priorityqueue.PriorityQueue[reconcile.Request])
		ways := map[string]func(reconcile.Request){
			"Add":            q.Add,
			"AddRateLimited": q.AddRateLimited,
			"AddAfter":       func(r reconcile.Request) { q.AddAfter(r, 0) },
			"AddWithOpts":    func(r reconcile.Request) { pq.AddWithOpts(priorityqueue.AddOpts{}, r) },
		}
		for way, add := range ways {
			var want []string
			for _, name := range []string{"blue", "gone", "green"} {
				add(req(name))
				if c2.want[name] {
					want = append(want, name)
				}
			}
			// The priority queue files adds asynchronously: wait until it
			// holds what it should, or a moment longer.
			deadline := time.Now().Add(2 * time.Second)
			for q.Len() < len(want) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			var got []string
			for q.Len() > 0 {
				it, _ := q.Get()
				got = append(got, it.Name)
				q.Done(it)
				q.Forget(it)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("filter %q, %s: queued %v, want %v", c2.filter, way, got, want)
			}
		}
		q.ShutDown()
	}
}

// TestShardQueueJudgesAgainOnTheWayOut checks a request admitted while its
// object was not in the cache yet (created a moment ago): a worker never
// gets it once the object shows it is another shard's, and still gets it
// when it is the shard's.
func TestShardQueueJudgesAgainOnTheWayOut(t *testing.T) {
	c := shardFleet(t)
	newQueue := Shard{Filter: "blue"}.Queue(c, func() client.Object { return &infrav1.TerraformMachine{} })
	q := newQueue("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](0, 0))
	defer q.ShutDown()
	late := func(name, shard string) reconcile.Request {
		req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}}
		q.Add(req)
		tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{clusterv1.WatchLabel: shard}}}
		if err := c.Create(context.Background(), tm); err != nil {
			t.Fatal(err)
		}
		return req
	}
	late("late-green", "green")
	want := late("late-blue", "blue")
	deadline := time.Now().Add(2 * time.Second)
	for q.Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got, _ := q.Get()
	q.Done(got)
	if got != want {
		t.Fatalf("a worker got %v, want %v", got, want)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d requests left in the queue, want 0", n)
	}
}

// TestShardQueueHandsOutNoUncachedObject checks that with Gone set, a
// worker never takes a request whose object the cache does not hold (a
// deleted object, or one woken before it was cached, which its own create
// event wakes again): Gone does the not-found work instead, so no pass
// runs, not even one that would find another shard's object.
func TestShardQueueHandsOutNoUncachedObject(t *testing.T) {
	c := shardFleet(t)
	var gone []string
	newQueue := Shard{Filter: "blue", Gone: func(r reconcile.Request) { gone = append(gone, r.Name) }}.
		Queue(c, func() client.Object { return &infrav1.TerraformMachine{} })
	q := newQueue("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](0, 0))
	defer q.ShutDown()
	for _, name := range []string{"gone", "blue"} {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}})
	}
	deadline := time.Now().Add(2 * time.Second)
	for q.Len() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got, _ := q.Get()
	q.Done(got)
	if got.Name != "blue" {
		t.Fatalf("a worker got %v, want ns/blue", got)
	}
	if !slices.Equal(gone, []string{"gone"}) {
		t.Errorf("Gone called for %v, want [gone]", gone)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d requests left in the queue, want 0", n)
	}
}

// TestShardJobsCountsOnlyTheShard checks that the Jobs a manager counts
// (captf_jobs_active) are those of its shard's objects.
func TestShardJobsCountsOnlyTheShard(t *testing.T) {
	c := shardFleet(t)
	for filter, want := range map[string][]string{"blue": {"job-blue"}, "green": {"job-green"}, "": {"job-blue", "job-gone", "job-green"}} {
		var jobs batchv1.JobList
		if err := (Shard{Filter: filter}).Jobs(c).List(context.Background(), &jobs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs.Items {
			got = append(got, j.Name)
		}
		if len(got) != len(want) {
			t.Errorf("filter %q counts %v, want %v", filter, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("filter %q counts %v, want %v", filter, got, want)
			}
		}
	}
}
