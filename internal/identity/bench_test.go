package identity

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func BenchmarkSourceHash(b *testing.B) {
	for _, size := range []int{5, 64} {
		data := map[string][]byte{}
		for i := range size {
			data[fmt.Sprintf("KEY_%02d", i)] = []byte(strings.Repeat("v", 1024))
		}
		b.Run(fmt.Sprintf("%d_keys_of_1KiB", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = SourceHash(data)
			}
		})
	}
}

func BenchmarkPlanMirror(b *testing.B) {
	data := map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("AKIA"), "AWS_SECRET_ACCESS_KEY": []byte(strings.Repeat("s", 40))}
	hash := SourceHash(data)
	owner := metav1.OwnerReference{UID: "u"}
	s := buildMirror(client.ObjectKey{Namespace: "ns", Name: MirrorName("id")}, "id", hash, credentials{data: data}, owner)
	b.ReportAllocs()
	for b.Loop() {
		if PlanMirror(s, "id", hash, owner).Action != MirrorInPlace {
			b.Fatal("not in place")
		}
	}
}

// namespaceOf builds a namespace of clusters, each with machines.
func namespaceOf(clusters, machinesPerCluster int) *Workloads {
	b := &wl{}
	for c := range clusters {
		name := fmt.Sprintf("c%d", c)
		b.cluster(name, fmt.Sprintf("sa-%d", c%3), "")
		b.w.Clusters[c].Spec.IdentityRef = ref("id")
		for m := range machinesPerCluster {
			b.machine(fmt.Sprintf("%s-m%d", name, m), name, "")
		}
	}
	return &b.w
}

func BenchmarkRunnerServiceAccounts(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("%d_machines", n), func(b *testing.B) {
			w := namespaceOf(10, n/10)
			b.ReportAllocs()
			for b.Loop() {
				_ = RunnerServiceAccounts(w)
			}
		})
	}
}

func BenchmarkUsersOf(b *testing.B) {
	w := namespaceOf(100, 10)
	b.ReportAllocs()
	for b.Loop() {
		if len(w.UsersOf("id")) != 1100 {
			b.Fatal("wrong count")
		}
	}
}

// writeCounter counts the API writes a client makes.
func writeCounter(n *atomic.Int64) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.Add(1)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	}
}

func TestSteadyStateCredentialsStepWritesNothing(t *testing.T) {
	f := newCredsFixture(t)
	obj := newCluster(t, f.tenant, uniqueName("c"), f.identity, nil)
	var writes atomic.Int64
	cw, err := client.NewWithWatch(testCfg, client.Options{Scheme: testScheme})
	must(t, err)
	c := interceptor.NewClient(cw, writeCounter(&writes))
	cr, err := Reconcile(ctx, c, c, obj, obj)
	must(t, err)
	if !cr.Ready() || cr.WaitReason() != "" {
		t.Fatalf("first pass: %+v", cr.Verdicts())
	}
	if writes.Load() != 3 {
		t.Fatalf("first pass made %d writes, want 3 (mirror, ServiceAccount, RoleBinding)", writes.Load())
	}
	writes.Store(0)
	for range 3 {
		if _, err := Reconcile(ctx, c, c, obj, obj); err != nil {
			t.Fatal(err)
		}
	}
	if writes.Load() != 0 {
		t.Fatalf("a pass that decides nothing made %d writes", writes.Load())
	}
}

// BenchmarkCredentialsStepSteadyState measures one steady-state pass of the
// credentials step against the real API server with an uncached client
// (the manager reads most of it from its cache; this is the upper bound).
func BenchmarkCredentialsStepSteadyState(b *testing.B) {
	f := newCredsFixture(b)
	obj := newCluster(b, f.tenant, uniqueName("c"), f.identity, nil)
	if _, err := Reconcile(ctx, k8s, k8s, obj, obj); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Reconcile(ctx, k8s, k8s, obj, obj); err != nil {
			b.Fatal(err)
		}
	}
}
