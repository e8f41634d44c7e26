package owner

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Labels and LabelValue: a label value over 63 characters becomes the first
// 16 hex characters of its sha256 (book: Terraform State, the owner labels).
func TestLabels(t *testing.T) {
	long := strings.Repeat("n", 64)
	cases := []struct {
		name string
		o    Owner
		want map[string]string
	}{
		{"short names are kept", Owner{Kind: infrav1.KindTerraformMachine, Name: "m-0", ClusterName: "prod"},
			map[string]string{infrav1.OwnerKindLabel: "TerraformMachine", infrav1.OwnerNameLabel: "m-0", clusterv1.ClusterNameLabel: "prod", infrav1.ManagedLabel: "true"}},
		{"an unknown cluster gets no cluster-name label", Owner{Kind: infrav1.KindTerraformCluster, Name: "c"},
			map[string]string{infrav1.OwnerKindLabel: "TerraformCluster", infrav1.OwnerNameLabel: "c", infrav1.ManagedLabel: "true"}},
		{"a 64-character name is hashed", Owner{Kind: infrav1.KindTerraformMachinePool, Name: long, ClusterName: long},
			map[string]string{infrav1.OwnerKindLabel: "TerraformMachinePool", infrav1.OwnerNameLabel: "ce068a195ab380a8", clusterv1.ClusterNameLabel: "ce068a195ab380a8", infrav1.ManagedLabel: "true"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.o.Labels()
			if len(got) != len(c.want) {
				t.Fatalf("labels %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("label %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
	if v := LabelValue(strings.Repeat("x", 63)); len(v) != 63 {
		t.Fatalf("a 63-character value must be kept, got %q", v)
	}
}

func TestOfAndReference(t *testing.T) {
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "m-0", UID: "u1", Labels: map[string]string{clusterv1.ClusterNameLabel: "prod"}}
	o := FromLabels(obj, infrav1.KindTerraformMachine)
	if o.ClusterName != "prod" || o.String() != "TerraformMachine ns/m-0" {
		t.Fatalf("owner %+v (%s)", o, o)
	}
	r := o.Reference()
	if r.APIVersion != infrav1.GroupVersion.String() || r.Kind != "TerraformMachine" || r.UID != "u1" || r.Controller != nil || r.BlockOwnerDeletion != nil {
		t.Fatalf("reference %+v", r)
	}
}
