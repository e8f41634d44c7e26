package identity

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Workloads are the TerraformClusters, TerraformMachines and
// TerraformMachinePools of a namespace (or of every namespace), with the
// Cluster API Clusters that link machines and pools to their
// TerraformCluster. Its methods are pure.
type Workloads struct {
	Clusters     []infrav1.TerraformCluster
	Machines     []infrav1.TerraformMachine
	Pools        []infrav1.TerraformMachinePool
	CAPIClusters []clusterv1.Cluster

	capi map[client.ObjectKey]*clusterv1.Cluster
	tc   map[client.ObjectKey]*infrav1.TerraformCluster
}

// ListWorkloads reads the Workloads of namespace ("" for every namespace).
func ListWorkloads(ctx context.Context, r client.Reader, namespace string) (*Workloads, error) {
	return listWorkloads(ctx, r, namespace)
}

// listSharedWorkloads is ListWorkloads without copying each object out of
// a cache: the Workloads share the cache's objects and must only be read.
// A pass reads every object of its namespace to bind their ServiceAccounts;
// copying a 5,000-machine namespace on every pass would cost more than the
// pass itself.
func listSharedWorkloads(ctx context.Context, r client.Reader, namespace string) (*Workloads, error) {
	return listWorkloads(ctx, r, namespace, client.UnsafeDisableDeepCopy)
}

func listWorkloads(ctx context.Context, r client.Reader, namespace string, extra ...client.ListOption) (*Workloads, error) {
	w := &Workloads{}
	opts := append([]client.ListOption{}, extra...)
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	tcs := &infrav1.TerraformClusterList{}
	if err := r.List(ctx, tcs, opts...); err != nil {
		return nil, fmt.Errorf("failed to list TerraformClusters: %w", err)
	}
	tms := &infrav1.TerraformMachineList{}
	if err := r.List(ctx, tms, opts...); err != nil {
		return nil, fmt.Errorf("failed to list TerraformMachines: %w", err)
	}
	tmps := &infrav1.TerraformMachinePoolList{}
	if err := r.List(ctx, tmps, opts...); err != nil {
		return nil, fmt.Errorf("failed to list TerraformMachinePools: %w", err)
	}
	w.Clusters, w.Machines, w.Pools = tcs.Items, tms.Items, tmps.Items
	if len(w.Machines)+len(w.Pools) > 0 {
		cls := &clusterv1.ClusterList{}
		if err := r.List(ctx, cls, opts...); err != nil {
			return nil, fmt.Errorf("failed to list Clusters: %w", err)
		}
		w.CAPIClusters = cls.Items
	}
	return w, nil
}

func (w *Workloads) index() {
	if w.capi != nil {
		return
	}
	w.capi = make(map[client.ObjectKey]*clusterv1.Cluster, len(w.CAPIClusters))
	for i := range w.CAPIClusters {
		w.capi[client.ObjectKeyFromObject(&w.CAPIClusters[i])] = &w.CAPIClusters[i]
	}
	w.tc = make(map[client.ObjectKey]*infrav1.TerraformCluster, len(w.Clusters))
	for i := range w.Clusters {
		w.tc[client.ObjectKeyFromObject(&w.Clusters[i])] = &w.Clusters[i]
	}
}

// infraClusterName returns the TerraformCluster name a Cluster's
// spec.infrastructureRef names, or "" when it names something else.
func infraClusterName(cl *clusterv1.Cluster) string {
	ref := cl.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupVersion.Group || ref.Kind != string(infrav1.KindTerraformCluster) {
		return ""
	}
	return ref.Name
}

// ClusterFor finds the TerraformCluster of a machine or pool the way the
// book does: its cluster.x-k8s.io/cluster-name label names the Cluster,
// whose spec.infrastructureRef names the TerraformCluster. nil when any link
// is missing, and for anything but a machine or pool.
func (w *Workloads) ClusterFor(obj client.Object) *infrav1.TerraformCluster {
	switch obj.(type) {
	case *infrav1.TerraformMachine, *infrav1.TerraformMachinePool:
	default:
		return nil
	}
	name := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	w.index()
	cl := w.capi[client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}]
	if cl == nil {
		return nil
	}
	tcName := infraClusterName(cl)
	if tcName == "" {
		return nil
	}
	return w.tc[client.ObjectKey{Namespace: obj.GetNamespace(), Name: tcName}]
}

// ClusterOf reads the TerraformCluster of a machine or pool live, by the
// same links as Workloads.ClusterFor. It returns nil (and no error) when a
// link is missing.
func ClusterOf(ctx context.Context, r client.Reader, obj client.Object) (*infrav1.TerraformCluster, error) {
	switch obj.(type) {
	case *infrav1.TerraformMachine, *infrav1.TerraformMachinePool:
	default:
		return nil, nil
	}
	name := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil, nil
	}
	cl := &clusterv1.Cluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get Cluster %s/%s: %w", obj.GetNamespace(), name, err)
	}
	tcName := infraClusterName(cl)
	if tcName == "" {
		return nil, nil
	}
	tc := &infrav1.TerraformCluster{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: tcName}, tc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get TerraformCluster %s/%s: %w", obj.GetNamespace(), tcName, err)
	}
	return tc, nil
}

// ObjectRef names one TerraformCluster, TerraformMachine or
// TerraformMachinePool.
type ObjectRef struct {
	Kind      infrav1.WorkloadKind
	Namespace string
	Name      string
}

func (r ObjectRef) String() string { return string(r.Kind) + " " + r.Namespace + "/" + r.Name }

func compareRefs(a, b ObjectRef) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
}

// each calls fn for every workload object with its kind and resolved
// cluster (nil for a cluster itself or when unresolved).
func (w *Workloads) each(fn func(kind infrav1.WorkloadKind, obj client.Object, cluster *infrav1.TerraformCluster)) {
	for i := range w.Clusters {
		fn(infrav1.KindTerraformCluster, &w.Clusters[i], nil)
	}
	for i := range w.Machines {
		fn(infrav1.KindTerraformMachine, &w.Machines[i], w.ClusterFor(&w.Machines[i]))
	}
	for i := range w.Pools {
		fn(infrav1.KindTerraformMachinePool, &w.Pools[i], w.ClusterFor(&w.Pools[i]))
	}
}

// UsersOf lists, sorted, the objects that currently resolve to identity
// through their own identityRef or a cluster's fallback. Objects being
// deleted count: their destroy still needs the credentials.
func (w *Workloads) UsersOf(identity string) []ObjectRef {
	var out []ObjectRef
	w.each(func(kind infrav1.WorkloadKind, obj client.Object, cluster *infrav1.TerraformCluster) {
		if name, _ := IdentityRefFor(obj, cluster); name == identity {
			out = append(out, ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
	})
	slices.SortFunc(out, compareRefs)
	return out
}
