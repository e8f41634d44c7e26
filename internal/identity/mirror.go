package identity

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// MirrorLabels are the labels every credential mirror carries: managed (the
// cache and sweep selector), mirrored (marks it as a mirror) and the
// clusterctl move label (it moves with its objects).
func MirrorLabels() map[string]string {
	return map[string]string{
		infrav1.ManagedLabel:  TrueValue,
		infrav1.MirroredLabel: TrueValue,
		infrav1.MoveLabel:     "",
	}
}

// IsMirrorOf reports whether s is the credential mirror of identity: it
// carries captf.io/mirrored=true and captf.io/identity=<identity>. Any other
// Secret of the mirror's name is foreign and is never written to.
func IsMirrorOf(s *corev1.Secret, identity string) bool {
	return s.Labels[infrav1.MirroredLabel] == TrueValue && s.Annotations[infrav1.IdentityAnnotation] == identity
}

// MirrorAction is what keeping a mirror in place needs.
type MirrorAction string

const (
	// MirrorCreate: no Secret of the mirror's name exists.
	MirrorCreate MirrorAction = "Create"
	// MirrorUpdate: the mirror exists but its data, labels, annotations or
	// owner references need writing.
	MirrorUpdate MirrorAction = "Update"
	// MirrorInPlace: nothing to write.
	MirrorInPlace MirrorAction = "InPlace"
	// MirrorForeign: a Secret of the mirror's name is not this identity's
	// mirror; it is never overwritten.
	MirrorForeign MirrorAction = "Foreign"
	// MirrorTerminating: the mirror is being deleted; wait for it to go.
	MirrorTerminating MirrorAction = "Terminating"
)

// MirrorPlan is the decision for one mirror and one owner.
type MirrorPlan struct {
	Action MirrorAction
	// Rewrite: the data must be copied again (the source hash moved, or the
	// mirror's own data no longer matches it).
	Rewrite bool
	// Relabel: labels or the identity annotation are missing or wrong.
	Relabel bool
	// AddOwner: the owner's reference is missing.
	AddOwner bool
}

// PlanMirror decides what keeping identity's mirror current for owner
// needs, given the existing Secret of the mirror's name (nil when none) and
// the source data's hash. Pure.
func PlanMirror(existing *corev1.Secret, identity, sourceHash string, owner metav1.OwnerReference) MirrorPlan {
	if existing == nil {
		return MirrorPlan{Action: MirrorCreate, Rewrite: true, Relabel: true, AddOwner: true}
	}
	if !IsMirrorOf(existing, identity) {
		return MirrorPlan{Action: MirrorForeign}
	}
	if existing.DeletionTimestamp != nil {
		return MirrorPlan{Action: MirrorTerminating}
	}
	p := MirrorPlan{
		Rewrite:  existing.Annotations[infrav1.SourceHashAnnotation] != sourceHash || SourceHash(existing.Data) != sourceHash || existing.Type != corev1.SecretTypeOpaque,
		AddOwner: !hasOwner(existing.OwnerReferences, owner),
	}
	for k, v := range MirrorLabels() {
		if cur, ok := existing.Labels[k]; !ok || cur != v {
			p.Relabel = true
		}
	}
	p.Action = MirrorInPlace
	if p.Rewrite || p.Relabel || p.AddOwner {
		p.Action = MirrorUpdate
	}
	return p
}

// hasOwner reports whether refs hold owner's reference, by UID.
func hasOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.UID == owner.UID {
			return true
		}
	}
	return false
}

// upsertOwner adds owner to refs, never twice: an entry with the same UID
// is kept as is; an entry for the same kind and name with another UID (an
// earlier object of that name) is replaced.
func upsertOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) []metav1.OwnerReference {
	if hasOwner(refs, owner) {
		return refs
	}
	og := refGroupKind(owner)
	for i, r := range refs {
		if refGroupKind(r) == og && r.Name == owner.Name {
			out := append([]metav1.OwnerReference(nil), refs...)
			out[i] = owner
			return out
		}
	}
	return append(append([]metav1.OwnerReference(nil), refs...), owner)
}

// removeOwner drops every reference with uid.
func removeOwner(refs []metav1.OwnerReference, uid types.UID) ([]metav1.OwnerReference, bool) {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		if r.UID != uid {
			out = append(out, r)
		}
	}
	return out, len(out) != len(refs)
}

func refGroupKind(r metav1.OwnerReference) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: r.Kind}
}

