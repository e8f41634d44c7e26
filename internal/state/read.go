package state

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is an object's state as read from the backend's Secrets.
type State struct {
	Content

	// Namespace and Suffix identify the state.
	Namespace string
	Suffix    string
	// Chunks is the number of Secrets the state spans (1 for OpenTofu).
	Chunks int
	// InputsHash is the captf.io/inputs-hash annotation on the base Secret:
	// the inputs hash of the last successful apply, "" if never adopted.
	InputsHash string

	// secrets are the chunk Secrets in chunk order, as listed.
	secrets []corev1.Secret
}

// ChunkNames returns the names of the Secrets the state spans, in order.
func (s *State) ChunkNames() []string {
	names := make([]string, len(s.secrets))
	for i := range s.secrets {
		names[i] = s.secrets[i].Name
	}
	return names
}

// MarshalLog describes the state for structured logs without its outputs'
// values.
func (s *State) MarshalLog() any {
	if s == nil {
		return nil
	}
	return map[string]any{
		"suffix":           s.Suffix,
		"serial":           s.Serial,
		"lineage":          s.Lineage,
		"runtimeVersion":   s.RuntimeVersion,
		"outputs":          s.Outputs.Names(),
		"managedResources": s.ManagedResources,
		"compressedBytes":  s.CompressedBytes,
		"chunks":           s.Chunks,
	}
}

// backendSelector selects the Secrets the backend labels for a suffix, in
// any workspace, so that a stranger carrying the labels is noticed.
func backendSelector(suffix string) client.MatchingLabels {
	return client.MatchingLabels{BackendStateLabel: "true", BackendSuffixLabel: suffix}
}

// Read reads an object's state. It lists the Secrets carrying the backend's
// labels for the suffix through c (in the manager, the cache, whose
// label-selected Secret informer holds the state Secrets because the
// backend is configured to add captf.io/managed), orders them by chunk index
// and decodes them as one stream under lim.
//
// It returns ErrNotFound when no state Secret exists (ErrNeverWritten, which
// wraps it, when the base Secret exists alone without data), a *ReadError when the
// state exists but cannot be read whole (use ReasonOf for the StateReadable
// reason), and any other error for a failed API call.
func Read(ctx context.Context, c client.Reader, namespace, suffix string, lim Limits) (*State, error) {
	secrets, err := List(ctx, c, namespace, suffix)
	if err != nil {
		return nil, err
	}
	return FromSecrets(secrets, suffix, lim)
}

// List lists the Secrets carrying the backend's labels for suffix through
// c, for FromSecrets. The reader never modifies what it lists, so a cache
// may hand over its own objects instead of copying the whole state on
// every read: the caller must not modify them either.
func List(ctx context.Context, c client.Reader, namespace, suffix string) ([]corev1.Secret, error) {
	var list corev1.SecretList
	if err := c.List(ctx, &list, client.InNamespace(namespace), backendSelector(suffix), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("failed to list state Secrets for suffix %s in namespace %s: %w", suffix, namespace, err)
	}
	return list.Items, nil
}

// FromSecrets reads a state from the Secrets that carry the backend's labels
// for suffix, in any order. Read uses it after listing; it is exported for
// callers that already hold the list.
func FromSecrets(secrets []corev1.Secret, suffix string, lim Limits) (*State, error) {
	if lim.MaxChunks <= 0 || lim.MaxDecompressedBytes <= 0 {
		lim = DefaultLimits
	}
	for i := range secrets {
		if DataDropped(&secrets[i]) {
			return nil, ErrNotCached
		}
	}
	ordered, err := orderChunks(secrets, suffix, lim)
	if err != nil {
		return nil, err
	}
	if _, ok := ordered[0].Data[DataKey]; !ok && len(ordered) == 1 {
		return nil, ErrNeverWritten
	}
	payloads := make([][]byte, len(ordered))
	for i := range ordered {
		data, ok := ordered[i].Data[DataKey]
		if !ok {
			return nil, readErrorf(ErrNoData, ordered[i].Name, "no %q data key", DataKey)
		}
		payloads[i] = data
	}
	content, err := decode(payloads, lim, SecretName(suffix))
	if err != nil {
		return nil, err
	}
	st := &State{
		Content:    *content,
		Namespace:  ordered[0].Namespace,
		Suffix:     suffix,
		Chunks:     len(ordered),
		InputsHash: ordered[0].Annotations[inputsHashAnnotation],
		secrets:    ordered,
	}
	return st, nil
}

// orderChunks checks that the Secrets form exactly one chunk set for the
// suffix (the base Secret and -part-1 … -part-N without gaps or doubles,
// nothing else) and returns them in chunk order.
func orderChunks(secrets []corev1.Secret, suffix string, lim Limits) ([]corev1.Secret, error) {
	if len(secrets) == 0 {
		return nil, ErrNotFound
	}
	type indexed struct {
		index int
		i     int
	}
	idx := make([]indexed, 0, len(secrets))
	for i := range secrets {
		n, ok := chunkIndex(suffix, secrets[i].Name)
		if !ok {
			return nil, readErrorf(ErrUnexpectedSecret, secrets[i].Name,
				"it carries the backend's labels for suffix %s but is not %s or one of its -part-N chunks", suffix, SecretName(suffix))
		}
		idx = append(idx, indexed{n, i})
	}
	if len(idx) > lim.MaxChunks {
		return nil, readErrorf(ErrTooManyChunks, SecretName(suffix), "%d chunks, at most %d are read", len(idx), lim.MaxChunks)
	}
	sort.Slice(idx, func(a, b int) bool {
		if idx[a].index != idx[b].index {
			return idx[a].index < idx[b].index
		}
		return secrets[idx[a].i].Name < secrets[idx[b].i].Name
	})
	for k := 1; k < len(idx); k++ {
		if idx[k].index == idx[k-1].index {
			return nil, readErrorf(ErrChunkDuplicate, secrets[idx[k].i].Name,
				"it and %s both claim chunk %d", secrets[idx[k-1].i].Name, idx[k].index)
		}
	}
	for k := range idx {
		if idx[k].index != k {
			missing := ChunkName(suffix, k)
			return nil, readErrorf(ErrChunkMissing, missing, "chunk %d is absent while %s is present",
				k, secrets[idx[len(idx)-1].i].Name)
		}
	}
	out := make([]corev1.Secret, len(idx))
	for k := range idx {
		out[k] = secrets[idx[k].i]
	}
	return out, nil
}
