package state

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// Live reads a suffix's state Secrets by their deterministic names (the base
// Secret, then -part-1, -part-2 … until one is missing), through r, which
// must read from the API server. No label selects them: a state Secret the
// cache does not hold, or one without the backend's or CAPTF's labels, is
// found all the same. At most DefaultLimits.MaxChunks+1 names are read.
func Live(ctx context.Context, r client.Reader, namespace, suffix string) ([]corev1.Secret, error) {
	var out []corev1.Secret
	for i := 0; i <= DefaultLimits.MaxChunks; i++ {
		s := corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ChunkName(suffix, i)}, &s)
		switch {
		case apierrors.IsNotFound(err):
			if i == 0 {
				// A chunk set without its base is still looked at.
				continue
			}
			return out, nil
		case err != nil:
			return nil, fmt.Errorf("failed to read state Secret %s/%s: %w", namespace, ChunkName(suffix, i), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Owned reports whether a state Secret is o's: it carries CAPTF's owner
// labels for o (captf.io/managed, owner-kind and owner-name, which the
// backend writes from the Job's labels= setting and which survive a move).
func Owned(s *corev1.Secret, o owner.Owner) bool {
	l := s.Labels
	return l[infrav1.ManagedLabel] == "true" && l[infrav1.OwnerKindLabel] == string(o.Kind) && l[infrav1.OwnerNameLabel] == owner.LabelValue(o.Name)
}

// DeleteRead deletes exactly the state Secrets given (as Live read them),
// each with a UID precondition so that a Secret recreated under the same
// name since the read is left alone, then the suffix's lock Lease. Neither
// runtime deletes these itself. Backups are not touched: they go with the
// object. Deleting what is already gone is not an error.
func DeleteRead(ctx context.Context, c client.Client, namespace, suffix string, secrets []corev1.Secret) error {
	for i := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secrets[i].Namespace, Name: secrets[i].Name}}
		uid := secrets[i].UID
		if err := c.Delete(ctx, s, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete state Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LockLeaseName(suffix)}}
	if err := c.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete state lock Lease %s/%s: %w", namespace, lease.Name, err)
	}
	return nil
}

// DeleteState removes a suffix's state once it is safe to (after a destroy
// succeeded, or for an object that never applied): the chunk Secrets read
// live by name (Live), each deleted with a UID precondition, then the lock
// Lease. A Secret carrying the backend's labels under a name that is not
// one of the suffix's chunks is not CAPTF's to delete and is left alone.
func DeleteState(ctx context.Context, c client.Client, namespace, suffix string) error {
	secrets, err := Live(ctx, c, namespace, suffix)
	if err != nil {
		return err
	}
	return DeleteRead(ctx, c, namespace, suffix, secrets)
}
