package identity

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// RefSource says where an object's identity name came from.
type RefSource string

const (
	// RefNone: neither the object nor its cluster names an identity.
	RefNone RefSource = ""
	// RefOwn: the object's own spec.identityRef.
	RefOwn RefSource = "own"
	// RefClusterDefaults: the cluster's spec.defaults.identityRef (machines
	// and pools only).
	RefClusterDefaults RefSource = "clusterDefaults"
	// RefCluster: the cluster's own spec.identityRef (machines and pools
	// only).
	RefCluster RefSource = "cluster"
)

// IdentityRefFor returns the name of the identity obj uses and where it came
// from. A TerraformCluster uses its own spec.identityRef only (its
// spec.defaults are for its machines and pools). A TerraformMachine or
// TerraformMachinePool uses its own identityRef, else its cluster's
// spec.defaults.identityRef, else the cluster's spec.identityRef; cluster is
// nil when it cannot be resolved yet. Any other kind resolves to nothing.
func IdentityRefFor(obj client.Object, cluster *infrav1.TerraformCluster) (string, RefSource) {
	var own *infrav1.IdentityReference
	switch o := obj.(type) {
	case *infrav1.TerraformCluster:
		if o.Spec.IdentityRef != nil && o.Spec.IdentityRef.Name != "" {
			return o.Spec.IdentityRef.Name, RefOwn
		}
		return "", RefNone
	case *infrav1.TerraformMachine:
		own = o.Spec.IdentityRef
	case *infrav1.TerraformMachinePool:
		own = o.Spec.IdentityRef
	default:
		return "", RefNone
	}
	if own != nil && own.Name != "" {
		return own.Name, RefOwn
	}
	if cluster == nil {
		return "", RefNone
	}
	if d := cluster.Spec.Defaults; d != nil && d.IdentityRef != nil && d.IdentityRef.Name != "" {
		return d.IdentityRef.Name, RefClusterDefaults
	}
	if cluster.Spec.IdentityRef != nil && cluster.Spec.IdentityRef.Name != "" {
		return cluster.Spec.IdentityRef.Name, RefCluster
	}
	return "", RefNone
}

// NamespaceAllowed applies allowedNamespaces to a namespace: allowed when
// the list names it or the selector matches its labels. Unset allows none;
// an empty selector allows every namespace. A selector that cannot be
// parsed allows nothing and is reported as an error.
func NamespaceAllowed(allowed *infrav1.AllowedNamespaces, namespace string, namespaceLabels map[string]string) (bool, error) {
	if allowed == nil {
		return false, nil
	}
	if slices.Contains(allowed.List, namespace) {
		return true, nil
	}
	if allowed.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(allowed.Selector)
	if err != nil {
		return false, fmt.Errorf("invalid allowedNamespaces.selector: %w", err)
	}
	return sel.Matches(labels.Set(namespaceLabels)), nil
}

// needsNamespaceLabels says whether deciding needs the Namespace's labels:
// only when the list does not already decide and a selector is set.
func needsNamespaceLabels(allowed *infrav1.AllowedNamespaces, namespace string) bool {
	return allowed != nil && allowed.Selector != nil && !slices.Contains(allowed.List, namespace)
}

// AccessFacts are what checking an object's identity found, as plain facts.
type AccessFacts struct {
	// Namespace is the object's namespace.
	Namespace string
	// Identity is the resolved identity name; "" when nothing names one.
	Identity string
	// ClusterUnresolved: a machine or pool without its own identityRef
	// whose cluster could not be resolved (only changes the message).
	ClusterUnresolved bool
	// IdentityFound: the TerraformClusterIdentity exists.
	IdentityFound bool
	// NamespaceAllowed: its allowedNamespaces admit Namespace.
	NamespaceAllowed bool
	// SelectorError is why allowedNamespaces.selector could not be parsed.
	SelectorError error
	// SecretRef is the source Secret as namespace/name.
	SecretRef string
	// SecretFound: the source Secret exists.
	SecretFound bool
	// CheckError is a transient error that stopped the check.
	CheckError error
}

