package terraformmachine

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
)

// Adapter is the TerraformMachine's part of the shared flow; it finds its
// Machine through machineOwner.
type Adapter struct {
	lifecycle.OwnedBy[*clusterv1.Machine]
}

var _ lifecycle.Adapter = &Adapter{}

// NewAdapter returns the TerraformMachine adapter reading through c.
func NewAdapter(c client.Client) *Adapter {
	return &Adapter{lifecycle.OwnedBy[*clusterv1.Machine]{Client: c, Owner: machineOwner}}
}

// Kind implements lifecycle.Adapter.
func (a *Adapter) Kind() infrav1.WorkloadKind { return infrav1.KindTerraformMachine }

// Role implements lifecycle.Adapter.
func (a *Adapter) Role() contract.Role { return contract.RoleMachine }

// BuildInputs renders the machine role's inputs until the machine is
// provisioned; afterwards a machine never re-renders.
func (a *Adapter) BuildInputs(ctx context.Context, p *lifecycle.Pass) error {
	tm := p.Obj.(*infrav1.TerraformMachine)
	if p.Provisioned() {
		p.Inputs = lifecycle.InputsOutcome{Status: decide.InputsNotRendered}
		return nil
	}
	m := a.OwnerOf(p)
	if m == nil {
		p.Inputs = lifecycle.Waiting(infrav1.WaitingForOwnerReason, "the owning Machine is not known")
		return nil
	}
	r, ok, err := p.ReadMember(ctx, m.Spec.Bootstrap.DataSecretName)
	if !ok {
		return err
	}
	_, controlPlane := m.Labels[clusterv1.MachineControlPlaneLabel]
	in := &inputs.MachineInputs{
		Common:            p.Common(),
		ClusterOutputs:    r.Exports,
		MachineName:       m.Name,
		BootstrapData:     r.BootstrapData,
		BootstrapFormat:   r.BootstrapFormat,
		FailureDomain:     m.Spec.FailureDomain,
		KubernetesVersion: m.Spec.Version,
		ControlPlane:      controlPlane,
	}
	return p.RenderInputs(ctx, contract.RoleMachine, tm.Spec.Source.Image, in)
}

// ObserveOutputs decodes the machine's outputs: the provider ID written
// once, addresses, failure domain, interruptible, health.
func (a *Adapter) ObserveOutputs(_ context.Context, p *lifecycle.Pass) error {
	tm := p.Obj.(*infrav1.TerraformMachine)
	facts := contract.MachineFacts{ProviderID: tm.Spec.ProviderID, Undeclared: p.UndeclaredOutputs()}
	if m := a.OwnerOf(p); m != nil && m.Spec.FailureDomain != "" {
		fd := m.Spec.FailureDomain
		facts.RequestedFailureDomain = &fd
	}
	out, v := contract.DecodeMachineOutputs(p.RawOutputs(), facts)
	p.SetOutputsValid(v)

	if writeOutputs(v) {
		if out.ProviderID != nil && tm.Spec.ProviderID == "" {
			tm.Spec.ProviderID = *out.ProviderID
			p.Event(corev1.EventTypeNormal, infrav1.ProviderIDSetEvent, "spec.providerID set to "+*out.ProviderID)
		}
		tm.Status.Addresses = statusAddresses(out.Addresses)
		if out.FailureDomain != nil {
			tm.Status.FailureDomain = *out.FailureDomain
		}
		tm.Status.Interruptible = out.Interruptible
	}

	p.ObserveHealth(lifecycle.Reading{
		Health:       out.Health,
		OutputsValid: v.Valid(),
		Provision: decide.ProvisionFacts{
			AppliedHash:   p.State.InputsHash != "",
			OutputsValid:  v.Valid(),
			ProviderIDSet: out.ProviderID != nil,
		},
		ProviderIDMissing: p.Provisioned() && out.ProviderID == nil,
	})
	return nil
}

// Fields implements lifecycle.Adapter: the unhealthy samples and the
// remediation's annotateMachine.
func (a *Adapter) Fields(obj lifecycle.Object) lifecycle.KindFields {
	tm := obj.(*infrav1.TerraformMachine)
	f := lifecycle.KindFields{UnhealthySamples: &tm.Status.UnhealthySamples}
	if r := tm.Spec.Remediation; r != nil {
		f.AnnotateMachine = r.AnnotateMachine != nil && *r.AnnotateMachine
	}
	return f
}

// Observe implements lifecycle.Adapter: the remediation settings.
func (a *Adapter) Observe(p *lifecycle.Pass, obs *decide.Observation) {
	if r := p.Obj.(*infrav1.TerraformMachine).Spec.Remediation; r != nil {
		obs.Remediation.AnnotateMachine = r.AnnotateMachine != nil && *r.AnnotateMachine
		if r.HealthCheckIntervalSeconds != nil {
			obs.Remediation.HealthCheckIntervalSeconds = *r.HealthCheckIntervalSeconds
		}
	}
}
