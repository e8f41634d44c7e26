package lifecycle

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// maxExportsEntries and maxExportsBytes bound the exports cache: past
// either it starts over (an entry is one cluster's exports, and a dropped
// one is re-read). One entry is at most state.DefaultLimits.MaxOutputBytes:
// the state reader refuses a larger output.
const (
	maxExportsEntries = 4096
	maxExportsBytes   = 64 << 20
)

// exportsCache holds each TerraformCluster's exports output, keyed by the
// names and resource versions of the state Secrets it was decoded from:
// every machine and pool pass that renders inputs needs its cluster's
// exports, and decoding the cluster's whole state once per pass would cost
// N decodes of one state for N machines. A new state serial is a new
// resource version, so a cached entry is never stale.
type exportsCache struct {
	mu sync.Mutex
	m  map[string]exportsEntry
	// bytes is the size of the exports m holds; maxBytes bounds it
	// (maxExportsBytes when 0).
	bytes, maxBytes int
}

type exportsEntry struct {
	version string
	// exports is the exports output's value; set false when the state has
	// no exports output.
	exports json.RawMessage
	set     bool
}

// stateVersion is the cache key of a state's Secrets: their names and
// resource versions, sorted.
func stateVersion(items []corev1.Secret) string {
	parts := make([]string, len(items))
	for i := range items {
		parts[i] = items[i].Name + "@" + items[i].ResourceVersion
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// readClusterExports returns the exports output of the state of suffix (set
// false when the state has none), decoding the state only when its Secrets
// changed since the last read. Errors are never cached. State Secrets r
// lists without their data (state.ErrNotCached) are listed again through
// live.
func (c *exportsCache) readClusterExports(ctx context.Context, r, live client.Reader, namespace, suffix string) (json.RawMessage, bool, error) {
	secrets, err := state.List(ctx, r, namespace, suffix)
	if err != nil {
		return nil, false, err
	}
	key := namespace + "/" + suffix
	version := stateVersion(secrets)
	if c != nil {
		c.mu.Lock()
		e, ok := c.m[key]
		c.mu.Unlock()
		if ok && e.version == version {
			return slices.Clone(e.exports), e.set, nil
		}
	}
	st, err := state.FromSecrets(secrets, suffix, state.DefaultLimits)
	if errors.Is(err, state.ErrNotCached) && live != nil {
		if secrets, err = state.List(ctx, live, namespace, suffix); err != nil {
			return nil, false, err
		}
		version = stateVersion(secrets)
		st, err = state.FromSecrets(secrets, suffix, state.DefaultLimits)
	}
	if err != nil {
		return nil, false, err
	}
	out, ok := st.Outputs[contract.OutputExports]
	e := exportsEntry{version: version, set: ok && len(out.Value) > 0 && string(out.Value) != "null"}
	if e.set {
		e.exports = slices.Clone(json.RawMessage(out.Value))
	}
	if c != nil {
		c.mu.Lock()
		if old, ok := c.m[key]; ok {
			c.bytes -= len(old.exports)
			delete(c.m, key)
		}
		if c.m == nil || len(c.m) >= maxExportsEntries || c.bytes+len(e.exports) > cmp.Or(c.maxBytes, maxExportsBytes) {
			c.m, c.bytes = map[string]exportsEntry{}, 0
		}
		c.m[key] = e
		c.bytes += len(e.exports)
		c.mu.Unlock()
	}
	return slices.Clone(e.exports), e.set, nil
}