// AccessVerdict maps the facts onto the IdentityAllowed condition
// (reference-facts §1.4). Checked in this order: a transient error, no
// identity named, identity missing, namespace not allowed, source Secret
// missing, allowed. The namespace is checked before the Secret, so a
// namespace the identity does not admit learns nothing about its Secret.
func AccessVerdict(f AccessFacts) Verdict {
	var c Verdict
	switch {
	case f.CheckError != nil && f.Identity == "":
		c.Status, c.Reason = metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason
		c.Message = fmt.Sprintf("Failed to resolve the identity: %v", f.CheckError)
	case f.CheckError != nil:
		c.Status, c.Reason = metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason
		c.Message = fmt.Sprintf("Failed to check identity %q: %v", f.Identity, f.CheckError)
	case f.Identity == "" && f.ClusterUnresolved:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.IdentityNotFoundReason
		c.Message = "No identityRef is set and the TerraformCluster to inherit one from is not resolved yet"
	case f.Identity == "":
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.IdentityNotFoundReason
		c.Message = "No identityRef is set, on the object or inherited from its TerraformCluster"
	case !f.IdentityFound:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.IdentityNotFoundReason
		c.Message = fmt.Sprintf("TerraformClusterIdentity %q not found", f.Identity)
	case f.SelectorError != nil:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason
		c.Message = fmt.Sprintf("TerraformClusterIdentity %q allows no namespace: %v", f.Identity, f.SelectorError)
	case !f.NamespaceAllowed:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason
		c.Message = fmt.Sprintf("TerraformClusterIdentity %q does not allow namespace %q", f.Identity, f.Namespace)
	case !f.SecretFound:
		c.Status, c.Reason = metav1.ConditionFalse, infrav1.SecretNotFoundReason
		c.Message = fmt.Sprintf("Secret %s of TerraformClusterIdentity %q not found", f.SecretRef, f.Identity)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, infrav1.IdentityAllowedReason
		c.Message = fmt.Sprintf("TerraformClusterIdentity %q allows namespace %q", f.Identity, f.Namespace)
	}
	return c
}

// Access is the outcome of checking an object's identity. It carries the
// source Secret's data for the mirror, hidden from every formatter.
type Access struct {
	// Namespace is the object's namespace.
	Namespace string
	// Name is the resolved identity name ("" when none).
	Name string
	// Source says where Name came from.
	Source RefSource
	// Identity is the TerraformClusterIdentity, when it exists.
	Identity *infrav1.TerraformClusterIdentity
	// SourceHash is the captf.io/source-hash of the source Secret's data,
	// when the identity allows the namespace and the Secret exists.
	SourceHash string
	// Verdict is what IdentityAllowed is to say.
	Verdict Verdict

	creds *credentials
}

// Allowed reports whether IdentityAllowed is True: a Job may use the
// identity from this namespace once its mirror is in place.
func (a Access) Allowed() bool { return a.Verdict.Status == metav1.ConditionTrue }

// Revoked reports whether the identity exists but does not allow the
// namespace: its mirror there must go, whatever objects still use it.
func (a Access) Revoked() bool {
	return a.Name != "" && a.Verdict.Reason == infrav1.NamespaceNotAllowedReason
}

// String describes the access without its credentials.
func (a Access) String() string {
	return fmt.Sprintf("identity %q (%s) in namespace %q: %s/%s", a.Name, a.Source, a.Namespace, a.Verdict.Status, a.Verdict.Reason)
}

// GoString is String: the credentials are never printed.
func (a Access) GoString() string { return a.String() }

// MarshalLog keeps structured loggers from reflecting into the credentials.
func (a Access) MarshalLog() any { return a.String() }

