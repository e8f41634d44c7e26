package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestExportsCacheByStateVersion: a machine pass reads its cluster's
// exports from the cluster's state (book: Job inputs, cluster_outputs);
// the manager decodes that state once per state version, never returns
// exports of an older serial, and reads an unset exports output as unset.
// A fake client stands in for the cache: this is the cache's own logic.
func TestExportsCacheByStateVersion(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	ctx := context.Background()
	const ns, suffix = "tenant", "0123456789abcdef-c"
	write := func(serial int, exports any) {
		t.Helper()
		outputs := map[string]any{}
		if exports != nil {
			outputs["exports"] = map[string]any{"value": exports, "type": "dynamic"}
		}
		raw, _ := json.Marshal(map[string]any{"version": 4, "serial": serial, "lineage": "l", "outputs": outputs, "resources": []any{}})
		secrets, err := state.Encode(ns, suffix, raw, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range secrets {
			s := &secrets[i]
			if err := c.Create(ctx, s); err != nil {
				cur := s.DeepCopy()
				if err := c.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
					t.Fatal(err)
				}
				cur.Data = s.Data
				if err := c.Update(ctx, cur); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cache := &exportsCache{}
	read := func() string {
		t.Helper()
		out, ok, err := cache.readClusterExports(ctx, c, ns, suffix)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%v %s", ok, out)
	}

	if _, _, err := cache.readClusterExports(ctx, c, ns, suffix); err == nil {
		t.Fatal("no state read without an error")
	}
	write(1, nil)
	if got := read(); got != "false " {
		t.Fatalf("state without exports: %q", got)
	}
	write(2, map[string]any{"network": "net-1"})
	if got := read(); got != `true {"network":"net-1"}` {
		t.Fatalf("serial 2: %q", got)
	}
	// Same state version: served from the cache, not decoded again.
	key := ns + "/" + suffix
	e := cache.m[key]
	e.exports = json.RawMessage(`{"network":"from-cache"}`)
	cache.m[key] = e
	if got := read(); got != `true {"network":"from-cache"}` {
		t.Fatalf("same version decoded again: %q", got)
	}
	// A new serial is a new version: never the older exports.
	write(3, map[string]any{"network": "net-2"})
	if got := read(); got != `true {"network":"net-2"}` {
		t.Fatalf("serial 3: %q", got)
	}
	// A nil cache (a Flow not set up) reads every time.
	var none *exportsCache
	if out, ok, err := none.readClusterExports(ctx, c, ns, suffix); err != nil || !ok || string(out) != `{"network":"net-2"}` {
		t.Fatalf("nil cache: %s %v %v", out, ok, err)
	}
}