// OwnerReference is the non-blocking owner reference an object puts on the
// mirror it uses: not a controller, never blocking the object's deletion.
func OwnerReference(owner client.Object, scheme *runtime.Scheme) (metav1.OwnerReference, error) {
	if owner.GetUID() == "" {
		return metav1.OwnerReference{}, fmt.Errorf("object %s/%s has no UID yet", owner.GetNamespace(), owner.GetName())
	}
	gvk, err := apiutil.GVKForObject(owner, scheme)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("failed to find the kind of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		BlockOwnerDeletion: ptr.To(false),
	}, nil
}

// MirrorOwner returns the object whose owner reference keeps identity's
// mirror alive for obj, which resolved identity from src. The mirror is
// owned by the objects whose spec names the identity, never by one
// reference per machine of a fleet:
//
//   - a TerraformCluster owns the mirror of its own identityRef;
//   - a machine or pool that inherits the identity (src is RefCluster or
//     RefClusterDefaults), or whose own identityRef names the identity its
//     cluster's spec.identityRef or spec.defaults.identityRef also names,
//     puts its TerraformCluster's reference on it: the cluster outlives its
//     machines and pools (Cluster API deletes them before the
//     infrastructure cluster), so the mirror stays as long as any of them
//     may run a Job;
//   - otherwise (its own identity, no cluster resolved, or the cluster
//     being deleted) the machine or pool owns the mirror itself.
//
// So a cluster's fleet adds one owner reference to its mirror, whatever
// its size, and bring-up writes the mirror once per cluster, not once per
// machine. Pure.
func MirrorOwner(obj client.Object, cluster *infrav1.TerraformCluster, identity string, src RefSource) client.Object {
	if _, isCluster := obj.(*infrav1.TerraformCluster); isCluster {
		return obj
	}
	if cluster == nil || cluster.UID == "" || cluster.DeletionTimestamp != nil || identity == "" {
		return obj
	}
	switch src {
	case RefCluster, RefClusterDefaults:
		return cluster
	case RefOwn:
		if r := cluster.Spec.IdentityRef; r != nil && r.Name == identity {
			return cluster
		}
		if d := cluster.Spec.Defaults; d != nil && d.IdentityRef != nil && d.IdentityRef.Name == identity {
			return cluster
		}
	}
	return obj
}

// MirrorResult is the outcome of keeping an object's mirror current.
type MirrorResult struct {
	// Namespace and Name locate the mirror ("" Name when no identity).
	Namespace string
	Name      string
	// Identity is the identity mirrored.
	Identity string
	// Verdict is what CredentialsMirrored is to say.
	Verdict Verdict
	// Created: this call created the mirror (MirrorCreated is due).
	Created bool
	// Updated: this call rewrote the mirror's data, metadata or owners.
	Updated bool
	// Removed: this call deleted the mirror (MirrorRemoved is due).
	Removed bool
}

// Ready reports whether CredentialsMirrored is True.
func (r MirrorResult) Ready() bool { return r.Verdict.Status == metav1.ConditionTrue }

// Events are the MirrorCreated and MirrorRemoved events this call made due.
func (r MirrorResult) Events() []Event {
	var out []Event
	if r.Created {
		out = append(out, normalEvent(infrav1.MirrorCreatedEvent,
			fmt.Sprintf("Created credential mirror Secret %s/%s of TerraformClusterIdentity %q", r.Namespace, r.Name, r.Identity)))
	}
	if r.Removed {
		out = append(out, normalEvent(infrav1.MirrorRemovedEvent,
			fmt.Sprintf("Deleted credential mirror Secret %s/%s of TerraformClusterIdentity %q", r.Namespace, r.Name, r.Identity)))
	}
	return out
}

func mirrorVerdict(status metav1.ConditionStatus, reason, message string) Verdict {
	return Verdict{Status: status, Reason: reason, Message: message}
}

