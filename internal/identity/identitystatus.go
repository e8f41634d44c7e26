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
// namespaces it allows hold a mirror of it CAPTF made (MirrorNamespaces; c,
// the manager's client reading managed Secrets and the three kinds from its
// cache, will do). A transient error is returned and the status left alone.
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
	nss, err := MirrorNamespaces(ctx, c, id)
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
	if !transitioned(prevCopy, next.Status, next.Reason) {
		return nil
	}
	if next.Status == metav1.ConditionTrue {
		return []Event{normalEvent(infrav1.IdentitySecretFoundEvent, next.Message)}
	}
	return []Event{warningEvent(infrav1.IdentitySecretNotFoundEvent, next.Message)}
}

// MirrorNamespaces lists, sorted, the namespaces that hold a mirror of id
// CAPTF made and that id allows: a Secret of the mirror's name carrying
// CAPTF's mirror labels and id's captf.io/identity (IsCAPTFMirrorOf), owned
// by a TerraformCluster, TerraformMachine or TerraformMachinePool of its
// namespace whose UID its owner reference carries (the references
// ensureMirror writes). A look-alike Secret someone else made, or one in a
// namespace id does not allow, is not a mirror of it: it neither appears
// in status.namespaces nor holds back the identity's deletion. c reads
// Secrets, the three kinds and Namespaces.
func MirrorNamespaces(ctx context.Context, c client.Reader, id *infrav1.TerraformClusterIdentity) ([]string, error) {
	return mirrorNamespaces(ctx, c, id, newNamespaceGate(c, id))
}

func mirrorNamespaces(ctx context.Context, c client.Reader, id *infrav1.TerraformClusterIdentity, gate *namespaceGate) ([]string, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.MatchingLabels{infrav1.MirroredLabel: TrueValue}); err != nil {
		return nil, fmt.Errorf("failed to list credential mirrors: %w", err)
	}
	var out []string
	for i := range list.Items {
		s := &list.Items[i]
		if !IsCAPTFMirrorOf(s, id.Name) {
			continue
		}
		allowed, err := gate.allows(ctx, s.Namespace)
		if err != nil {
			return nil, err
		}
		if !allowed {
			continue
		}
		owned, err := ownedByWorkload(ctx, c, s)
		if err != nil {
			return nil, err
		}
		if owned {
			out = append(out, s.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// IsCAPTFMirrorOf reports whether s looks like the credential mirror of
// identity that ensureMirror writes: the mirror's name, the labels
// captf.io/managed=true and captf.io/mirrored=true, the annotation
// captf.io/identity=<identity>, and at least one owner reference to a
// TerraformCluster, TerraformMachine or TerraformMachinePool with a UID
// (MirrorOwnerRefs). Whether such an owner exists is for ownedByWorkload
// to read. Pure.
func IsCAPTFMirrorOf(s *corev1.Secret, identity string) bool {
	return s.Name == MirrorName(identity) && IsMirrorOf(s, identity) &&
		s.Labels[infrav1.ManagedLabel] == TrueValue && len(MirrorOwnerRefs(s)) > 0
}

// MirrorOwnerRefs are the owner references of s that can be a mirror's:
// to a TerraformCluster, TerraformMachine or TerraformMachinePool of
// CAPTF's API group, with a UID. Pure.
func MirrorOwnerRefs(s *corev1.Secret) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range s.OwnerReferences {
		if r.UID == "" || refGroupKind(r).Group != infrav1.GroupVersion.Group {
			continue
		}
		if infrav1.WorkloadKind(r.Kind).Valid() {
			out = append(out, r)
		}
	}
	return out
}

// ownedByWorkload reports whether one of s's MirrorOwnerRefs names an
// object of its namespace that exists with that UID.
func ownedByWorkload(ctx context.Context, c client.Reader, s *corev1.Secret) (bool, error) {
	for _, r := range MirrorOwnerRefs(s) {
		obj := infrav1.WorkloadKind(r.Kind).NewObject()
		err := c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: r.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return false, fmt.Errorf("failed to get %s %s/%s, an owner of Secret %s: %w", r.Kind, s.Namespace, r.Name, s.Name, err)
		}
		if obj.GetUID() == r.UID {
			return true, nil
		}
	}
	return false, nil
}

// namespaceGate answers whether an identity allows namespaces, reading a
// Namespace only when allowedNamespaces.selector must decide, and each one
// at most once.
type namespaceGate struct {
	r       client.Reader
	allowed *infrav1.AllowedNamespaces
	seen    map[string]bool
}

func newNamespaceGate(r client.Reader, id *infrav1.TerraformClusterIdentity) *namespaceGate {
	return &namespaceGate{r: r, allowed: id.Spec.AllowedNamespaces, seen: map[string]bool{}}
}

// allows applies NamespaceAllowed. A Namespace that no longer exists has
// no labels; a selector that cannot be parsed allows nothing, as it does
// for IdentityAllowed.
func (g *namespaceGate) allows(ctx context.Context, namespace string) (bool, error) {
	if ok, seen := g.seen[namespace]; seen {
		return ok, nil
	}
	var lbls map[string]string
	if needsNamespaceLabels(g.allowed, namespace) {
		ns := &corev1.Namespace{}
		err := g.r.Get(ctx, client.ObjectKey{Name: namespace}, ns)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("failed to get Namespace %s: %w", namespace, err)
		}
		lbls = ns.Labels
	}
	ok, err := NamespaceAllowed(g.allowed, namespace, lbls)
	ok = ok && err == nil
	g.seen[namespace] = ok
	return ok, nil
}

