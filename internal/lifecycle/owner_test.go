package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestBackReference: Security Model, "Owner references are checked against
// the owner": an owner that fails any check is not an owner
// (DependenciesReady=False/OwnerMismatch), for all three kinds.
func TestBackReference(t *testing.T) {
	group := infrav1.GroupVersion.Group
	machine := func() *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m0", UID: "m-uid"}}
		m.Spec.ClusterName = "c0"
		m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: "TerraformMachine", Name: "tm0"}
		return m
	}
	tm := func(labels map[string]string, uid types.UID) *infrav1.TerraformMachine {
		return &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "tm0", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Machine", Name: "m0", UID: uid}}}}
	}
	pool := &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Name: "mp0", UID: "mp-uid"}}
	pool.Spec.ClusterName = "c0"
	pool.Spec.Template.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: "TerraformMachinePool", Name: "tmp0"}
	tmp := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Name: "tmp0", Labels: map[string]string{clusterv1.ClusterNameLabel: "other"}}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c0", UID: "c-uid"}}
	cluster.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: "other.example.com", Kind: "TerraformCluster", Name: "tc0"}
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "tc0"}}

	for _, c := range []struct {
		name     string
		got      *Wait
		mismatch bool
	}{
		{"machine: an owner that references it back is the owner",
			BackReference(tm(map[string]string{clusterv1.ClusterNameLabel: "c0"}, "m-uid"), machine(), machine().Spec.InfrastructureRef, "c0"), false},
		{"machine: an ownerReferences entry without a UID is not checked",
			BackReference(tm(nil, ""), machine(), machine().Spec.InfrastructureRef, "c0"), false},
		{"machine: another kind in infrastructureRef",
			BackReference(tm(nil, "m-uid"), machine(), clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: "OtherMachine", Name: "tm0"}, "c0"), true},
		{"machine: another name in infrastructureRef",
			BackReference(tm(nil, "m-uid"), machine(), clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: "TerraformMachine", Name: "tm1"}, "c0"), true},
		{"machine: another apiGroup in infrastructureRef",
			BackReference(tm(nil, "m-uid"), machine(), clusterv1.ContractVersionedObjectReference{APIGroup: "other.example.com", Kind: "TerraformMachine", Name: "tm0"}, "c0"), true},
		{"machine: the ownerReferences UID is another Machine's",
			BackReference(tm(nil, "stale-uid"), machine(), machine().Spec.InfrastructureRef, "c0"), true},
		{"machine: the cluster-name label names another cluster than the Machine's spec.clusterName",
			BackReference(tm(map[string]string{clusterv1.ClusterNameLabel: "c1"}, "m-uid"), machine(), machine().Spec.InfrastructureRef, "c0"), true},
		{"pool: the cluster-name label names another cluster than the MachinePool's spec.clusterName",
			BackReference(tmp, pool, pool.Spec.Template.Spec.InfrastructureRef, pool.Spec.ClusterName), true},
		{"cluster: another apiGroup in the Cluster's infrastructureRef",
			BackReference(tc, cluster, cluster.Spec.InfrastructureRef, cluster.Name), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if (c.got != nil) != c.mismatch {
				t.Fatalf("BackReference = %+v, want mismatch %v", c.got, c.mismatch)
			}
			if c.got != nil && (c.got.Reason != infrav1.OwnerMismatchReason || !c.got.False || c.got.Message == "") {
				t.Fatalf("BackReference = %+v, want False/OwnerMismatch with a message", c.got)
			}
		})
	}
}
