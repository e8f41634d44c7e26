package lifecycle

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

// What the shared flow offers a kind's adapter, as methods of the pass it
// is handed: an adapter holds no flow of its own, only its client.

// Event emits an event on the pass's object (never a secret value in note).
func (p *Pass) Event(eventType, reason, note string) {
	p.flow.event(p, nil, eventType, reason, note)
}

// SetOutputsValid records OutputsValid from a decode verdict.
func (p *Pass) SetOutputsValid(v contract.Verdict) { p.flow.recordOutputs(p, v) }

// ObserveHealth records a health reading and returns the new
// InfrastructureHealthy reason.
func (p *Pass) ObserveHealth(r Reading) string { return p.flow.observeHealth(p, r) }

// Variables reads the object's variablesFrom sources and merges them with
// its inline variables; a non-nil outcome says why it must wait.
func (p *Pass) Variables(ctx context.Context, role contract.Role) (inputs.Variables, *InputsOutcome, error) {
	return p.flow.variables(ctx, p, role)
}

// ClusterExports reads the cluster's exports from its state; a non-nil
// outcome says why they cannot be read yet.
func (p *Pass) ClusterExports(ctx context.Context) (json.RawMessage, *InputsOutcome) {
	return p.flow.clusterExports(ctx, p)
}

// Bootstrap reads the owner's bootstrap data; a non-nil outcome says why it
// must wait.
func (p *Pass) Bootstrap(ctx context.Context, dataSecretName *string) ([]byte, string, *InputsOutcome, error) {
	return p.flow.bootstrap(ctx, p, dataSecretName)
}

// MemberReads is what the inputs of a cluster's member (a machine or a
// pool) read besides its owner: the cluster's exports and the owner's
// bootstrap data.
type MemberReads struct {
	Exports         json.RawMessage
	BootstrapData   []byte
	BootstrapFormat string
}

// ReadMember reads what a member's inputs need, in the order it waits for
// them: the Cluster's infrastructure provisioned, the cluster's exports,
// the bootstrap data the owner names. When one is missing it records the
// wait as the pass's inputs and returns false.
func (p *Pass) ReadMember(ctx context.Context, dataSecretName *string) (MemberReads, bool, error) {
	if !ClusterInfrastructureProvisioned(p.Cluster) {
		p.Inputs = Waiting(infrav1.WaitingForClusterInfrastructureReason, "waiting for the Cluster's infrastructure to be provisioned")
		return MemberReads{}, false, nil
	}
	exports, wait := p.ClusterExports(ctx)
	if wait != nil {
		p.Inputs = *wait
		return MemberReads{}, false, nil
	}
	data, format, wait, err := p.Bootstrap(ctx, dataSecretName)
	if wait != nil {
		p.Inputs = *wait
	}
	if err != nil || wait != nil {
		return MemberReads{}, false, err
	}
	return MemberReads{Exports: exports, BootstrapData: data, BootstrapFormat: format}, true, nil
}

// RenderInputs merges the object's variables for role with in and renders
// them as the pass's inputs for image, or records why it must wait.
func (p *Pass) RenderInputs(ctx context.Context, role contract.Role, image string, in inputs.RoleInputs) error {
	vars, wait, err := p.Variables(ctx, role)
	if wait != nil {
		p.Inputs = *wait
	}
	if err != nil || wait != nil {
		return err
	}
	p.Inputs, err = Render(image, in, vars)
	return err
}

// event emits an event on the object (never a secret value in note).
func (f *Flow) event(p *Pass, related runtime.Object, eventType, reason, note string) {
	if f.Recorder == nil {
		return
	}
	f.Recorder.Eventf(p.Obj, related, eventType, reason, reason, "%s", note)
}
