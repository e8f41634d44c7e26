package watches

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// A machine or pool pass reads from its Cluster only whether it is paused,
// its infrastructureRef, whether its infrastructure is provisioned and
// whether it is being deleted (book: The Reconcile Lifecycle, preamble and
// "Machines wait for the cluster"); any other Cluster change must not wake
// every member of the cluster.
func TestClusterChangesForMembers(t *testing.T) {
	base := func() *clusterv1.Cluster {
		c := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 1, Labels: map[string]string{"a": "b"}}}
		c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
		c.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue}}
		return c
	}
	for _, tc := range []struct {
		name string
		mut  func(c *clusterv1.Cluster)
		want bool
	}{
		{"a status condition change wakes no member", func(c *clusterv1.Cluster) {
			c.Status.Conditions[0].Status = metav1.ConditionFalse
			c.ResourceVersion = "2"
		}, false},
		{"a replica count change in status wakes no member", func(c *clusterv1.Cluster) {
			c.Status.Workers = &clusterv1.WorkersStatus{Replicas: ptr.To[int32](3)}
		}, false},
		{"a spec change (paused) wakes the members", func(c *clusterv1.Cluster) { c.Generation = 2 }, true},
		{"the paused annotation wakes the members", func(c *clusterv1.Cluster) {
			c.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		}, true},
		{"infrastructure provisioned turning false wakes the members", func(c *clusterv1.Cluster) {
			c.Status.Initialization.InfrastructureProvisioned = nil
		}, true},
		{"deletion wakes the members", func(c *clusterv1.Cluster) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, n := base(), base()
			tc.mut(n)
			if got := ClusterChangesForMembers().Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tc.want {
				t.Fatalf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !ClusterChangesForMembers().Create(event.CreateEvent{Object: base()}) || !ClusterChangesForMembers().Delete(event.DeleteEvent{Object: base()}) {
		t.Fatal("creates and deletes must wake the members")
	}
}

// A machine or pool reads from its TerraformCluster its spec (defaults,
// identityRef), its annotations and, until provisioned, its state's
// exports (book: Job Inputs, "cluster exports"); status churn such as a
// drift Job of the cluster must not wake every member.
func TestTerraformClusterChangesForMembers(t *testing.T) {
	base := func() *infrav1.TerraformCluster {
		c := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 1}}
		c.Status.Initialization = &infrav1.Initialization{Provisioned: ptr.To(true)}
		c.Status.Conditions = []metav1.Condition{
			{Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue},
			{Type: infrav1.StateReadableCondition, Status: metav1.ConditionTrue},
			{Type: infrav1.DriftJobSucceededCondition, Status: metav1.ConditionTrue},
		}
		return c
	}
	for _, tc := range []struct {
		name string
		mut  func(c *infrav1.TerraformCluster)
		want bool
	}{
		{"a drift Job starting wakes no member", func(c *infrav1.TerraformCluster) {
			c.Status.Conditions[2].Status = metav1.ConditionUnknown
		}, false},
		{"a new lastRun wakes no member", func(c *infrav1.TerraformCluster) {
			c.Status.LastRun = &infrav1.LastRun{Job: "captf-c-c-drift-a1-x", Operation: infrav1.OperationDrift}
		}, false},
		{"a Ready message change wakes no member", func(c *infrav1.TerraformCluster) { c.Status.Conditions[0].Message = "other" }, false},
		{"Ready turning false wakes the members", func(c *infrav1.TerraformCluster) {
			c.Status.Conditions[0].Status = metav1.ConditionFalse
		}, true},
		{"the state turning unreadable wakes the members", func(c *infrav1.TerraformCluster) {
			c.Status.Conditions[1].Status = metav1.ConditionFalse
		}, true},
		{"provisioned turning true wakes the members", func(c *infrav1.TerraformCluster) { c.Status.Initialization = nil }, true},
		{"a spec change (defaults) wakes the members", func(c *infrav1.TerraformCluster) { c.Generation = 2 }, true},
		{"an annotation change wakes the members", func(c *infrav1.TerraformCluster) {
			c.Annotations = map[string]string{clusterv1.ManagedByAnnotation: "other"}
		}, true},
		{"the cluster's clusterctl move block coming or going wakes no member", func(c *infrav1.TerraformCluster) {
			c.Annotations = map[string]string{infrav1.BlockMoveAnnotation: "true"}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, n := base(), base()
			tc.mut(n)
			if got := TerraformClusterChangesForMembers().Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tc.want {
				t.Fatalf("Update = %v, want %v", got, tc.want)
			}
		})
	}
}
