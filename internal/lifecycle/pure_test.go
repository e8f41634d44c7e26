package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestPinned(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct{ name, image, want string }{
		{"a tag is replaced by the digest", "registry.example/team/module:v1", "registry.example/team/module@" + d},
		{"a registry port is not a tag", "127.0.0.1:5000/module:v1", "127.0.0.1:5000/module@" + d},
		{"an untagged reference gets the digest", "127.0.0.1:5000/module", "127.0.0.1:5000/module@" + d},
		{"a digest is replaced by the pinned one", "registry.example/module@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "registry.example/module@" + d},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pinned(c.image, d); got != c.want {
				t.Fatalf("pinned(%q) = %q, want %q", c.image, got, c.want)
			}
		})
	}
}

func TestDurableName(t *testing.T) {
	for kind, want := range map[infrav1.WorkloadKind]string{
		infrav1.KindTerraformCluster: "captf-inputs-c-x", infrav1.KindTerraformMachine: "captf-inputs-m-x", infrav1.KindTerraformMachinePool: "captf-inputs-mp-x",
	} {
		if got := DurableName(kind, "x"); got != want {
			t.Errorf("DurableName(%s) = %s, want %s", kind, got, want)
		}
	}
}

type readyAdapter struct{ Adapter }

// Fields gives no kind fields, as a TerraformCluster's adapter does.
func (readyAdapter) Fields(Object) KindFields { return KindFields{} }

// PlanPreview keeps a TerraformCluster's plan, as its adapter does.
func (readyAdapter) PlanPreview(obj Object) **infrav1.PlanPreview {
	if tc, ok := obj.(*infrav1.TerraformCluster); ok {
		return &tc.Status.Plan
	}
	return nil
}

// Ready is summarised over the kind's inputs with the book's reasons:
// Ready, NotReady when an input is False, ReadyUnknown when one is Unknown;
// Deleting counts with negative polarity.
func TestSummarizeReady(t *testing.T) {
	set := func(p *Pass, typ string, s metav1.ConditionStatus) { setCondition(p, typ, s, "R", "") }
	for _, c := range []struct {
		name       string
		health     metav1.ConditionStatus
		deleting   metav1.ConditionStatus
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"healthy_and_not_deleting_is_Ready", metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionTrue, infrav1.ReadyReason},
		{"unhealthy_is_NotReady", metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionFalse, infrav1.NotReadyReason},
		{"health_unknown_is_ReadyUnknown", metav1.ConditionUnknown, metav1.ConditionFalse, metav1.ConditionUnknown, infrav1.ReadyUnknownReason},
		{"deleting_is_NotReady", metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse, infrav1.NotReadyReason},
	} {
		t.Run(c.name, func(t *testing.T) {
			tc := &infrav1.TerraformCluster{}
			p := &Pass{Obj: tc, Kind: infrav1.KindTerraformCluster}
			p.SetProvisioned()
			set(p, infrav1.InfrastructureHealthyCondition, c.health)
			set(p, infrav1.DeletingCondition, c.deleting)
			if err := setReady(p); err != nil {
				t.Fatal(err)
			}
			r := condition(p, infrav1.ReadyCondition)
			if r == nil || r.Status != c.wantStatus || r.Reason != c.wantReason {
				t.Fatalf("Ready = %+v, want %s/%s", r, c.wantStatus, c.wantReason)
			}
		})
	}
}
