package terraformmachine

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// remediationRequests reads captf_remediation_requests_total{action}.
func remediationRequests(t *testing.T, action string) float64 {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the registry: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != "captf_remediation_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "action" && l.GetValue() == action {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestSyncRemediationCountsRequests (book: Machine Remediation):
// remediation_requests_total counts a remediate-machine annotation CAPTF
// sets (requested) and the one it removes again (withdrawn), once each,
// with one RemediationRequested and one RemediationWithdrawn event; a pass
// that finds the Machine as wanted writes nothing, counts nothing and
// emits nothing. A fake client stands in for the API server: only the
// Machine patch is exercised.
func TestSyncRemediationCountsRequests(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clusterv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "metrics-test"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m).Build()
	yes := true
	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "metrics-test"}}
	tm.Spec.Remediation = &infrav1.MachineRemediation{AnnotateMachine: &yes}
	r0, w0 := remediationRequests(t, metrics.RemediationRequested), remediationRequests(t, metrics.RemediationWithdrawn)
	var events []string
	sync := func(reason string) *clusterv1.Machine {
		t.Helper()
		got := &clusterv1.Machine{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		ev, err := syncRemediation(context.Background(), c, tm, got, reason)
		if err != nil {
			t.Fatal(err)
		}
		if ev != nil {
			events = append(events, ev.reason)
		}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	sync(infrav1.InstanceTerminatedReason)
	got := sync(infrav1.InstanceTerminatedReason)
	if _, ok := got.Annotations[infrav1.RemediateMachineAnnotation]; !ok {
		t.Fatalf("a terminated instance did not request remediation: %v", got.Annotations)
	}
	if d := remediationRequests(t, metrics.RemediationRequested) - r0; d != 1 {
		t.Errorf("remediation_requests_total{action=requested} grew by %v over two passes, want 1", d)
	}
	got = sync(infrav1.HealthyReason)
	sync(infrav1.HealthyReason)
	if _, ok := got.Annotations[infrav1.RemediateMachineAnnotation]; ok {
		t.Fatalf("a healthy reading did not withdraw CAPTF's request: %v", got.Annotations)
	}
	if d := remediationRequests(t, metrics.RemediationWithdrawn) - w0; d != 1 {
		t.Errorf("remediation_requests_total{action=withdrawn} grew by %v over two passes, want 1", d)
	}
	if want := []string{infrav1.RemediationRequestedEvent, infrav1.RemediationWithdrawnEvent}; len(events) != 2 || events[0] != want[0] || events[1] != want[1] {
		t.Errorf("events %v, want %v", events, want)
	}
}
