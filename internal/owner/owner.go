package owner

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Owner is the Terraform* object a Job, a Secret, a state or a lease belongs
// to.
type Owner struct {
	// Kind is TerraformCluster, TerraformMachine or TerraformMachinePool.
	Kind      infrav1.WorkloadKind
	Namespace string
	Name      string
	UID       types.UID
	// ClusterName is the owning Cluster's name, "" if none; Jobs, per-run
	// Secrets and backups carry it as the cluster-name label.
	ClusterName string
}

// Of describes obj, a Terraform* object of the given kind owned by the
// Cluster clusterName ("" when none is known).
func Of(obj metav1.Object, kind infrav1.WorkloadKind, clusterName string) Owner {
	return Owner{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(), ClusterName: clusterName}
}

// FromLabels describes obj with the cluster name its
// cluster.x-k8s.io/cluster-name label gives.
func FromLabels(obj metav1.Object, kind infrav1.WorkloadKind) Owner {
	return Of(obj, kind, obj.GetLabels()[clusterv1.ClusterNameLabel])
}

// String is "<Kind> <namespace>/<name>", for messages and errors.
func (o Owner) String() string { return string(o.Kind) + " " + o.Namespace + "/" + o.Name }

// Reference is the owner reference to the object: not a controller and not
// blocking its deletion (the state and backups outlive a failed destroy).
func (o Owner) Reference() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: infrav1.GroupVersion.String(),
		Kind:       string(o.Kind),
		Name:       o.Name,
		UID:        o.UID,
	}
}

// Labels are the labels every Job and per-run Secret of the object carries,
// usable as a selector of them: owner-kind, owner-name (hashed when over 63
// characters), cluster-name (likewise; omitted when unknown) and
// captf.io/managed=true.
func (o Owner) Labels() map[string]string {
	l := make(map[string]string, 6)
	l[infrav1.OwnerKindLabel] = string(o.Kind)
	l[infrav1.OwnerNameLabel] = LabelValue(o.Name)
	if o.ClusterName != "" {
		l[clusterv1.ClusterNameLabel] = LabelValue(o.ClusterName)
	}
	l[infrav1.ManagedLabel] = "true"
	return l
}

// LabelValue keeps a label value within the 63 characters Kubernetes
// allows: a longer value becomes the first 16 hex characters of its sha256.
func LabelValue(v string) string {
	if len(v) <= 63 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:8])
}
