package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

func forbidden(resource, name, msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: infrav1.GroupVersion.Group, Resource: resource}, name, errors.New(msg))
}

// Machine validates TerraformMachines and guards their deletion.
type Machine struct {
	// Reader reads Machines and Clusters live.
	Reader client.Reader
}

// ValidateCreate implements admission.Validator.
func (*Machine) ValidateCreate(_ context.Context, obj *infrav1.TerraformMachine) (admission.Warnings, error) {
	return nil, invalid("TerraformMachine", obj.Name, ValidateMachineSpec(field.NewPath("spec"), &obj.Spec))
}

// ValidateUpdate implements admission.Validator.
func (*Machine) ValidateUpdate(_ context.Context, old, obj *infrav1.TerraformMachine) (admission.Warnings, error) {
	errs := ratchet(ValidateMachineSpec(field.NewPath("spec"), &old.Spec), ValidateMachineSpec(field.NewPath("spec"), &obj.Spec))
	errs = append(errs, ValidateMachineUpdate(old, obj)...)
	return nil, invalid("TerraformMachine", obj.Name, errs)
}

// ValidateDelete refuses a direct delete while an owning Machine that
// passes the Security Model's owner checks exists and is not being deleted,
// so drain and the control plane's hooks are never bypassed. A delete
// carrying clusterctl's delete-for-move annotation is allowed while the
// Cluster is paused (clusterctl move pauses it first).
func (m *Machine) ValidateDelete(ctx context.Context, obj *infrav1.TerraformMachine) (admission.Warnings, error) {
	machine, err := m.owner(ctx, obj)
	if err != nil || machine == nil {
		return nil, err
	}
	if _, move := obj.Annotations[infrav1.DeleteForMoveAnnotation]; move {
		name := obj.Labels[clusterv1.ClusterNameLabel]
		if name == "" {
			name = machine.Spec.ClusterName
		}
		paused, err := m.clusterPaused(ctx, obj.Namespace, name)
		if err != nil {
			return nil, err
		}
		if paused {
			return nil, nil
		}
		return nil, forbidden("terraformmachines", obj.Name, fmt.Sprintf(
			"metadata.annotations[%s] is honoured only while Cluster %s is paused; TerraformMachine %s is owned by Machine %s: delete the Machine instead",
			infrav1.DeleteForMoveAnnotation, name, obj.Name, machine.Name))
	}
	return nil, forbidden("terraformmachines", obj.Name, fmt.Sprintf(
		"TerraformMachine %s is owned by Machine %s (metadata.ownerReferences): delete the Machine instead, so drain and the control plane's hooks run first",
		obj.Name, machine.Name))
}

// owner returns the Machine that owns obj, when one exists, is not being
// deleted and passes the owner checks (its infrastructureRef names obj,
// the ownerReferences entry's UID when set is its UID, obj's cluster-name
// label when set is its cluster); nil otherwise.
func (m *Machine) owner(ctx context.Context, obj *infrav1.TerraformMachine) (*clusterv1.Machine, error) {
	for _, ref := range obj.OwnerReferences {
		if ref.Kind != "Machine" || !strings.HasPrefix(ref.APIVersion, clusterv1.GroupVersion.Group+"/") {
			continue
		}
		machine := &clusterv1.Machine{}
		err := m.Reader.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, machine)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("failed to read Machine %s: %w", ref.Name, err)
		}
		if !machine.DeletionTimestamp.IsZero() || owner.CheckBackReference(obj, machine, machine.Spec.InfrastructureRef, machine.Spec.ClusterName) != "" {
			continue
		}
		return machine, nil
	}
	return nil, nil
}

func (m *Machine) clusterPaused(ctx context.Context, namespace, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	cl := &clusterv1.Cluster{}
	err := m.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cl)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to read Cluster %s: %w", name, err)
	}
	return cl.Spec.Paused != nil && *cl.Spec.Paused, nil
}

// Identity validates TerraformClusterIdentities: the spec, the
// SubjectAccessReview on create, on a secretRef change and on a change
// that widens allowedNamespaces, and the delete guard.
type Identity struct {
	// Client creates SubjectAccessReviews.
	Client client.Client
	// Reader lists the objects that use an identity, in every namespace.
	Reader client.Reader
}

