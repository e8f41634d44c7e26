package identity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// MaxStatusNamespaces is the most namespaces status.namespaces holds (the
// CRD's bound); beyond it the first ones in sorted order are kept.
const MaxStatusNamespaces = 1000

// IdentityReadyCondition is a TerraformClusterIdentity's Ready condition,
// set directly from whether its Secret exists (not a summary). Pure.
func IdentityReadyCondition(ref infrav1.SecretReference, found bool) metav1.Condition {
	c := metav1.Condition{Type: infrav1.ReadyCondition}
	if found {
		c.Status, c.Reason = metav1.ConditionTrue, infrav1.SecretFoundReason
		c.Message = fmt.Sprintf("Secret %s/%s found", ref.Namespace, ref.Name)
	} else {
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.SecretNotFoundReason
		c.Message = fmt.Sprintf("Secret %s/%s not found", ref.Namespace, ref.Name)
	}
	return c
}

// IdentityStatus is the observed status of a TerraformClusterIdentity.
type IdentityStatus struct {
	// Ready is the Ready condition to set.
	Ready metav1.Condition
	// Namespaces hold a mirror of the identity, sorted, at most
	// MaxStatusNamespaces.
	Namespaces []string
}

// ObserveIdentity reads what a TerraformClusterIdentity's status reports:
// whether its source Secret exists (read live: no cache holds it) and which
// namespaces hold its mirror (c, the manager's cache of managed Secrets,
// will do). A transient error is returned and the status left alone.
func ObserveIdentity(ctx context.Context, c, live client.Reader, id *infrav1.TerraformClusterIdentity) (IdentityStatus, error) {
	ref := id.Spec.SecretRef
	found := true
	s := &corev1.Secret{}
	if err := live.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, s); err != nil {
		if !apierrors.IsNotFound(err) {
			return IdentityStatus{}, fmt.Errorf("failed to get Secret %s/%s of TerraformClusterIdentity %s: %w", ref.Namespace, ref.Name, id.Name, err)
		}
		found = false
	}
	nss, err := MirrorNamespaces(ctx, c, id.Name)
	if err != nil {
		return IdentityStatus{}, err
	}
	if len(nss) > MaxStatusNamespaces {
		nss = nss[:MaxStatusNamespaces]
	}
	return IdentityStatus{Ready: IdentityReadyCondition(ref, found), Namespaces: nss}, nil
}

// SetIdentityStatus writes s onto id's status (the caller patches it) and
// returns the events due: IdentitySecretFound when Ready becomes True,
// IdentitySecretNotFound when it becomes False.
func SetIdentityStatus(id *infrav1.TerraformClusterIdentity, s IdentityStatus) []Event {
	prev := meta.FindStatusCondition(id.Status.Conditions, infrav1.ReadyCondition)
	var prevCopy *metav1.Condition
	if prev != nil {
		p := *prev
		prevCopy = &p
	}
	next := s.Ready
	next.ObservedGeneration = id.Generation
	next.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	meta.SetStatusCondition(&id.Status.Conditions, next)
	id.Status.Namespaces = slices.Clone(s.Namespaces)
	if len(id.Status.Namespaces) == 0 {
		id.Status.Namespaces = nil
	}
	if !transitioned(prevCopy, next) {
		return nil
	}
	if next.Status == metav1.ConditionTrue {
		return []Event{normalEvent(infrav1.IdentitySecretFoundEvent, next.Message)}
	}
	return []Event{warningEvent(infrav1.IdentitySecretNotFoundEvent, next.Message)}
}

// MirrorNamespaces lists, sorted, the namespaces holding a mirror of
// identity: Secrets labeled captf.io/mirrored=true whose
// captf.io/identity names it.
func MirrorNamespaces(ctx context.Context, c client.Reader, identity string) ([]string, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.MatchingLabels{infrav1.MirroredLabel: TrueValue}); err != nil {
		return nil, fmt.Errorf("failed to list credential mirrors: %w", err)
	}
	var out []string
	for i := range list.Items {
		s := &list.Items[i]
		if s.Name == MirrorName(identity) && IsMirrorOf(s, identity) {
			out = append(out, s.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Usage is what the identity's delete guard needs: deletion is refused
// while any object resolves to the identity or any namespace holds its
// mirror.
type Usage struct {
	// Users resolve to the identity (own identityRef or a cluster's
	// fallback), deleting ones included; sorted.
	Users []ObjectRef
	// Namespaces hold a mirror of it; sorted.
	Namespaces []string
}

// InUse reports whether deleting the identity must be refused.
func (u Usage) InUse() bool { return len(u.Users) > 0 || len(u.Namespaces) > 0 }

// Reason is the guard's refusal text: one object still using the identity,
// or every namespace still holding a mirror of it ("" when not in use).
func (u Usage) Reason(identity string) string {
	switch {
	case len(u.Users) > 0:
		return fmt.Sprintf("TerraformClusterIdentity %s is still used by %s", identity, u.Users[0])
	case len(u.Namespaces) > 0:
		return fmt.Sprintf("TerraformClusterIdentity %s is still mirrored into namespaces %s", identity, strings.Join(u.Namespaces, ", "))
	}
	return ""
}

// UsageOf reads the Usage of identity across every namespace. r should be
// the manager's cached client: listing every object of three kinds is what
// its cache already holds.
func UsageOf(ctx context.Context, r client.Reader, identity string) (Usage, error) {
	w, err := ListWorkloads(ctx, r, "")
	if err != nil {
		return Usage{}, err
	}
	nss, err := MirrorNamespaces(ctx, r, identity)
	if err != nil {
		return Usage{}, err
	}
	return Usage{Users: w.UsersOf(identity), Namespaces: nss}, nil
}
