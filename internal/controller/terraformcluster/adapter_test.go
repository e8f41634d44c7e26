package terraformcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestControlPlaneInitialized(t *testing.T) {
	kcp := clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: "cp"}
	cond := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: s, Reason: "r"}}
	}
	cases := []struct {
		name  string
		ref   clusterv1.ContractVersionedObjectReference
		field *bool
		conds []metav1.Condition
		want  bool
	}{
		{name: "contract-cluster: Cluster.status.initialization.controlPlaneInitialized nil maps to false", ref: kcp},
		{name: "contract-cluster: the field false is false", ref: kcp, field: ptr.To(false)},
		{name: "contract-cluster: the field true is true", ref: kcp, field: ptr.To(true), want: true},
		{name: "with a controlPlaneRef the field decides, not the condition", ref: kcp, conds: cond(metav1.ConditionTrue)},
		{name: "stand-alone control-plane Machines: CAPI's ControlPlaneInitialized condition True is true", conds: cond(metav1.ConditionTrue), want: true},
		{name: "stand-alone control-plane Machines: the condition False is false", conds: cond(metav1.ConditionFalse)},
		{name: "stand-alone control-plane Machines: no condition is false"},
		{name: "stand-alone control-plane Machines: the field true is true", field: ptr.To(true), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterv1.Cluster{}
			c.Spec.ControlPlaneRef = tc.ref
			c.Status.Initialization.ControlPlaneInitialized = tc.field
			c.Status.Conditions = tc.conds
			if got := ptr.Deref(controlPlaneInitialized(c), false); got != tc.want {
				t.Fatalf("controlPlaneInitialized = %v, want %v", got, tc.want)
			}
		})
	}
}
