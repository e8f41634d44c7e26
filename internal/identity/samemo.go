package identity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// ServiceAccountMemo remembers, per namespace, the ServiceAccounts the
// namespace's objects run as (RunnerServiceAccounts), which every pass
// binds in the runner RoleBinding. Working them out lists every
// TerraformCluster, TerraformMachine, TerraformMachinePool and Cluster of
// the namespace: at thousands of machines per namespace that list costs
// more than the rest of the pass, and its answer changes only when an
// object comes, goes, or changes its spec or labels (its own
// serviceAccountName, its cluster-name label, its cluster's default, a
// Cluster's infrastructureRef). Watch makes the cache's events forget a
// namespace's answer on such a change; status updates keep it. The zero
// value is not usable: use NewServiceAccountMemo. A nil memo lists every
// time.
type ServiceAccountMemo struct {
	mu sync.Mutex
	// changes counts, per namespace, the changes seen.
	changes map[string]uint64
	// memo is each namespace's answer and the count it was worked out at.
	memo map[string]memoEntry
}

type memoEntry struct {
	at  uint64
	sas []string
}

// NewServiceAccountMemo returns an empty memo.
func NewServiceAccountMemo() *ServiceAccountMemo {
	return &ServiceAccountMemo{changes: map[string]uint64{}, memo: map[string]memoEntry{}}
}

// Changed forgets namespace's answer.
func (m *ServiceAccountMemo) Changed(namespace string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes[namespace]++
	delete(m.memo, namespace)
}

// ServiceAccounts returns RunnerServiceAccounts of namespace's objects as
// c holds them, worked out again only after a change. The returned slice
// is shared: read it only.
func (m *ServiceAccountMemo) ServiceAccounts(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	if m == nil {
		return listServiceAccounts(ctx, c, namespace)
	}
	m.mu.Lock()
	at := m.changes[namespace]
	e, ok := m.memo[namespace]
	m.mu.Unlock()
	if ok && e.at == at {
		return e.sas, nil
	}
	// Listed after reading the count: a change the list misses counts
	// after it, and the answer kept here is dropped.
	sas, err := listServiceAccounts(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.changes[namespace] == at {
		m.memo[namespace] = memoEntry{at: at, sas: sas}
	}
	m.mu.Unlock()
	return sas, nil
}

func listServiceAccounts(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	w, err := listSharedWorkloads(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return RunnerServiceAccounts(w), nil
}

// Watch registers the memo with the informers of every kind
// RunnerServiceAccounts reads: an object added or deleted, or updated with
// a new generation (its spec), other labels or a deletion, forgets its
// namespace's answer.
func (m *ServiceAccountMemo) Watch(ctx context.Context, informers cache.Informers) error {
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { m.changedObject(obj) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if !ok1 || !ok2 || o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetLabels(), n.GetLabels()) ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) {
				m.changedObject(newObj)
			}
		},
		DeleteFunc: func(obj any) { m.changedObject(obj) },
	}
	objs := []client.Object{&clusterv1.Cluster{}}
	for _, k := range infrav1.WorkloadKinds() {
		objs = append(objs, k.NewObject())
	}
	for _, obj := range objs {
		inf, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("failed to watch %T for the runner ServiceAccounts: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("failed to watch %T for the runner ServiceAccounts: %w", obj, err)
		}
	}
	return nil
}

func (m *ServiceAccountMemo) changedObject(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(client.Object); ok {
		m.Changed(o.GetNamespace())
		return
	}
	// Unknown: forget every namespace.
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ns := range slices.Collect(maps.Keys(m.memo)) {
		m.changes[ns]++
		delete(m.memo, ns)
	}
}
