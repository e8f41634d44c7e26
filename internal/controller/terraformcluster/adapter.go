package terraformcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
)

// Adapter is the TerraformCluster's part of the shared flow.
type Adapter struct {
	Client client.Client
}

var (
	_ lifecycle.Adapter    = &Adapter{}
	_ lifecycle.PlanKeeper = &Adapter{}
)

// Kind implements lifecycle.Adapter.
func (a *Adapter) Kind() infrav1.WorkloadKind { return infrav1.KindTerraformCluster }

// Role implements lifecycle.Adapter.
func (a *Adapter) Role() contract.Role { return contract.RoleCluster }

// LookupOwner finds the owning Cluster and checks that it points back.
func (a *Adapter) LookupOwner(ctx context.Context, p *lifecycle.Pass) (*lifecycle.Wait, error) {
	tc := p.Obj.(*infrav1.TerraformCluster)
	p.TerraformCluster = tc
	cluster, err := util.GetOwnerCluster(ctx, a.Client, tc.ObjectMeta)
	switch {
	case apierrors.IsNotFound(err):
		return &lifecycle.Wait{Reason: infrav1.OwnerNotFoundReason, Message: "the owning Cluster is gone", False: true}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to read the owning Cluster: %w", err)
	case cluster == nil:
		return &lifecycle.Wait{Reason: infrav1.WaitingForOwnerReason, Message: "waiting for a Cluster to own this TerraformCluster"}, nil
	}
	if w := lifecycle.BackReference(tc, cluster, cluster.Spec.InfrastructureRef, cluster.Name); w != nil {
		return w, nil
	}
	p.Cluster = cluster
	p.Owner = cluster
	p.ClusterName = cluster.Name
	return nil, nil
}

// BuildInputs renders the cluster role's inputs.
func (a *Adapter) BuildInputs(ctx context.Context, p *lifecycle.Pass) error {
	tc := p.Obj.(*infrav1.TerraformCluster)
	if p.Cluster == nil {
		p.Inputs = lifecycle.Waiting(infrav1.WaitingForOwnerReason, "the owning Cluster is not known")
		return nil
	}
	cluster := p.Cluster
	// Plan Approval: switching back to Automatic clears status.plan.
	if tc.Spec.ApplyPolicy != infrav1.ApplyPolicyManual {
		tc.Status.Plan = nil
	}
	firstApply := p.State == nil && p.StateStatus == decide.StateNotFound
	clusterEP := endpoint(cluster.Spec.ControlPlaneEndpoint)
	infraEP := endpoint(tc.Spec.ControlPlaneEndpoint)
	source := inputs.EndpointSourceBeforeApply(tc.Annotations[infrav1.EndpointSourceAnnotation], firstApply, clusterEP, infraEP)
	if source != "" && tc.Annotations[infrav1.EndpointSourceAnnotation] != source {
		ann := tc.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[infrav1.EndpointSourceAnnotation] = source
		tc.SetAnnotations(ann)
	}
	var lastInitialized bool
	if p.Durable != nil {
		lastInitialized, _ = inputs.LastControlPlaneInitialized(p.Durable.Data[contract.TFVarsFile])
	}
	net := cluster.Spec.ClusterNetwork
	in := &inputs.ClusterInputs{
		Common:                  p.Common(),
		ControlPlaneEndpoint:    inputs.ControlPlaneEndpointInput(source, clusterEP, infraEP),
		KubernetesVersion:       cluster.Spec.Topology.Version,
		ControlPlaneInitialized: inputs.ControlPlaneInitialized(controlPlaneInitialized(cluster), lastInitialized),
		ClusterNetwork: inputs.NewClusterNetwork(net.Pods.CIDRBlocks, net.Services.CIDRBlocks,
			net.ServiceDomain, net.APIServerPort),
	}
	return p.RenderInputs(ctx, contract.RoleCluster, tc.Spec.Source.Image, in)
}

func endpoint(e clusterv1.APIEndpoint) *contract.Endpoint {
	if e.IsZero() {
		return nil
	}
	return &contract.Endpoint{Host: e.Host, Port: e.Port}
}

