package owner

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Object is a Kubernetes object (what controller-runtime calls
// client.Object), so this package needs no client.
type Object interface {
	metav1.Object
	runtime.Object
}

// CheckBackReference applies the owner checks of the Security Model
// ("Owner references are checked against the owner") to obj and its
// Cluster API owner (a Cluster, Machine or MachinePool): the owner's
// infrastructure reference ref names obj (apiGroup, kind and name), the
// ownerReferences entry's UID, when it carries one, is the owner's, and
// obj's cluster-name label, when set, is ownerCluster. It returns what
// failed, "" when every check passes. The reconcile flow reports a failure
// as OwnerMismatch; the admission webhook's delete guard protects only an
// object whose owner passes.
func CheckBackReference(obj infrav1.Workload, capiOwner Object, ref clusterv1.ContractVersionedObjectReference, ownerCluster string) string {
	kind := string(obj.GetWorkloadKind())
	ownerKind := capiOwner.GetObjectKind().GroupVersionKind().Kind
	if ownerKind == "" {
		ownerKind = capiKind(capiOwner)
	}
	if ref.Kind != kind || ref.Name != obj.GetName() || ref.APIGroup != infrav1.GroupVersion.Group {
		return fmt.Sprintf("%s %s does not reference this %s in its infrastructureRef (apiGroup %s, kind %s, name %s)",
			ownerKind, capiOwner.GetName(), kind, infrav1.GroupVersion.Group, kind, obj.GetName())
	}
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == ownerKind && o.Name == capiOwner.GetName() && o.UID != "" && o.UID != capiOwner.GetUID() {
			return fmt.Sprintf("the owner reference to %s %s carries another UID", ownerKind, capiOwner.GetName())
		}
	}
	if l := obj.GetLabels()[clusterv1.ClusterNameLabel]; l != "" && l != ownerCluster {
		return fmt.Sprintf("the %s label names %s, not %s %s's cluster %s", clusterv1.ClusterNameLabel, l, ownerKind, capiOwner.GetName(), ownerCluster)
	}
	return ""
}

// capiKind names a typed Cluster API owner whose TypeMeta is empty (as the
// client's typed reads leave it).
func capiKind(o Object) string {
	switch o.(type) {
	case *clusterv1.Cluster:
		return "Cluster"
	case *clusterv1.Machine:
		return "Machine"
	case *clusterv1.MachinePool:
		return "MachinePool"
	}
	return "owner"
}