// Usage is what the identity's delete guard needs: deletion is refused
// while any object in a namespace the identity allows resolves to it, or
// any such namespace holds a mirror of it CAPTF made.
type Usage struct {
	// Users resolve to the identity (own identityRef or a cluster's
	// fallback), deleting ones included, in namespaces it allows; sorted.
	Users []ObjectRef
	// Namespaces hold a mirror of it (MirrorNamespaces); sorted.
	Namespaces []string
}

// InUse reports whether deleting the identity must be refused.
func (u Usage) InUse() bool { return len(u.Users) > 0 || len(u.Namespaces) > 0 }

// Reason is the guard's refusal text: one object still using the identity
// (and how many more), or every namespace still holding a mirror of it (""
// when not in use).
func (u Usage) Reason(identity string) string {
	switch {
	case len(u.Users) > 1:
		return fmt.Sprintf("TerraformClusterIdentity %s is in use by %s (and %d more)", identity, u.Users[0], len(u.Users)-1)
	case len(u.Users) == 1:
		return fmt.Sprintf("TerraformClusterIdentity %s is in use by %s", identity, u.Users[0])
	case len(u.Namespaces) > 0:
		return fmt.Sprintf("TerraformClusterIdentity %s is still mirrored into namespaces %s (status.namespaces)", identity, strings.Join(u.Namespaces, ", "))
	}
	return ""
}

// UsageOf reads the Usage of id across every namespace it allows. An
// object that resolves to id from a namespace id does not allow cannot run
// a Job with it (IdentityAllowed is False there), so it does not hold id;
// nor does a Secret that only looks like its mirror. r reads the three
// kinds, Clusters, Secrets and Namespaces.
func UsageOf(ctx context.Context, r client.Reader, id *infrav1.TerraformClusterIdentity) (Usage, error) {
	w, err := ListWorkloads(ctx, r, "")
	if err != nil {
		return Usage{}, err
	}
	gate := newNamespaceGate(r, id)
	var users []ObjectRef
	for _, u := range w.UsersOf(id.Name) {
		allowed, err := gate.allows(ctx, u.Namespace)
		if err != nil {
			return Usage{}, err
		}
		if allowed {
			users = append(users, u)
		}
	}
	nss, err := mirrorNamespaces(ctx, r, id, gate)
	if err != nil {
		return Usage{}, err
	}
	return Usage{Users: users, Namespaces: nss}, nil
}
