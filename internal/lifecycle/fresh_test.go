package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	w.wrote(at("10"), "10")
	if w.stale(at("10")) {
		t.Fatal("a pass that changed nothing marked the object")
	}
	w.wrote(at("11"), "10")
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
	w.wrote(at("14"), "12")
	if !w.stale(at("13")) {
		t.Fatal("the version between the metadata and the status patch is not stale")
	}
	if w.stale(at("15")) {
		t.Fatal("a newer version, written by someone else, is stale")
	}
	// Versions that are not integers are compared for equality only.
	w.wrote(at("b"), "a")
	if !w.stale(at("a")) || w.stale(at("b")) {
		t.Fatal("opaque versions: only the starting version is stale")
	}
	w.wrote(at("12"), "11")
	w.forget("u1")
	if w.stale(at("11")) {
		t.Fatal("a forgotten object is still marked")
	}
	var none *written
	if none.stale(at("1")) {
		t.Fatal("a flow without the guard reports stale")
	}
	none.wrote(at("2"), "1")
}
