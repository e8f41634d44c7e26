package state

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// SuffixOf is the owner's backend suffix.
func SuffixOf(o owner.Owner) (string, error) { return Suffix(o.Namespace, o.Kind, o.Name) }

// withOwner returns refs with the owner's reference in it: an existing
// reference to the same kind and name under another UID (an object that was
// recreated) is replaced. The bool is false when refs already had it.
func withOwner(o owner.Owner, refs []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	want := o.Reference()
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	for _, r := range refs {
		if r.UID == want.UID {
			return refs, false
		}
		if r.Kind == want.Kind && r.Name == want.Name && r.APIVersion == want.APIVersion {
			continue
		}
		out = append(out, r)
	}
	return append(out, want), true
}

// Adopt makes the object the owner of its state after a successful apply or
// restore: an owner reference to it on every chunk Secret of st and the
// applied inputs hash on the base Secret. Each change is a merge patch that
// fails on a concurrent write (retry on the next pass); a Secret that
// already carries both is not written. It returns the names it patched.
func Adopt(ctx context.Context, c client.Client, o owner.Owner, st *State, inputsHash string) ([]string, error) {
	if st == nil || len(st.secrets) == 0 {
		return nil, fmt.Errorf("no state to adopt for %s %s/%s", o.Kind, o.Namespace, o.Name)
	}
	if inputsHash == "" {
		return nil, fmt.Errorf("adopting the state of %s %s/%s needs the applied inputs hash", o.Kind, o.Namespace, o.Name)
	}
	var patched []string
	// The base Secret goes last: its inputs hash marks the adoption done.
	for i := len(st.secrets) - 1; i >= 0; i-- {
		orig := &st.secrets[i]
		refs, changedRefs := withOwner(o, orig.OwnerReferences)
		changedHash := i == 0 && orig.Annotations[inputsHashAnnotation] != inputsHash
		if !changedRefs && !changedHash {
			continue
		}
		base := &corev1.Secret{ObjectMeta: *orig.ObjectMeta.DeepCopy()}
		want := base.DeepCopy()
		want.OwnerReferences = refs
		if changedHash {
			if want.Annotations == nil {
				want.Annotations = map[string]string{}
			}
			want.Annotations[inputsHashAnnotation] = inputsHash
		}
		if err := c.Patch(ctx, want, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return patched, fmt.Errorf("failed to adopt state Secret %s/%s: %w", orig.Namespace, orig.Name, err)
		}
		orig.ObjectMeta = want.ObjectMeta
		patched = append(patched, orig.Name)
	}
	st.InputsHash = inputsHash
	return patched, nil
}
