package identity

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Workloads are the objects of every workload kind in a namespace (or in
// every namespace): the TerraformClusters, the members of clusters
// (TerraformMachines and TerraformMachinePools), and the Cluster API
// Clusters that link members to their TerraformCluster. Its methods are
// pure.
type Workloads struct {
	Clusters []infrav1.TerraformCluster
	// Members are the objects of every cluster-member kind
	// (Capabilities.ClusterMember), kind by kind in WorkloadKinds' order.
	Members      []infrav1.Workload
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
	w.Clusters = tcs.Items
	for _, k := range infrav1.KindsWith(func(c infrav1.Capabilities) bool { return c.ClusterMember }) {
		l := k.NewList()
		if err := r.List(ctx, l, opts...); err != nil {
			return nil, fmt.Errorf("failed to list %ss: %w", k, err)
		}
		// ExtractList points into the list's items: nothing is copied.
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, fmt.Errorf("failed to read the list of %ss: %w", k, err)
		}
		for _, item := range items {
			if o, ok := item.(infrav1.Workload); ok {
				w.Members = append(w.Members, o)
			}
		}
	}
	if len(w.Members) > 0 {
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
	if ref.APIGroup != infrav1.GroupVersion.Group || !infrav1.WorkloadKind(ref.Kind).Capabilities().HasMembers {
		return ""
	}
	return ref.Name
}

// ClusterFor finds the TerraformCluster of a machine or pool the way the
// book does: its cluster.x-k8s.io/cluster-name label names the Cluster,
// whose spec.infrastructureRef names the TerraformCluster. nil when any link
// is missing, and for anything but a cluster member (a machine or pool).
func (w *Workloads) ClusterFor(obj client.Object) *infrav1.TerraformCluster {
	if !clusterMember(obj) {
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
	if !clusterMember(obj) {
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

// clusterMember reports whether obj is of a cluster-member kind (a
// TerraformMachine or TerraformMachinePool).
func clusterMember(obj client.Object) bool {
	w, ok := obj.(infrav1.Workload)
	return ok && w.Capabilities().ClusterMember
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
		fn(w.Clusters[i].GetWorkloadKind(), &w.Clusters[i], nil)
	}
	for _, m := range w.Members {
		fn(m.GetWorkloadKind(), m, w.ClusterFor(m))
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