// CheckAccess resolves the identity obj (a TerraformCluster,
// TerraformMachine or TerraformMachinePool) uses and checks it. cluster is
// the object's TerraformCluster for a machine or pool (nil when it cannot be
// resolved yet; ignored for a cluster). c reads the identity and the
// Namespace (the manager's cache will do); live reads the source Secret,
// which the manager's cache does not hold (a SourceWatch, or the API
// server). A transient error
// returns Unknown/IdentityCheckFailed and the error.
func CheckAccess(ctx context.Context, c, live client.Reader, obj client.Object, cluster *infrav1.TerraformCluster) (Access, error) {
	switch obj.(type) {
	case *infrav1.TerraformCluster, *infrav1.TerraformMachine, *infrav1.TerraformMachinePool:
	default:
		return Access{}, fmt.Errorf("cannot resolve the identity of a %T", obj)
	}
	ns := obj.GetNamespace()
	name, src := IdentityRefFor(obj, cluster)
	a := Access{Namespace: ns, Name: name, Source: src}
	f := AccessFacts{Namespace: ns, Identity: name}
	if _, isCluster := obj.(*infrav1.TerraformCluster); !isCluster && cluster == nil {
		f.ClusterUnresolved = true
	}
	err := a.check(ctx, c, live, &f)
	a.Verdict = AccessVerdict(f)
	return a, err
}

func (a *Access) check(ctx context.Context, c, live client.Reader, f *AccessFacts) error {
	if a.Name == "" {
		return nil
	}
	id := &infrav1.TerraformClusterIdentity{}
	if err := c.Get(ctx, client.ObjectKey{Name: a.Name}, id); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.CheckError = err
		return fmt.Errorf("failed to get TerraformClusterIdentity %s: %w", a.Name, err)
	}
	a.Identity = id
	f.IdentityFound = true

	var nsLabels map[string]string
	if needsNamespaceLabels(id.Spec.AllowedNamespaces, a.Namespace) {
		nsObj := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: a.Namespace}, nsObj); err != nil {
			f.CheckError = err
			return fmt.Errorf("failed to get Namespace %s: %w", a.Namespace, err)
		}
		nsLabels = nsObj.Labels
	}
	f.NamespaceAllowed, f.SelectorError = NamespaceAllowed(id.Spec.AllowedNamespaces, a.Namespace, nsLabels)
	if !f.NamespaceAllowed {
		return nil
	}

	ref := id.Spec.SecretRef
	f.SecretRef = ref.Namespace + "/" + ref.Name
	src := &corev1.Secret{}
	if err := live.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.CheckError = err
		return fmt.Errorf("failed to get Secret %s of TerraformClusterIdentity %s: %w", f.SecretRef, a.Name, err)
	}
	f.SecretFound = true
	a.creds = &credentials{data: src.Data}
	a.SourceHash = a.creds.hash()
	return nil
}

// AccessEvents are the events due when IdentityAllowed moves from prev (nil
// when unset) to next: IdentityNotAllowed (Warning) on entering
// NamespaceNotAllowed.
func AccessEvents(prev *metav1.Condition, next Verdict) []Event {
	if next.Reason == infrav1.NamespaceNotAllowedReason && transitioned(prev, next.Status, next.Reason) {
		return []Event{warningEvent(infrav1.IdentityNotAllowedEvent, next.Message)}
	}
	return nil
}

// Values of captf_identity_denied_total's reason label.
const (
	DeniedNotFound  = "notfound"
	DeniedNamespace = "namespace"
)

// DeniedTransition returns the captf_identity_denied_total reason to count
// when IdentityAllowed moves from prev to next ("" when nothing is to be
// counted): "notfound" on entering IdentityNotFound, "namespace" on
// entering NamespaceNotAllowed. Counters count transitions, not reconciles.
func DeniedTransition(prev *metav1.Condition, next Verdict) string {
	if !transitioned(prev, next.Status, next.Reason) {
		return ""
	}
	switch next.Reason {
	case infrav1.IdentityNotFoundReason:
		return DeniedNotFound
	case infrav1.NamespaceNotAllowedReason:
		return DeniedNamespace
	}
	return ""
}
