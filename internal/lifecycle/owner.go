package lifecycle

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// OwnerKind is how a machine-like kind (TerraformMachine,
// TerraformMachinePool) finds its Cluster API owner, PT.
type OwnerKind[PT interface {
	client.Object
	comparable
}] struct {
	// Kind is the owner's kind, Machine or MachinePool.
	Kind string
	// Get reads the owner named by the object's owner references; it
	// returns nil when no reference names an owner of Kind.
	Get func(context.Context, client.Client, metav1.ObjectMeta) (PT, error)
	// Pending reports whether the object's owner references show that
	// an owner of Kind is about to be set; the wait is then
	// WaitingReason, False (reference-facts §1.3).
	Pending       func([]metav1.OwnerReference) bool
	WaitingReason string
	// Refs returns the owner's infrastructureRef and spec.clusterName.
	Refs func(PT) (clusterv1.ContractVersionedObjectReference, string)
}

// OwnedBy is the part of an Adapter that the machine-like kinds share: the
// client it reads through and how it finds its Cluster API owner.
type OwnedBy[PT interface {
	client.Object
	comparable
}] struct {
	Client client.Client
	Owner  OwnerKind[PT]
}

// LookupOwner implements Adapter: it finds the owner with o.Owner, checks
// that it points back (Security Model), records it on the pass and then
// finds the Cluster and its TerraformCluster.
func (o *OwnedBy[PT]) LookupOwner(ctx context.Context, p *Pass) (*Wait, error) {
	k := o.Owner
	obj := p.Obj
	var none PT
	owner, err := k.Get(ctx, o.Client, metav1.ObjectMeta{Namespace: obj.GetNamespace(), OwnerReferences: obj.GetOwnerReferences()})
	switch {
	case apierrors.IsNotFound(err):
		return &Wait{Reason: infrav1.OwnerNotFoundReason, Message: "the owning " + k.Kind + " is gone", False: true}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read the owning %s: %w", k.Kind, err)
	case owner == none && k.Pending(obj.GetOwnerReferences()):
		return &Wait{Reason: k.WaitingReason, False: true, Message: "waiting for the " + k.Kind + " to set its owner reference"}, nil
	case owner == none:
		return &Wait{Reason: infrav1.WaitingForOwnerReason, Message: fmt.Sprintf("waiting for a %s to own this %s", k.Kind, p.Kind)}, nil
	}
	ref, clusterName := k.Refs(owner)
	if w := BackReference(obj, owner, ref, clusterName); w != nil {
		return w, nil
	}
	p.Owner = owner
	return LookupCluster(ctx, o.Client, p, clusterName)
}

// OwnerOf returns the owner LookupOwner recorded on the pass, or nil.
func (o *OwnedBy[PT]) OwnerOf(p *Pass) PT {
	owner, _ := p.Owner.(PT)
	return owner
}

// LookupCluster finds a machine's or pool's Cluster, by the object's
// cluster-name label (else fallback, the owner's spec.clusterName), and the
// Cluster's TerraformCluster.
func LookupCluster(ctx context.Context, c client.Client, p *Pass, fallback string) (*Wait, error) {
	name := p.Obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		name = fallback
	}
	if name == "" {
		return &Wait{Reason: infrav1.WaitingForOwnerReason, Message: "the Cluster is not known yet"}, nil
	}
	p.ClusterName = name
	cluster := &clusterv1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: name}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		return &Wait{Reason: infrav1.OwnerNotFoundReason, Message: "Cluster " + name + " is gone", False: true}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read Cluster %s: %w", name, err)
	}
	p.Cluster = cluster
	ref := cluster.Spec.InfrastructureRef
	if !infrav1.WorkloadKind(ref.Kind).Capabilities().HasMembers {
		return &Wait{Reason: infrav1.ClusterNotTerraformReason, False: true,
			Message: fmt.Sprintf("Cluster %s's infrastructure is a %s, not a TerraformCluster", name, ref.Kind)}, nil
	}
	tc := &infrav1.TerraformCluster{}
	err = c.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: ref.Name}, tc)
	switch {
	case apierrors.IsNotFound(err):
		return &Wait{Reason: infrav1.WaitingForClusterInfrastructureReason, Message: "TerraformCluster " + ref.Name + " does not exist yet"}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read TerraformCluster %s: %w", ref.Name, err)
	}
	p.TerraformCluster = tc
	return nil, nil
}

// BackReference applies the Security Model's owner checks
// (owner.CheckBackReference) to obj and its Cluster API owner, and returns
// a failed check as a DependenciesReady=False/OwnerMismatch wait, or nil.
func BackReference(obj infrav1.Workload, capiOwner client.Object, ref clusterv1.ContractVersionedObjectReference, ownerCluster string) *Wait {
	if msg := owner.CheckBackReference(obj, capiOwner, ref, ownerCluster); msg != "" {
		return &Wait{Reason: infrav1.OwnerMismatchReason, False: true, Message: msg}
	}
	return nil
}