// ObserveOutputs decodes the cluster's outputs: failure domains, the
// endpoint written back once, EndpointAvailable and health.
func (a *Adapter) ObserveOutputs(_ context.Context, p *lifecycle.Pass) error {
	tc := p.Obj.(*infrav1.TerraformCluster)
	out, v := contract.DecodeClusterOutputs(p.RawOutputs(), contract.ClusterFacts{Undeclared: p.UndeclaredOutputs()})
	p.SetOutputsValid(v)

	// Failure domains.
	var fds []clusterv1.FailureDomain
	for _, fd := range out.FailureDomains {
		cp := fd.ControlPlane
		fds = append(fds, clusterv1.FailureDomain{Name: fd.Name, ControlPlane: &cp, Attributes: fd.Attributes})
	}
	if !equalFailureDomains(tc.Status.FailureDomains, fds) {
		tc.Status.FailureDomains = fds
		p.Event(corev1.EventTypeNormal, infrav1.FailureDomainsChangedEvent, fmt.Sprintf("%d failure domains", len(fds)))
	}

	// The module's endpoint, written back once.
	renderedNull := tc.Annotations[infrav1.EndpointSourceAnnotation] != inputs.EndpointSourceUser
	if contract.ShouldWriteEndpoint(out.ControlPlaneEndpoint, endpoint(tc.Spec.ControlPlaneEndpoint), renderedNull) {
		tc.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: out.ControlPlaneEndpoint.Host, Port: out.ControlPlaneEndpoint.Port}
		ann := tc.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[infrav1.EndpointSourceAnnotation] = inputs.EndpointSourceModule
		tc.SetAnnotations(ann)
		p.Event(corev1.EventTypeNormal, infrav1.ControlPlaneEndpointSetEvent,
			fmt.Sprintf("spec.controlPlaneEndpoint set to %s:%d from the module's output", out.ControlPlaneEndpoint.Host, out.ControlPlaneEndpoint.Port))
	}

	p.ObserveHealth(lifecycle.Reading{
		Health:       out.Health,
		OutputsValid: v.Valid(),
		Provision:    decide.ProvisionFacts{AppliedHash: p.State.InputsHash != "", OutputsValid: v.Valid()},
	})

	if p.Provisioned() {
		p.ObserveEndpoint(tc.Spec.ControlPlaneEndpoint.IsValid() || (p.Cluster != nil && p.Cluster.Spec.ControlPlaneEndpoint.IsValid()))
	}
	return nil
}

func equalFailureDomains(a, b []clusterv1.FailureDomain) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || (a[i].ControlPlane == nil) != (b[i].ControlPlane == nil) ||
			(a[i].ControlPlane != nil && *a[i].ControlPlane != *b[i].ControlPlane) || len(a[i].Attributes) != len(b[i].Attributes) {
			return false
		}
		for k, v := range a[i].Attributes {
			if b[i].Attributes[k] != v {
				return false
			}
		}
	}
	return true
}

// After implements lifecycle.Adapter: a TerraformCluster has no step after
// the flow (its endpoint write-back is part of ObserveOutputs).
func (a *Adapter) After(context.Context, *lifecycle.Pass) error { return nil }

// controlPlaneInitialized is what CAPI says of the Cluster's control plane:
// Cluster.status.initialization.controlPlaneInitialized, which CAPI mirrors
// from a control-plane object. A Cluster without a controlPlaneRef, whose
// control plane is stand-alone Machines, never gets that field; CAPI marks
// it initialized with its ControlPlaneInitialized condition instead, once a
// control-plane Machine has a nodeRef, and its own bootstrap provider reads
// that condition. Nil means not initialized.
func controlPlaneInitialized(cluster *clusterv1.Cluster) *bool {
	if f := cluster.Status.Initialization.ControlPlaneInitialized; f != nil && *f {
		return f
	}
	if !cluster.Spec.ControlPlaneRef.IsDefined() && conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition) {
		initialized := true
		return &initialized
	}
	return nil
}

// Fields implements lifecycle.Adapter: a cluster has none of the kind
// fields.
func (a *Adapter) Fields(lifecycle.Object) lifecycle.KindFields { return lifecycle.KindFields{} }

// PlanPreview implements lifecycle.PlanKeeper: status.plan, the plan
// awaiting approval under applyPolicy Manual.
func (a *Adapter) PlanPreview(obj lifecycle.Object) **infrav1.PlanPreview {
	return &obj.(*infrav1.TerraformCluster).Status.Plan
}

// Observe implements lifecycle.Adapter: the apply policy and the plan
// awaiting approval.
func (a *Adapter) Observe(p *lifecycle.Pass, obs *decide.Observation) {
	tc := p.Obj.(*infrav1.TerraformCluster)
	obs.ApplyPolicy = tc.Spec.ApplyPolicy
	if pl := tc.Status.Plan; pl != nil {
		obs.Plan = &decide.PlanPreview{InputsHash: pl.InputsHash, PlanHash: pl.PlanHash,
			NoChanges: pl.Add == 0 && pl.Change == 0 && pl.Destroy == 0}
	}
}
