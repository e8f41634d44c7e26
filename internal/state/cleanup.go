package state

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteState removes a suffix's state once it is safe to (after a destroy
// succeeded, or for an object that never applied): every chunk Secret, one
// by one, then the lock Lease. Neither runtime deletes these itself. A
// Secret carrying the backend's labels under a name that is not one of the
// suffix's chunks is not CAPTF's to delete and is left alone. Backups are
// not touched: they go with the object. Deleting what is already gone is
// not an error.
func DeleteState(ctx context.Context, c client.Client, namespace, suffix string) error {
	var list corev1.SecretList
	if err := c.List(ctx, &list, client.InNamespace(namespace), backendSelector(suffix)); err != nil {
		return fmt.Errorf("failed to list state Secrets for suffix %s in namespace %s: %w", suffix, namespace, err)
	}
	names := []string{SecretName(suffix)}
	for i := range list.Items {
		if n, ok := chunkIndex(suffix, list.Items[i].Name); ok && n > 0 {
			names = append(names, list.Items[i].Name)
		}
	}
	for _, name := range names {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if err := c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete state Secret %s/%s: %w", namespace, name, err)
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LockLeaseName(suffix)}}
	if err := c.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete state lock Lease %s/%s: %w", namespace, lease.Name, err)
	}
	return nil
}
