package lifecycle

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestWritten checks the guard against deciding on a cached version older
// than this manager's own last update.
func TestWritten(t *testing.T) {
	at := func(rv string) *infrav1.TerraformCluster {
		return &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	w := &written{}
	if w.stale(at("10")) {
		t.Fatal("an object this manager never wrote is stale")
	}
	w.wrote("u1", "10", "10")
	if w.stale(at("10")) {
		t.Fatal("a pass that changed nothing marked the object")
	}
	w.wrote("u1", "10", "11")
	if !w.stale(at("10")) {
		t.Fatal("the version the writing pass started from is not stale")
	}
	if w.stale(at("11")) {
		t.Fatal("the written version is stale")
	}
	if w.stale(at("10")) {
		t.Fatal("the mark outlived a newer version")
	}
	// The patch helper's metadata request lands before its status one:
	// the version between them is stale too.
	w.wrote("u1", "12", "14")
	if !w.stale(at("13")) {
		t.Fatal("the version between the metadata and the status patch is not stale")
	}
	if w.stale(at("15")) {
		t.Fatal("a newer version, written by someone else, is stale")
	}
	// Versions that are not integers are compared for equality only.
	w.wrote("u1", "a", "b")
	if !w.stale(at("a")) || w.stale(at("b")) {
		t.Fatal("opaque versions: only the starting version is stale")
	}
	w.wrote("u1", "11", "12")
	w.forget("u1")
	if w.stale(at("11")) {
		t.Fatal("a forgotten object is still marked")
	}
	var none *written
	if none.stale(at("1")) {
		t.Fatal("a flow without the guard reports stale")
	}
	none.wrote("u1", "1", "2")
}

// TestVersionRecorder checks that the version the patch helper's requests
// produce is learnt, though the helper patches copies of the object.
func TestVersionRecorder(t *testing.T) {
	s := runtime.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc).WithStatusSubresource(tc).Build()
	obj := &infrav1.TerraformCluster{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc), obj); err != nil {
		t.Fatal(err)
	}
	from := obj.ResourceVersion
	rec := &versionRecorder{Client: c}
	h, err := patch.NewHelper(obj, rec)
	if err != nil {
		t.Fatal(err)
	}
	obj.Annotations = map[string]string{"a": "b"}
	obj.Status.StateSecretSuffix = "x"
	if err := h.Patch(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	live := &infrav1.TerraformCluster{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc), live); err != nil {
		t.Fatal(err)
	}
	if rec.version != live.ResourceVersion || rec.version == from {
		t.Fatalf("recorded version %q, want the live %q (started from %q)", rec.version, live.ResourceVersion, from)
	}
}