// SyncMirror is the credential mirror half of the credentials step, run
// after CheckAccess for obj (cluster is obj's TerraformCluster as
// CheckAccess had it, nil for a cluster itself or when unresolved):
//
//   - identity allowed: create or update captf-creds-<identity> in obj's
//     namespace, owned as MirrorOwner says;
//   - the identity does not allow the namespace: delete that identity's
//     mirror there, whatever objects still use it (RemoveMirror), and report
//     Unknown/MirrorPending;
//   - otherwise (no identity, identity or Secret missing, check failed):
//     touch nothing and report Unknown/MirrorPending.
//
// c reads through the manager's cache and writes; live reads what a
// label-scoped cache cannot show (a foreign Secret of the mirror's name).
func SyncMirror(ctx context.Context, c client.Client, live client.Reader, a Access, obj client.Object, cluster *infrav1.TerraformCluster) (MirrorResult, error) {
	res := MirrorResult{Namespace: obj.GetNamespace(), Identity: a.Name}
	if a.Name != "" {
		res.Name = MirrorName(a.Name)
	}
	if !a.Allowed() || a.creds == nil {
		res.Verdict = mirrorVerdict(metav1.ConditionUnknown, infrav1.MirrorPendingReason,
			fmt.Sprintf("Waiting for IdentityAllowed (%s)", a.Verdict.Reason))
		if a.Revoked() {
			removed, err := RemoveMirror(ctx, c, res.Namespace, a.Name)
			res.Removed = removed
			if err != nil {
				return res, err
			}
		}
		return res, nil
	}
	return ensureMirror(ctx, c, live, a.Name, *a.creds, MirrorOwner(obj, cluster, a.Name, a.Source))
}

// ensureMirror keeps identity's mirror in owner's namespace current: a byte
// copy of the source data, labeled and annotated, with owner (MirrorOwner)
// among its owners. It never overwrites a Secret of the mirror's name that is not
// this identity's mirror (False/MirrorFailed, no error: it needs a person).
// An API error gives False/MirrorFailed and the error.
func ensureMirror(ctx context.Context, c client.Client, live client.Reader, identity string, creds credentials, owner client.Object) (MirrorResult, error) {
	ns := owner.GetNamespace()
	res := MirrorResult{Namespace: ns, Name: MirrorName(identity), Identity: identity}
	fail := func(err error) (MirrorResult, error) {
		err = redactError(err, creds.data)
		res.Verdict = mirrorVerdict(metav1.ConditionFalse, infrav1.MirrorFailedReason,
			fmt.Sprintf("Failed to keep the credential mirror in place: %v", err))
		return res, err
	}
	ref, err := OwnerReference(owner, c.Scheme())
	if err != nil {
		return fail(err)
	}
	hash := creds.hash()
	key := client.ObjectKey{Namespace: ns, Name: res.Name}

	var plan MirrorPlan
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := getSecret(ctx, c, key)
		if err == nil && existing != nil && len(existing.Data) == 0 {
			// The manager's cache keeps a mirror's data only while its
			// identity exists when the mirror is cached; decide, and
			// update, on the live Secret.
			existing, err = getSecret(ctx, live, key)
		}
		if err != nil {
			return err
		}
		plan = PlanMirror(existing, identity, hash, ref)
		switch plan.Action {
		case MirrorCreate:
			m := buildMirror(key, identity, hash, creds, ref)
			err := c.Create(ctx, m)
			if err == nil {
				res.Created = true
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return err
			}
			// Not in the cache: either just created and not seen yet, or
			// a Secret the cache does not select. Decide on the live one.
			existing = &corev1.Secret{}
			if err := live.Get(ctx, key, existing); err != nil {
				return err
			}
			plan = PlanMirror(existing, identity, hash, ref)
			if plan.Action != MirrorUpdate {
				return nil
			}
			fallthrough
		case MirrorUpdate:
			m := existing.DeepCopy()
			applyMirror(m, identity, hash, creds, ref, plan)
			if err := c.Update(ctx, m); err != nil {
				if apierrors.IsConflict(err) {
					// Retry on what the server holds, not on a cache
					// that may still be behind.
					c = liveReadClient{Client: c, live: live}
				}
				return err
			}
			res.Updated = true
		}
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("failed to write Secret %s/%s: %w", ns, res.Name, err))
	}
	switch plan.Action {
	case MirrorForeign:
		res.Verdict = mirrorVerdict(metav1.ConditionFalse, infrav1.MirrorFailedReason,
			fmt.Sprintf("Secret %s exists and is not the credential mirror of TerraformClusterIdentity %q (it lacks %s=%s or carries another %s); it is never overwritten",
				res.Name, identity, infrav1.MirroredLabel, TrueValue, infrav1.IdentityAnnotation))
	case MirrorTerminating:
		res.Verdict = mirrorVerdict(metav1.ConditionUnknown, infrav1.MirrorPendingReason,
			fmt.Sprintf("Credential mirror Secret %s is being deleted; it is re-created once gone", res.Name))
	default:
		res.Verdict = mirrorVerdict(metav1.ConditionTrue, infrav1.MirroredReason,
			fmt.Sprintf("Credential mirror Secret %s of TerraformClusterIdentity %q is current", res.Name, identity))
		if res.Created || res.Updated {
			ctrl.LoggerFrom(ctx).V(1).Info("Wrote credential mirror", "Secret", key.String(), "sourceHash", hash, "created", res.Created)
		}
	}
	return res, nil
}

