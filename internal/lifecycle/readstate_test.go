package lifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestPassDurableKeepsThePassOwnWrite: once a pass has written the durable
// inputs Secret (the digest pin clears an interrupted apply's mark), it
// decides on what its write returned, not on the cache's older copy
// (Retries and Backoff, "An apply Job deleted while it ran": the mark
// cleared once an apply succeeded keeps no further apply due).
func TestPassDurableKeepsThePassOwnWrite(t *testing.T) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	name := DurableName(infrav1.KindTerraformCluster, "c")
	cached := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Annotations: map[string]string{infrav1.InterruptedApplyAnnotation: "captf-c-c-apply-a1-abcdef"}}}
	written := cached.DeepCopy()
	delete(written.Annotations, infrav1.InterruptedApplyAnnotation)
	f := &Flow{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(cached).Build()}
	obj := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	for _, tc := range []struct {
		name          string
		wrote         bool
		wantInterrupt bool
	}{
		{"written this pass: the write's copy", true, false},
		{"not written: the cache's copy", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pass{Obj: obj, Kind: infrav1.KindTerraformCluster}
			if tc.wrote {
				p.Durable, p.durableWritten = written.DeepCopy(), true
			}
			got, err := f.passDurable(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Annotations[infrav1.InterruptedApplyAnnotation]; ok != tc.wantInterrupt {
				t.Errorf("interrupted mark read %v, want %v", ok, tc.wantInterrupt)
			}
		})
	}
}

// TestStateBehindBooking: the pass that books a Job which wrote the state
// (apply, refresh, drift) reads it live when the cached copy is the one
// from before the Job ran (The Reconcile Lifecycle: a machine's apply whose
// outputs give a definite reading stands in for the post-apply refresh;
// read from a stale cache, it would not, and an extra refresh would run).
func TestStateBehindBooking(t *testing.T) {
	outputs := state.Outputs{"provider_id": {}}
	for _, tc := range []struct {
		name   string
		op     decide.Operation
		st     *state.State
		before int64
		want   bool
	}{
		{"nothing booked", "", &state.State{}, 0, false},
		{"apply booked, the init's empty state cached", decide.OpApply, &state.State{Content: state.Content{Serial: 1}}, 0, true},
		{"apply booked, its state cached", decide.OpApply, &state.State{Content: state.Content{Serial: 3, Outputs: outputs}}, 0, false},
		{"re-apply booked, the previous state cached", decide.OpApply, &state.State{Content: state.Content{Serial: 3, Outputs: outputs}}, 3, true},
		{"re-apply booked, its state cached", decide.OpApply, &state.State{Content: state.Content{Serial: 4, Outputs: outputs}}, 3, false},
		{"refresh booked, the state from before cached", decide.OpRefresh, &state.State{Content: state.Content{Serial: 4, Outputs: outputs}}, 4, true},
		{"drift booked, its state cached", decide.OpDrift, &state.State{Content: state.Content{Serial: 5, Outputs: outputs}}, 4, false},
	} {
		if got := stateBehindBooking(tc.op, tc.st, tc.before); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