// ValidateCreate implements admission.Validator.
func (i *Identity) ValidateCreate(ctx context.Context, obj *infrav1.TerraformClusterIdentity) (admission.Warnings, error) {
	if err := invalid("TerraformClusterIdentity", obj.Name, ValidateIdentitySpec(&obj.Spec)); err != nil {
		return nil, err
	}
	return nil, i.mayGetSecret(ctx, obj, namingSecret)
}

// ValidateUpdate implements admission.Validator. A change that could hand
// the credentials to more namespaces needs the same access as naming the
// Secret: a new spec.secretRef, or an allowedNamespaces change that
// identity.AllowedNamespacesWidening finds widening, is refused unless the
// requester may get the (new) source Secret. Narrowing and every other
// change are not re-checked.
func (i *Identity) ValidateUpdate(ctx context.Context, old, obj *infrav1.TerraformClusterIdentity) (admission.Warnings, error) {
	if err := invalid("TerraformClusterIdentity", obj.Name, ratchet(ValidateIdentitySpec(&old.Spec), ValidateIdentitySpec(&obj.Spec))); err != nil {
		return nil, err
	}
	var needs []secretAccessNeed
	if old.Spec.SecretRef != obj.Spec.SecretRef {
		needs = append(needs, namingSecret)
	}
	for _, w := range identity.AllowedNamespacesWidening(old.Spec.AllowedNamespaces, obj.Spec.AllowedNamespaces) {
		needs = append(needs, secretAccessNeed{w.Field,
			"this change " + w.Detail + ", widening which namespaces may receive its credentials, which needs get on the identity's source Secret"})
	}
	if len(needs) == 0 {
		return nil, nil
	}
	return nil, i.mayGetSecret(ctx, obj, needs...)
}

// secretAccessNeed is a changed field that needs get on the source Secret,
// and why, as the refusal says it.
type secretAccessNeed struct {
	path *field.Path
	why  string
}

// namingSecret is the need of a create or a new spec.secretRef.
var namingSecret = secretAccessNeed{field.NewPath("spec", "secretRef"), "an identity can only name a Secret its creator can read"}

// mayGetSecret asks the API server whether the requesting user may get the
// Secret spec.secretRef names, so a role that may manage identities but
// not read Secrets cannot have the controller mirror one it cannot read,
// nor mirror it into more namespaces. When the user may not, each need is
// a Forbidden error on its field (never carrying the Secret's content).
func (i *Identity) mayGetSecret(ctx context.Context, obj *infrav1.TerraformClusterIdentity, needs ...secretAccessNeed) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return fmt.Errorf("no admission request to check spec.secretRef against: %w", err)
	}
	u := req.UserInfo
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ref := obj.Spec.SecretRef
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, Groups: u.Groups, UID: u.UID, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ref.Namespace, Verb: "get", Version: "v1", Resource: "secrets", Name: ref.Name,
		},
	}}
	if err := i.Client.Create(ctx, sar); err != nil {
		return fmt.Errorf("failed to review access to spec.secretRef: %w", err)
	}
	if sar.Status.Allowed && !sar.Status.Denied {
		return nil
	}
	errs := make(field.ErrorList, 0, len(needs))
	for _, n := range needs {
		errs = append(errs, field.Forbidden(n.path, fmt.Sprintf("user %q may not get Secret %s/%s: %s", u.Username, ref.Namespace, ref.Name, n.why)))
	}
	return apierrors.NewInvalid(groupKind("TerraformClusterIdentity"), obj.Name, errs)
}

// ValidateDelete refuses deleting an identity while, in a namespace it
// allows, an object resolves to it (one being deleted counts: its destroy
// needs the credentials) or a mirror of it CAPTF made remains
// (identity.UsageOf, read live rather than from a status.namespaces that
// may lag). Objects in namespaces it does not allow, and Secrets that only
// look like its mirror, hold nothing back: otherwise any tenant could
// keep any identity.
func (i *Identity) ValidateDelete(ctx context.Context, obj *infrav1.TerraformClusterIdentity) (admission.Warnings, error) {
	u, err := identity.UsageOf(ctx, i.Reader, obj)
	if err != nil {
		return nil, err
	}
	if u.InUse() {
		return nil, forbidden("terraformclusteridentities", obj.Name, u.Reason(obj.Name))
	}
	return nil, nil
}
