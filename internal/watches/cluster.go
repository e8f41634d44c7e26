package watches

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// A Cluster API Cluster and its TerraformCluster wake every machine and
// pool of the cluster: one event costs one pass per member, so at a few
// thousand machines a wake-up that changes nothing a member reads is the
// largest cost a cluster has. Cluster API rewrites a Cluster's status
// conditions whenever one of its machines changes, and a TerraformCluster's
// status changes with each of its own Jobs (drift checks included). The
// predicates below let through only the updates that change what a
// machine's or pool's pass reads from them; creates and deletes always pass.

// ClusterChangesForMembers passes a Cluster's update to its machines and
// pools when it changes what their passes read: its spec (paused,
// infrastructureRef, every generation bump), its labels or annotations
// (the paused annotation), its deletion, or whether its infrastructure is
// provisioned (machines and pools wait for it before rendering inputs).
func ClusterChangesForMembers() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1.Cluster)
		n, ok2 := e.ObjectNew.(*clusterv1.Cluster)
		if !ok1 || !ok2 {
			return true
		}
		return MetadataChanged(o, n) ||
			!equalBool(o.Status.Initialization.InfrastructureProvisioned, n.Status.Initialization.InfrastructureProvisioned)
	}}
}

// TerraformClusterChangesForMembers passes a TerraformCluster's update to
// its machines and pools when it changes what their passes read: its spec
// (defaults, identityRef), its labels or annotations (externally managed,
// paused), its deletion, whether it is provisioned, and its Ready and
// StateReadable conditions' statuses (a machine that waits for the
// cluster's exports reads them from the cluster's state once that is
// applied and readable). Status-only churn (lastRun, a drift Job starting
// or finishing, messages, times) passes nothing.
func TerraformClusterChangesForMembers() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*infrav1.TerraformCluster)
		n, ok2 := e.ObjectNew.(*infrav1.TerraformCluster)
		if !ok1 || !ok2 {
			return true
		}
		if MetadataChanged(o, n) || provisioned(o.Status.Initialization) != provisioned(n.Status.Initialization) {
			return true
		}
		for _, t := range []string{infrav1.ReadyCondition, infrav1.StateReadableCondition} {
			if conditionStatus(o.Status.Conditions, t) != conditionStatus(n.Status.Conditions, t) {
				return true
			}
		}
		return false
	}}
}

// MetadataChanged says an update changed more than status: the spec
// (generation), labels, annotations, finalizers, owner references or the
// deletion. clusterctl's move block, which the cluster's own Jobs set and
// clear and no member's pass reads, does not count.
func MetadataChanged(o, n metav1.Object) bool {
	return o.GetGeneration() != n.GetGeneration() ||
		!slices.EqualFunc(o.GetOwnerReferences(), n.GetOwnerReferences(), func(a, b metav1.OwnerReference) bool {
			return a.UID == b.UID && a.Name == b.Name && a.Kind == b.Kind && a.APIVersion == b.APIVersion &&
				equalBool(a.Controller, b.Controller)
		}) ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) ||
		!maps.Equal(withoutMoveBlock(o.GetAnnotations()), withoutMoveBlock(n.GetAnnotations())) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
		!slices.Equal(o.GetFinalizers(), n.GetFinalizers())
}

func equalBool(a, b *bool) bool {
	return (a != nil && *a) == (b != nil && *b)
}

func provisioned(i *infrav1.Initialization) bool {
	return i != nil && i.Provisioned != nil && *i.Provisioned
}

func conditionStatus(cs []metav1.Condition, t string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(cs, t); c != nil {
		return c.Status
	}
	return ""
}

// withoutMoveBlock is a copy of annotations without clusterctl's move block.
func withoutMoveBlock(a map[string]string) map[string]string {
	if _, ok := a[infrav1.BlockMoveAnnotation]; !ok {
		return a
	}
	out := maps.Clone(a)
	delete(out, infrav1.BlockMoveAnnotation)
	return out
}
