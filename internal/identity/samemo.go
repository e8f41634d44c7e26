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
	// anyMember: sas holds every ServiceAccount a new machine or pool
	// that names none of its own could run as (captf-runner and every
	// cluster default of the namespace), so such an object's arrival
	// changes nothing.
	anyMember bool
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
		e, err := listServiceAccounts(ctx, c, namespace)
		return e.sas, err
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
	e, err := listServiceAccounts(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.changes[namespace] == at {
		e.at = at
		m.memo[namespace] = e
	}
	m.mu.Unlock()
	return e.sas, nil
}

func listServiceAccounts(ctx context.Context, c client.Reader, namespace string) (memoEntry, error) {
	w, err := listSharedWorkloads(ctx, c, namespace)
	if err != nil {
		return memoEntry{}, err
	}
	e := memoEntry{sas: RunnerServiceAccounts(w), anyMember: true}
	candidates := []string{RunnerName}
	for i := range w.Clusters {
		if sa := clusterDefaultServiceAccount(&w.Clusters[i]); sa != "" {
			candidates = append(candidates, sa)
		}
	}
	for _, sa := range candidates {
		if !slices.Contains(e.sas, sa) {
			e.anyMember = false
		}
	}
	return e, nil
}

// Watch registers the memo with the informers of every kind
// RunnerServiceAccounts reads. What forgets a namespace's answer: an object
// deleted; one added, unless it is a machine or pool whose ServiceAccount
// the answer already holds whatever its cluster (during a bring-up,
// thousands of machines arrive, and each would otherwise list the whole
// namespace again); one updated in what the answer is made of (its own or
// its cluster's default ServiceAccount, a Cluster's infrastructureRef),
// its labels or its deletion. Other spec changes (a machine's provider ID)
// and status writes keep it.
func (m *ServiceAccountMemo) Watch(ctx context.Context, informers cache.Informers) error {
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if !m.covers(obj) {
				m.changedObject(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if !ok1 || !ok2 || serviceAccountInputs(o) != serviceAccountInputs(n) || !maps.Equal(o.GetLabels(), n.GetLabels()) ||
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

// covers says a newly added obj changes nothing of its namespace's current
// answer: a machine or pool whose own ServiceAccount the answer holds, or
// that names none while the answer holds every one it could run as.
func (m *ServiceAccountMemo) covers(obj any) bool {
	o, ok := obj.(client.Object)
	if !ok || !clusterMember(o) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.memo[o.GetNamespace()]
	if !ok || e.at != m.changes[o.GetNamespace()] {
		return false
	}
	if sa := ownServiceAccount(o); sa != "" {
		return slices.Contains(e.sas, sa)
	}
	return e.anyMember
}

// serviceAccountInputs is what of obj's spec RunnerServiceAccounts reads:
// a machine's or pool's own ServiceAccount, a TerraformCluster's own and
// default ones, a Cluster's infrastructureRef.
func serviceAccountInputs(obj client.Object) string {
	switch o := obj.(type) {
	case *infrav1.TerraformCluster:
		return ServiceAccountFor(o, nil) + "/" + clusterDefaultServiceAccount(o)
	case *clusterv1.Cluster:
		r := o.Spec.InfrastructureRef
		return r.APIGroup + "/" + r.Kind + "/" + r.Name
	}
	return ownServiceAccount(obj)
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