// getSecret reads a Secret, returning nil when it does not exist.
func getSecret(ctx context.Context, c client.Reader, key client.ObjectKey) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return s, nil
}

// buildMirror is a new mirror Secret.
func buildMirror(key client.ObjectKey, identity, hash string, creds credentials, ref metav1.OwnerReference) *corev1.Secret {
	m := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	applyMirror(m, identity, hash, creds, ref, MirrorPlan{Rewrite: true, Relabel: true, AddOwner: true})
	return m
}

// applyMirror writes what plan asks for onto m, leaving everything else of
// m as it is.
func applyMirror(m *corev1.Secret, identity, hash string, creds credentials, ref metav1.OwnerReference, plan MirrorPlan) {
	if plan.Relabel {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		maps.Copy(m.Labels, MirrorLabels())
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[infrav1.IdentityAnnotation] = identity
	if plan.Rewrite {
		m.Type = corev1.SecretTypeOpaque
		m.Data = creds.copyData()
		m.StringData = nil
		m.Annotations[infrav1.SourceHashAnnotation] = hash
	}
	if plan.AddOwner {
		m.OwnerReferences = upsertOwner(m.OwnerReferences, ref)
	}
}

// RemoveMirror deletes identity's mirror in namespace, if it is this
// identity's mirror (a foreign Secret of that name is left alone). It
// reports whether it deleted one.
func RemoveMirror(ctx context.Context, c client.Client, namespace, identity string) (bool, error) {
	key := client.ObjectKey{Namespace: namespace, Name: MirrorName(identity)}
	s, err := getSecret(ctx, c, key)
	if err != nil {
		return false, fmt.Errorf("failed to get Secret %s: %w", key, err)
	}
	if s == nil || !IsMirrorOf(s, identity) || s.DeletionTimestamp != nil {
		return false, nil
	}
	if err := c.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed to delete Secret %s: %w", key, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted credential mirror", "Secret", key.String())
	return true, nil
}

// ReleaseMirrors drops owner from the owners of every credential mirror in
// its namespace (an object that switched identities owns more than one)
// and deletes each mirror left with no owner. It is the deletion cleanup's
// "drop it from its credential mirror's owners". It returns the names of
// the mirrors it deleted (MirrorRemoved is due for each).
func ReleaseMirrors(ctx context.Context, c client.Client, live client.Reader, owner client.Object) ([]string, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{infrav1.MirroredLabel: TrueValue}); err != nil {
		return nil, fmt.Errorf("failed to list credential mirrors in %s: %w", owner.GetNamespace(), err)
	}
	var removed []string
	for i := range list.Items {
		s := &list.Items[i]
		if !hasOwner(s.OwnerReferences, metav1.OwnerReference{UID: owner.GetUID()}) {
			continue
		}
		deleted, err := releaseMirror(ctx, c, live, client.ObjectKeyFromObject(s), owner.GetUID())
		if err != nil {
			return removed, err
		}
		if deleted {
			removed = append(removed, s.Name)
		}
	}
	return removed, nil
}

// releaseMirror drops uid from one mirror's owners, deleting it when none
// remain. The delete carries the resourceVersion read, so an owner added
// meanwhile keeps the mirror.
func releaseMirror(ctx context.Context, c client.Client, live client.Reader, key client.ObjectKey, uid types.UID) (bool, error) {
	deleted := false
	var r client.Reader = c
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := getSecret(ctx, r, key)
		if err != nil || s == nil {
			return err
		}
		r = live
		refs, changed := removeOwner(s.OwnerReferences, uid)
		if !changed {
			return nil
		}
		if len(refs) == 0 {
			err := c.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
			if err == nil {
				deleted = true
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		s.OwnerReferences = refs
		return c.Update(ctx, s)
	})
	if err != nil {
		return false, fmt.Errorf("failed to release credential mirror %s: %w", key, err)
	}
	return deleted, nil
}

// liveReadClient reads through live and writes through Client; a retry
// after a conflict uses it so it does not re-read a stale cached copy.
type liveReadClient struct {
	client.Client
	live client.Reader
}

func (l liveReadClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return l.live.Get(ctx, key, obj, opts...)
}
