package jobs

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Security Model: an object with CAPTF's name but not CAPTF's marks is
// reported, never reused.
func TestNotOurs(t *testing.T) {
	ref := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", Kind: "TerraformCluster", Name: "prod", UID: types.UID("u-" + uid), Controller: ptr.To(true)}}
	}
	labels := map[string]string{"captf.io/owner-kind": "TerraformCluster", "captf.io/op": "apply"}
	built := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", OwnerReferences: ref("1"), Labels: labels}}
	cases := []struct {
		name string
		obj  *batchv1.Job
		want string
	}{
		{"the same controller and labels: CAPTF's", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ref("1"), Labels: map[string]string{"captf.io/owner-kind": "TerraformCluster", "captf.io/op": "apply", "extra": "x"}}}, ""},
		{"no controller: foreign", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: labels}}, "no controller owner reference"},
		{"an owner reference that is not the controller: foreign", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: labels, OwnerReferences: []metav1.OwnerReference{{Kind: "TerraformCluster", Name: "prod", UID: "u-1"}}}}, "no controller owner reference"},
		{"another UID (an earlier object of the same name): foreign", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ref("2"), Labels: labels}}, "UID u-2"},
		{"a label missing: foreign", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ref("1"), Labels: map[string]string{"captf.io/owner-kind": "TerraformCluster"}}}, "label captf.io/op"},
		{"a label with another value: foreign", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ref("1"), Labels: map[string]string{"captf.io/owner-kind": "TerraformCluster", "captf.io/op": "destroy"}}}, "label captf.io/op"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := NotOurs(tt.obj, built)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("NotOurs = %q, want %q", got, tt.want)
			}
		})
	}
}
