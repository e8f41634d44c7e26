package lifecycle

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// ownerWaitAdapter finds the object's Cluster but not yet its owner.
type ownerWaitAdapter struct {
	readyAdapter
	cluster *clusterv1.Cluster
}

func (a ownerWaitAdapter) LookupOwner(_ context.Context, p *Pass) (*Wait, error) {
	p.Cluster = a.cluster
	return &Wait{Reason: infrav1.WaitingForOwnerMachineReason, Message: "no Machine ownerRef yet", False: true}, nil
}

// TestPausedFromTheFirstReconcile: every object the manager has seen
// carries Paused from its first reconcile, also while it waits for its
// owner (reference-facts §1.1; Cluster API's paused convention), and the
// pass still stops on the owner wait.
func TestPausedFromTheFirstReconcile(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster *clusterv1.Cluster
		ann     map[string]string
		want    metav1.ConditionStatus
	}{
		{"a new object waiting for its owner is NotPaused", nil, nil, metav1.ConditionFalse},
		{"one whose Cluster is paused is Paused while it waits", &clusterv1.Cluster{Spec: clusterv1.ClusterSpec{Paused: ptr.To(true)}}, nil, metav1.ConditionTrue},
		{"one carrying the paused annotation is Paused while it waits", nil, map[string]string{clusterv1.PausedAnnotation: ""}, metav1.ConditionTrue},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", Annotations: c.ann}}
			f := &Flow{Adapter: ownerWaitAdapter{cluster: c.cluster}}
			p := &Pass{Obj: obj, Kind: infrav1.KindTerraformMachine, flow: f}
			if err := f.preamble(context.Background(), p); !errors.Is(err, errStop) {
				t.Fatalf("preamble returned %v, want it to stop on the owner wait", err)
			}
			if err := setConditions(p); err != nil {
				t.Fatal(err)
			}
			got := conditions.Get(obj, infrav1.PausedCondition)
			if got == nil || got.Status != c.want {
				t.Fatalf("Paused = %+v, want %s", got, c.want)
			}
			if d := conditions.Get(obj, infrav1.DependenciesReadyCondition); d == nil || d.Reason != infrav1.WaitingForOwnerMachineReason {
				t.Fatalf("DependenciesReady = %+v", d)
			}
		})
	}
}
