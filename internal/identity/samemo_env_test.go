package identity

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// countingReader counts the TerraformMachine lists it serves.
type countingReader struct {
	client.Reader
	lists *atomic.Int64
}

func (r countingReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if _, ok := l.(*infrav1.TerraformMachineList); ok {
		r.lists.Add(1)
	}
	return r.Reader.List(ctx, l, opts...)
}

// TestServiceAccountMemo: the runner RoleBinding binds the ServiceAccounts
// of every object of the namespace ("Runner RBAC"); the memo answers what
// listing them would, lists again only after a change that can change the
// answer (seen by the cache's events): an object's ServiceAccount, labels,
// removal, a machine arriving with a ServiceAccount not bound yet; not
// after a status write, another spec change or a machine arriving with a
// bound one.
func TestServiceAccountMemo(t *testing.T) {
	ns := namespace(t, nil)
	tc := newCluster(t, ns, "c", "id", nil)
	newCAPICluster(t, ns, "c", tc.Name)
	m := newMachine(t, ns, "m", "c", nil)

	cc, err := cache.New(testCfg, cache.Options{Scheme: testScheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	must(t, err)
	memo := NewServiceAccountMemo()
	must(t, memo.Watch(ctx, cc))
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = cc.Start(cctx) }()
	if !cc.WaitForCacheSync(cctx) {
		t.Fatal("cache did not sync")
	}
	lists := &atomic.Int64{}
	r := countingReader{cc, lists}
	want := func(sas ...string) {
		t.Helper()
		eventually(t, func() error {
			got, err := memo.ServiceAccounts(ctx, r, ns)
			if err != nil {
				return err
			}
			if !slices.Equal(got, sas) {
				return fmt.Errorf("ServiceAccounts %v, want %v", got, sas)
			}
			return nil
		})
	}
	want(RunnerName)
	before := lists.Load()
	for range 5 {
		want(RunnerName)
	}
	if n := lists.Load() - before; n != 0 {
		t.Fatalf("unchanged namespace: listed %d times", n)
	}

	// A status write changes no ServiceAccount: no list.
	m.Status.StateSecretSuffix = "x"
	must(t, k8s.Status().Update(ctx, m))
	eventually(t, func() error {
		cached := &infrav1.TerraformMachine{}
		if err := cc.Get(ctx, client.ObjectKeyFromObject(m), cached); err != nil || cached.Status.StateSecretSuffix != "x" {
			return fmt.Errorf("status not cached yet (%v)", err)
		}
		return nil
	})
	want(RunnerName)
	if n := lists.Load() - before; n != 0 {
		t.Fatalf("a status write: listed %d times", n)
	}

	// A spec change that is not a ServiceAccount (the provider ID), and
	// machines arriving that run as a ServiceAccount already bound (the
	// bring-up's thousands): no list.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(m), m))
	m.Spec.ProviderID = "captf://m"
	must(t, k8s.Update(ctx, m))
	newMachine(t, ns, "arrives", "c", nil)
	newMachine(t, ns, "arrives-named", "c", func(m *infrav1.TerraformMachine) { m.Spec.Jobs = &infrav1.JobPolicy{ServiceAccountName: RunnerName} })
	eventually(t, func() error {
		l := &infrav1.TerraformMachineList{}
		if err := cc.List(ctx, l, client.InNamespace(ns)); err != nil || len(l.Items) != 3 {
			return fmt.Errorf("machines not cached yet (%v)", err)
		}
		cached := &infrav1.TerraformMachine{}
		if err := cc.Get(ctx, client.ObjectKeyFromObject(m), cached); err != nil || cached.Spec.ProviderID == "" {
			return fmt.Errorf("provider ID not cached yet (%v)", err)
		}
		return nil
	})
	want(RunnerName)
	if n := lists.Load() - before; n != 0 {
		t.Fatalf("a provider ID and two machines of a bound ServiceAccount: listed %d times", n)
	}

	// The machine's own ServiceAccount, a new machine, a removed one.
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(m), m))
	m.Spec.Jobs = &infrav1.JobPolicy{ServiceAccountName: "custom"}
	must(t, k8s.Update(ctx, m))
	want("captf-runner", "custom")
	newMachine(t, ns, "m2", "", func(m *infrav1.TerraformMachine) { m.Spec.Jobs = &infrav1.JobPolicy{ServiceAccountName: "second"} })
	want("captf-runner", "custom", "second")
	must(t, k8s.Delete(ctx, m))
	want("captf-runner", "second")
	// Its cluster's default reaches a machine through its cluster.
	newMachine(t, ns, "m3", "c", nil)
	must(t, k8s.Get(ctx, client.ObjectKeyFromObject(tc), tc))
	tc.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{ServiceAccountName: "cluster-default"}}
	must(t, k8s.Update(ctx, tc))
	want("captf-runner", "cluster-default", "second")

	// A nil memo lists every time.
	var none *ServiceAccountMemo
	before = lists.Load()
	if _, err := none.ServiceAccounts(ctx, r, ns); err != nil || lists.Load() != before+1 {
		t.Fatalf("a nil memo: %v, %d lists", err, lists.Load()-before)
	}
}
