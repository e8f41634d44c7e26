package lifecycle

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// maxExportsEntries bounds the exports cache: past it the cache starts
// over (an entry is one cluster's exports, and a dropped one is re-read).
const maxExportsEntries = 4096

// exportsCache holds each TerraformCluster's exports output, keyed by the
// names and resource versions of the state Secrets it was decoded from:
// every machine and pool pass that renders inputs needs its cluster's
// exports, and decoding the cluster's whole state once per pass would cost
// N decodes of one state for N machines. A new state serial is a new
// resource version, so a cached entry is never stale.
type exportsCache struct {
	mu sync.Mutex
	m  map[string]exportsEntry
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
// changed since the last read. Errors are never cached.
func (c *exportsCache) readClusterExports(ctx context.Context, r client.Reader, namespace, suffix string) (json.RawMessage, bool, error) {
	var list corev1.SecretList
	if err := r.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false, err
	}
	key := namespace + "/" + suffix
	version := stateVersion(list.Items)
	if c != nil {
		c.mu.Lock()
		e, ok := c.m[key]
		c.mu.Unlock()
		if ok && e.version == version {
			return slices.Clone(e.exports), e.set, nil
		}
	}
	st, err := state.FromSecrets(list.Items, suffix, state.DefaultLimits)
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
		if c.m == nil || len(c.m) >= maxExportsEntries {
			c.m = map[string]exportsEntry{}
		}
		c.m[key] = e
		c.mu.Unlock()
	}
	return slices.Clone(e.exports), e.set, nil
}
