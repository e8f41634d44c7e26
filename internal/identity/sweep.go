package identity

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// workloadKinds are the kinds whose presence keeps a namespace's runner
// RBAC and leases: every workload kind.
var workloadKinds = func() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, k := range infrav1.WorkloadKinds() {
		out = append(out, infrav1.GroupVersion.WithKind(string(k)))
	}
	return out
}()

// sweptKinds are what the sweep deletes, when labeled captf.io/managed=true.
var sweptKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	coordinationv1.SchemeGroupVersion.WithKind("Lease"),
}

// SweepResult is what one sweep deleted.
type SweepResult struct {
	// Namespaces are the namespaces something was deleted from, sorted.
	Namespaces []string
	// ServiceAccounts, RoleBindings and Leases count the deletions.
	ServiceAccounts, RoleBindings, Leases int
}

// SweepTargets picks, from the managed objects found, those in namespaces
// not in occupied: the namespaces that hold no TerraformCluster,
// TerraformMachine or TerraformMachinePool. Pure.
func SweepTargets(occupied map[string]bool, found []metav1.PartialObjectMetadata) []metav1.PartialObjectMetadata {
	var out []metav1.PartialObjectMetadata
	for _, o := range found {
		if !occupied[o.Namespace] {
			out = append(out, o)
		}
	}
	return out
}

// Sweep deletes the captf.io/managed=true ServiceAccounts, RoleBindings and
// Leases of every namespace that holds no TerraformCluster,
// TerraformMachine or TerraformMachinePool (reference-facts §10.3). The
// manager runs it at start and then every sync period while leader.
// namespaces restricts it to those namespaces (empty: every namespace).
// It decides only through live, an uncached reader, ignores any watch
// filter, emits no event, and deletes nothing when any read fails. Before
// deleting in a namespace it checks once more that the namespace is still
// empty, so an object created meanwhile keeps its RBAC.
func Sweep(ctx context.Context, live client.Reader, w client.Writer, namespaces []string) (SweepResult, error) {
	var res SweepResult
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	// The managed objects first, then the workloads: an object created
	// after this point is seen by the workload listing.
	var found []metav1.PartialObjectMetadata
	for _, ns := range scopes {
		for _, gvk := range sweptKinds {
			items, err := listMetadata(ctx, live, gvk, ns, 0, client.MatchingLabels{infrav1.ManagedLabel: TrueValue})
			if err != nil {
				return res, err
			}
			found = append(found, items...)
		}
	}
	if len(found) == 0 {
		return res, nil
	}
	occupied := map[string]bool{}
	for _, ns := range scopes {
		for _, gvk := range workloadKinds {
			items, err := listMetadata(ctx, live, gvk, ns, 0)
			if err != nil {
				return res, err
			}
			for _, o := range items {
				occupied[o.Namespace] = true
			}
		}
	}
	targets := SweepTargets(occupied, found)
	log := ctrl.LoggerFrom(ctx)
	checked := map[string]bool{}
	for i := range targets {
		t := &targets[i]
		if _, done := checked[t.Namespace]; !done {
			empty, err := namespaceEmpty(ctx, live, t.Namespace)
			if err != nil {
				return res, err
			}
			checked[t.Namespace] = empty
		}
		if !checked[t.Namespace] {
			continue
		}
		if err := w.Delete(ctx, t, client.Preconditions{UID: &t.UID}); err != nil && !apierrors.IsNotFound(err) {
			return res, fmt.Errorf("failed to delete %s %s/%s: %w", t.Kind, t.Namespace, t.Name, err)
		}
		log.V(1).Info("Swept runner object from a namespace with no Terraform objects", "kind", t.Kind, "namespace", t.Namespace, "name", t.Name)
		switch t.Kind {
		case "ServiceAccount":
			res.ServiceAccounts++
		case "RoleBinding":
			res.RoleBindings++
		case "Lease":
			res.Leases++
		}
		if !slices.Contains(res.Namespaces, t.Namespace) {
			res.Namespaces = append(res.Namespaces, t.Namespace)
		}
	}
	slices.Sort(res.Namespaces)
	return res, nil
}

// namespaceEmpty checks live that namespace holds no workload object.
func namespaceEmpty(ctx context.Context, live client.Reader, namespace string) (bool, error) {
	for _, gvk := range workloadKinds {
		items, err := listMetadata(ctx, live, gvk, namespace, 1)
		if err != nil {
			return false, err
		}
		if len(items) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// listMetadata lists the metadata of gvk objects in namespace ("" for all),
// following continue tokens when limit is 0, else returning at most one
// page of limit items.
func listMetadata(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, namespace string, limit int64, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		o := append([]client.ListOption{client.InNamespace(namespace)}, opts...)
		if limit > 0 {
			o = append(o, client.Limit(limit))
		} else {
			o = append(o, client.Limit(500), client.Continue(cont))
		}
		if err := r.List(ctx, list, o...); err != nil {
			return nil, fmt.Errorf("failed to list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			it := list.Items[i]
			it.SetGroupVersionKind(gvk)
			out = append(out, it)
		}
		cont = list.Continue
		if limit > 0 || cont == "" {
			return out, nil
		}
	}
}

// Sweeper runs Sweep when the manager starts and then every Period, only
// while this manager is the leader. A failed sweep is logged and retried at
// the next tick; it never stops the manager.
type Sweeper struct {
	// Live is an uncached reader (the manager's API reader).
	Live client.Reader
	// Writer deletes.
	Writer client.Writer
	// Namespaces restricts the sweep (the manager's --namespace); empty
	// sweeps every namespace.
	Namespaces []string
	// Period is the manager's --sync-period; zero sweeps only at start.
	Period time.Duration
	// OnSweep, when set, is called after every sweep with its outcome,
	// except a sweep the manager's stop cut short.
	OnSweep func(SweepResult, error)
}

// Start implements manager.Runnable.
func (s *Sweeper) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("namespace-sweep")
	run := func() {
		res, err := Sweep(ctx, s.Live, s.Writer, s.Namespaces)
		if ctx.Err() != nil {
			// Cut short by the manager's stop: not a failure to report.
			return
		}
		if err != nil {
			log.Error(err, "Namespace RBAC sweep failed; retrying at the next sync period")
		} else if len(res.Namespaces) > 0 {
			log.Info("Swept runner RBAC and leases from namespaces with no Terraform objects", "namespaces", res.Namespaces,
				"serviceAccounts", res.ServiceAccounts, "roleBindings", res.RoleBindings, "leases", res.Leases)
		}
		if s.OnSweep != nil {
			s.OnSweep(res, err)
		}
	}
	run()
	if s.Period <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			run()
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }
