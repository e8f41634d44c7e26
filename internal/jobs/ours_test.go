package jobs

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
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

// An orphaned per-run Secret (its Job deleted before the garbage collector
// took it) is CAPTF's to delete; anything else is not.
func TestNotOursOrphan(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "captf-c-prod-apply-a2-abcdef", Labels: map[string]string{"captf.io/op": "apply"}}}
	ctrlRef := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "old", Controller: ptr.To(true)}}
	}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		lbl  map[string]string
		want string
	}{
		{"controlled by a Job of this name, any UID, with its labels: an orphan", ctrlRef("batch/v1", "Job", job.Name), map[string]string{"captf.io/op": "apply"}, ""},
		{"no controller", nil, map[string]string{"captf.io/op": "apply"}, "no controller"},
		{"controlled by another Job", ctrlRef("batch/v1", "Job", "other"), map[string]string{"captf.io/op": "apply"}, "not by Job"},
		{"controlled by something that is not a Job", ctrlRef("v1", "ConfigMap", job.Name), map[string]string{"captf.io/op": "apply"}, "not by Job"},
		{"the Job's labels missing", ctrlRef("batch/v1", "Job", job.Name), nil, "label captf.io/op"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := &metav1.ObjectMeta{OwnerReferences: tt.refs, Labels: tt.lbl}
			got := NotOursOrphan(s, job)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("NotOursOrphan = %q, want %q", got, tt.want)
			}
		})
	}
}

// The per-run Secret is written before its Job, owned by the object: such
// a Secret found for the run's name is taken up; anything else is not.
func TestNotPending(t *testing.T) {
	r := testRun()
	r.Owner.UID = "u-obj"
	built, err := PendingRunSecret(r)
	if err != nil {
		t.Fatal(err)
	}
	if c := metav1.GetControllerOf(built); c != nil || len(built.OwnerReferences) != 1 || built.OwnerReferences[0].UID != "u-obj" {
		t.Fatalf("a pending per-run Secret is owned by %+v, want the object alone, as no controller", built.OwnerReferences)
	}
	cases := []struct {
		name string
		mut  func(s *corev1.Secret)
		want string
		same bool
	}{
		{"written for the run: taken up", func(*corev1.Secret) {}, "", true},
		{"written for the run with other data: CAPTF's, not the run's data", func(s *corev1.Secret) { s.Data = map[string][]byte{"main.tf.json": []byte("{}")} }, "", false},
		{"already handed to a Job", func(s *corev1.Secret) {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u-job", Controller: ptr.To(true)}}
		}, "controlled by Job j", true},
		{"owned by an earlier object of the same name", func(s *corev1.Secret) { s.OwnerReferences[0].UID = "u-old" }, "not owned by", true},
		{"no owner", func(s *corev1.Secret) { s.OwnerReferences = nil }, "not owned by", true},
		{"a label missing", func(s *corev1.Secret) { delete(s.Labels, infrav1.OpLabel) }, "label " + infrav1.OpLabel, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := built.DeepCopy()
			tt.mut(s)
			got := NotPending(s, built)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("NotPending = %q, want %q", got, tt.want)
			}
			if SameData(s, built) != tt.same {
				t.Fatalf("SameData = %v, want %v", !tt.same, tt.same)
			}
		})
	}
	t.Run("an object without a UID has no pending Secret", func(t *testing.T) {
		r := testRun()
		r.Owner.UID = ""
		if _, err := PendingRunSecret(r); err == nil {
			t.Fatal("PendingRunSecret accepted an owner without a UID")
		}
	})
}
