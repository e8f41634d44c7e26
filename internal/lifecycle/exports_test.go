package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
		out, ok, err := cache.readClusterExports(ctx, c, nil, ns, suffix)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%v %s", ok, out)
	}

	if _, _, err := cache.readClusterExports(ctx, c, nil, ns, suffix); err == nil {
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
	if out, ok, err := none.readClusterExports(ctx, c, nil, ns, suffix); err != nil || !ok || string(out) != `{"network":"net-2"}` {
		t.Fatalf("nil cache: %s %v %v", out, ok, err)
	}
}

// TestExportsCacheBounded: the exports cache holds at most its byte bound
// of exports, whatever size each cluster's exports are (a tenant's module
// writes them); past the bound it starts over, and every read still
// returns the exports of the state read.
func TestExportsCacheBounded(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	ctx := context.Background()
	cache := &exportsCache{maxBytes: 3000}
	for i := range 10 {
		suffix := fmt.Sprintf("%016x-c", i)
		raw, _ := json.Marshal(map[string]any{"version": 4, "serial": 1, "lineage": "l", "resources": []any{},
			"outputs": map[string]any{"exports": map[string]any{"value": strings.Repeat("e", 1000), "type": "string"}}})
		secrets, err := state.Encode("tenant", suffix, raw, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range secrets {
			if err := c.Create(ctx, &secrets[i]); err != nil {
				t.Fatal(err)
			}
		}
		out, ok, err := cache.readClusterExports(ctx, c, nil, "tenant", suffix)
		if err != nil || !ok || len(out) != 1002 {
			t.Fatalf("cluster %d: %d bytes, %v, %v", i, len(out), ok, err)
		}
		held := 0
		for _, e := range cache.m {
			held += len(e.exports)
		}
		if held != cache.bytes || held > 3000 {
			t.Fatalf("after cluster %d the cache holds %d bytes (counted %d), bound 3000", i, held, cache.bytes)
		}
	}
}
