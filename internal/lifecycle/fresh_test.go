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
