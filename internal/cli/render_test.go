package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

var settings = Settings{DriftDefault: decide.DefaultDriftInterval}

// TestStatusTable checks status's table (Observability: one row per object
// with Ready and its reason, the last run and its age, the next check and
// what it waits on) for every namespace, one namespace, and -o wide.
func TestStatusTable(t *testing.T) {
	objs, js := bringUp()
	rows := rowsFor(objs, js, settings)
	for _, tc := range []struct {
		name      string
		all, wide bool
		ns        string
	}{
		{name: "status-all.golden", all: true},
		{name: "status-namespace.golden", ns: "team-a"},
		{name: "status-wide.golden", all: true, wide: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in []Row
			for _, r := range rows {
				if tc.ns == "" || r.Namespace == tc.ns {
					in = append(in, r)
				}
			}
			var b bytes.Buffer
			if err := printTable(&b, in, now, tc.all, tc.wide); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
}

// TestStatusTree checks the tree of one cluster: the TerraformCluster and
// its Jobs, then its machines and pools, each with its own Jobs.
func TestStatusTree(t *testing.T) {
	objs, js := bringUp()
	var cluster object
	var members []object
	for _, o := range objs {
		switch {
		case o.w.GetNamespace() != "team-a":
		case o.kind.Kind == string(infrav1.KindTerraformCluster):
			cluster = o
		default:
			members = append(members, o)
		}
	}
	var b bytes.Buffer
	if err := printTree(&b, treeFor(cluster, members, js, settings), now); err != nil {
		t.Fatal(err)
	}
	golden(t, "tree.golden", b.Bytes())
}
