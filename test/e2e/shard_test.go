package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// shardNamespaces are left to TestShardedManagers' managers.
var shardNamespaces = []string{"team-shard-a", "team-shard-b"}

// TestShardedManagers runs two managers on one API server and one fleet,
// as Cluster API shards its providers: each watches both of the fleet's
// namespaces (--namespace with two) and reconciles one shard
// (--watch-filter blue, --watch-filter green). Three Quick Start clusters,
// each labeled for one shard (the label on every object and on what
// Cluster API clones from the templates), come up; then each object was
// reconciled only by its shard's manager (passes counted per manager), each
// ran one apply Job, created once. Then a Ready cluster is relabeled from
// blue to green and its inputs changed: green applies the change, blue
// never passes over the object again.
func TestShardedManagers(t *testing.T) {
	t.Parallel()
	w := start(t, shardNamespaces[0])
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	passesBefore := w.passes.InNamespace(shardNamespaces[0]) + w.passes.InNamespace(shardNamespaces[1])

	shards := []string{"blue", "green"}
	passes := map[string]*framework.Passes{}
	var wg sync.WaitGroup
	mctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	for _, shard := range shards {
		passes[shard] = framework.NewPasses()
		o := managerOptions(w.images.Runner)
		o.Namespace = strings.Join(shardNamespaces, ",")
		o.WatchFilter = shard
		o.WebhookPort = 0 // the shared manager serves the webhooks
		o.Logger = passes[shard].Logger(o.Logger)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := framework.RunManager(mctx, w.e, o); err != nil && mctx.Err() == nil {
				t.Errorf("manager %s: %v", shard, err)
			}
		}()
	}

	type fleetCluster struct{ ns, name, shard string }
	fleet := []fleetCluster{
		{shardNamespaces[0], "blue-a", "blue"},
		{shardNamespaces[0], "green-a", "green"},
		{shardNamespaces[1], "green-b", "green"},
	}
	perNamespace := map[string]int{}
	for _, fc := range fleet {
		q := framework.QuickStart{Root: root(t), Client: w.c, Images: w.images, Namespace: fc.ns, Cluster: fc.name,
			Identity: "aws-" + fc.name, Labels: map[string]string{clusterv1.WatchLabel: fc.shard}}
		if err := q.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		perNamespace[fc.ns]++
	}
	// Each namespace holds its clusters, each with one TerraformCluster and
	// one TerraformMachine Ready, its Cluster and Machine Provisioned.
	for ns, clusters := range perNamespace {
		q := framework.QuickStart{Client: w.c, Namespace: ns}
		w.ns = ns
		w.eventually(ctx, 10*time.Minute, "the sharded fleet in "+ns, func() (bool, string) {
			rows, err := q.Rows(ctx)
			if err != nil {
				return false, err.Error()
			}
			seen := map[string]int{}
			for _, r := range rows {
				seen[r.Kind]++
				if done, why := framework.Done([]framework.Row{r}); !done && !strings.HasPrefix(why, "0 ") {
					return false, why
				}
			}
			for kind, n := range seen {
				if n != clusters {
					return false, fmt.Sprintf("%d %s, want %d", n, kind, clusters)
				}
			}
			return len(seen) == 4, fmt.Sprintf("kinds %v", seen)
		})
	}

	// shardOf reads each Terraform* object of the fleet and its shard.
	shardOf := func() map[framework.Object]string {
		out := map[framework.Object]string{}
		for _, ns := range shardNamespaces {
			var tcs infrav1.TerraformClusterList
			var tms infrav1.TerraformMachineList
			if err := w.c.List(ctx, &tcs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if err := w.c.List(ctx, &tms, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, o := range tcs.Items {
				out[framework.Object{Kind: "TerraformCluster", Namespace: ns, Name: o.Name}] = o.Labels[clusterv1.WatchLabel]
			}
			for _, o := range tms.Items {
				out[framework.Object{Kind: "TerraformMachine", Namespace: ns, Name: o.Name}] = o.Labels[clusterv1.WatchLabel]
			}
		}
		return out
	}
	objects := shardOf()
	if len(objects) != 2*len(fleet) {
		t.Fatalf("the fleet has %d Terraform* objects, want a TerraformCluster and a TerraformMachine per cluster: %v", len(objects), objects)
	}
	for o, shard := range objects {
		for _, m := range shards {
			n := passes[m].Done(o)
			switch {
			case m == shard && n == 0:
				t.Errorf("%s %s/%s (shard %q) was never reconciled by its shard's manager", o.Kind, o.Namespace, o.Name, shard)
			case m != shard && n > 0:
				t.Errorf("%s %s/%s (shard %q) was reconciled %d times by the %s manager", o.Kind, o.Namespace, o.Name, shard, n, m)
			}
		}
	}
	t.Logf("passes over the fleet: blue %d, green %d", passes["blue"].InNamespace(shardNamespaces[0])+passes["blue"].InNamespace(shardNamespaces[1]),
		passes["green"].InNamespace(shardNamespaces[0])+passes["green"].InNamespace(shardNamespaces[1]))
	if n := w.passes.InNamespace(shardNamespaces[0]) + w.passes.InNamespace(shardNamespaces[1]) - passesBefore; n != 0 {
		t.Errorf("the shared manager reconciled %d times in the shards' namespaces", n)
	}
	shardJobsCreatedOnce(ctx, t, w, 1)

	// Relabel blue-a's TerraformCluster to green, then change its inputs:
	// green applies the change; blue does not pass over it again.
	moved := framework.Object{Kind: "TerraformCluster", Namespace: shardNamespaces[0], Name: "blue-a"}
	tc := &infrav1.TerraformCluster{}
	key := client.ObjectKey{Namespace: moved.Namespace, Name: moved.Name}
	if err := w.c.Get(ctx, key, tc); err != nil {
		t.Fatal(err)
	}
	before := tc.DeepCopy()
	tc.Labels[clusterv1.WatchLabel] = "green"
	if err := w.c.Patch(ctx, tc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	greenBefore := passes["green"].Done(moved)
	w.eventually(ctx, 2*time.Minute, "the green manager to take the relabeled TerraformCluster", func() (bool, string) {
		n := passes["green"].Done(moved)
		return n > greenBefore, fmt.Sprintf("green passes %d", n)
	})
	blueBefore := passes["blue"].Done(moved)
	if err := w.c.Get(ctx, key, tc); err != nil {
		t.Fatal(err)
	}
	before = tc.DeepCopy()
	if tc.Spec.Variables == nil {
		tc.Spec.Variables = map[string]apiextensionsv1.JSON{}
	}
	tc.Spec.Variables["extra_tags"] = apiextensionsv1.JSON{Raw: []byte(`{"shard":"green"}`)}
	if err := w.c.Patch(ctx, tc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	w.ns = moved.Namespace
	w.eventually(ctx, 5*time.Minute, "the relabeled TerraformCluster's change to be applied", func() (bool, string) {
		if err := w.c.Get(ctx, key, tc); err != nil {
			return false, err.Error()
		}
		ok, why := ready(tc)
		return ok && tc.Status.ActiveJob == nil && tc.Status.ObservedGeneration == tc.Generation && applyJobs(ctx, t, w, moved) == 2, why
	})
	if n := passes["blue"].Done(moved) - blueBefore; n != 0 {
		t.Errorf("the blue manager passed %d times over %s/%s after it moved to green", n, moved.Namespace, moved.Name)
	}
	shardJobsCreatedOnce(ctx, t, w, 0)
}

// applyJobs counts the apply Jobs of o.
func applyJobs(ctx context.Context, t *testing.T, w *world, o framework.Object) int {
	t.Helper()
	var jobs batchv1.JobList
	if err := w.c.List(ctx, &jobs, client.InNamespace(o.Namespace), client.MatchingLabels{
		infrav1.OwnerKindLabel: o.Kind, infrav1.OwnerNameLabel: o.Name, infrav1.OpLabel: string(infrav1.OperationApply)}); err != nil {
		t.Fatal(err)
	}
	return len(jobs.Items)
}

// shardJobsCreatedOnce fails the test when a Job of the shards' namespaces
// was created twice (two JobCreated events), or, with perOwner set, when an
// object ran other than perOwner Jobs of an operation.
func shardJobsCreatedOnce(ctx context.Context, t *testing.T, w *world, perOwner int) {
	t.Helper()
	for _, ns := range shardNamespaces {
		var evs eventsv1.EventList
		if err := w.c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		created := map[string]int{}
		for _, ev := range evs.Items {
			if ev.Reason == infrav1.JobCreatedEvent && ev.Related != nil {
				created[ev.Related.Name]++
			}
		}
		for name, n := range created {
			if n > 1 {
				t.Errorf("Job %s/%s was created %d times", ns, name, n)
			}
		}
		if perOwner == 0 {
			continue
		}
		var jobs batchv1.JobList
		if err := w.c.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		runs := map[string]int{}
		for _, j := range jobs.Items {
			runs[j.Labels[infrav1.OwnerKindLabel]+"/"+j.Labels[infrav1.OwnerNameLabel]+"/"+j.Labels[infrav1.OpLabel]]++
		}
		for owner, n := range runs {
			if n != perOwner {
				t.Errorf("%s/%s ran %d Jobs, want %d", ns, owner, n, perOwner)
			}
		}
	}
}
