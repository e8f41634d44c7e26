package lifecycle

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// generations moves metadata.generation on a patch of the spec, as the API
// server does (the fake client does not).
type generations struct{ client.Client }

func (g generations) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	body, err := p.Data(obj)
	if err != nil {
		return err
	}
	if err := g.Client.Patch(ctx, obj, p, opts...); err != nil {
		return err
	}
	var diff map[string]json.RawMessage
	if err := json.Unmarshal(body, &diff); err != nil {
		return err
	}
	if _, ok := diff["spec"]; !ok {
		return nil
	}
	obj.SetGeneration(obj.GetGeneration() + 1)
	return g.Client.Update(ctx, obj)
}

// TestStatusObservesThePassOwnSpecWrite: a pass that writes the spec
// (spec.providerID) writes a status that observed the generation its own
// write produced, so no later pass has to patch the status only to move
// observedGeneration.
func TestStatusObservesThePassOwnSpecWrite(t *testing.T) {
	s := runtime.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(tm).WithStatusSubresource(tm).Build()
	obj := &infrav1.TerraformMachine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tm), obj); err != nil {
		t.Fatal(err)
	}
	p := &Pass{Obj: obj, Kind: infrav1.KindTerraformMachine}
	p.writes = &versionRecorder{Client: generations{c}}
	snap, err := takeSnapshot(obj, p.writes)
	if err != nil {
		t.Fatal(err)
	}
	p.snap = snap
	obj.Spec.ProviderID = "captf://m"
	conditions.Set(obj, metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: infrav1.ReadyReason})
	p.Status().ObservedGeneration = obj.Generation
	f := &Flow{}
	if err := f.patchLocked(ctx, p); err != nil {
		t.Fatal(err)
	}
	got := &infrav1.TerraformMachine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tm), got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 {
		t.Fatalf("generation = %d, want 2", got.Generation)
	}
	if got.Status.ObservedGeneration != 2 {
		t.Errorf("status.observedGeneration = %d, want 2", got.Status.ObservedGeneration)
	}
	if r := conditions.Get(got, infrav1.ReadyCondition); r == nil || r.ObservedGeneration != 2 {
		t.Errorf("Ready = %+v, want observedGeneration 2", r)
	}
}
