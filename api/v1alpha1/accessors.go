package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Workload is what TerraformCluster, TerraformMachine and
// TerraformMachinePool share: the reconcile flow is written once against it.
// +kubebuilder:object:generate=false
type Workload interface {
	metav1.Object
	runtime.Object
	// GetWorkloadKind returns the object's kind.
	GetWorkloadKind() WorkloadKind
	// Capabilities returns what objects of the kind do differently in the
	// shared flow: a kind cannot be a Workload without declaring them.
	Capabilities() Capabilities
	// GetWorkspace returns the spec fields the three kinds share.
	GetWorkspace() *WorkspaceSpec
	// GetWorkspaceStatus returns the status fields the three kinds share.
	GetWorkspaceStatus() *WorkspaceStatus
	// GetIdentityRef returns the object's own identityRef, if set.
	GetIdentityRef() *IdentityReference
	// GetDriftPolicy returns the object's own spec.drift: its interval and
	// action, each unset when the object sets none (a TerraformMachine's
	// drift has no action).
	GetDriftPolicy() DriftPolicy
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// GetWorkloadKind implements Workload.
func (*TerraformCluster) GetWorkloadKind() WorkloadKind { return KindTerraformCluster }

// GetWorkspace implements Workload.
func (c *TerraformCluster) GetWorkspace() *WorkspaceSpec { return &c.Spec.WorkspaceSpec }

// GetWorkspaceStatus implements Workload.
func (c *TerraformCluster) GetWorkspaceStatus() *WorkspaceStatus { return &c.Status.WorkspaceStatus }

// GetIdentityRef implements Workload.
func (c *TerraformCluster) GetIdentityRef() *IdentityReference { return c.Spec.IdentityRef }

// GetDriftPolicy implements Workload.
func (c *TerraformCluster) GetDriftPolicy() DriftPolicy {
	if d := c.Spec.Drift; d != nil {
		return *d
	}
	return DriftPolicy{}
}

// GetConditions returns the conditions.
func (c *TerraformCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions.
func (c *TerraformCluster) SetConditions(conds []metav1.Condition) { c.Status.Conditions = conds }

// GetWorkloadKind implements Workload.
func (*TerraformMachine) GetWorkloadKind() WorkloadKind { return KindTerraformMachine }

// GetWorkspace implements Workload.
func (m *TerraformMachine) GetWorkspace() *WorkspaceSpec { return &m.Spec.WorkspaceSpec }

// GetWorkspaceStatus implements Workload.
func (m *TerraformMachine) GetWorkspaceStatus() *WorkspaceStatus { return &m.Status.WorkspaceStatus }

// GetIdentityRef implements Workload.
func (m *TerraformMachine) GetIdentityRef() *IdentityReference { return m.Spec.IdentityRef }

// GetDriftPolicy implements Workload.
func (m *TerraformMachine) GetDriftPolicy() DriftPolicy {
	if d := m.Spec.Drift; d != nil {
		return DriftPolicy{IntervalSeconds: d.IntervalSeconds}
	}
	return DriftPolicy{}
}

// GetConditions returns the conditions.
func (m *TerraformMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions.
func (m *TerraformMachine) SetConditions(conds []metav1.Condition) { m.Status.Conditions = conds }

// GetWorkloadKind implements Workload.
func (*TerraformMachinePool) GetWorkloadKind() WorkloadKind { return KindTerraformMachinePool }

// GetWorkspace implements Workload.
func (p *TerraformMachinePool) GetWorkspace() *WorkspaceSpec { return &p.Spec.WorkspaceSpec }

// GetWorkspaceStatus implements Workload.
func (p *TerraformMachinePool) GetWorkspaceStatus() *WorkspaceStatus {
	return &p.Status.WorkspaceStatus
}

// GetIdentityRef implements Workload.
func (p *TerraformMachinePool) GetIdentityRef() *IdentityReference { return p.Spec.IdentityRef }

// GetDriftPolicy implements Workload.
func (p *TerraformMachinePool) GetDriftPolicy() DriftPolicy {
	if d := p.Spec.Drift; d != nil {
		return DriftPolicy{IntervalSeconds: d.IntervalSeconds, Action: d.Action}
	}
	return DriftPolicy{}
}

// GetConditions returns the conditions.
func (p *TerraformMachinePool) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions sets the conditions.
func (p *TerraformMachinePool) SetConditions(conds []metav1.Condition) { p.Status.Conditions = conds }

// GetConditions returns the conditions.
func (i *TerraformClusterIdentity) GetConditions() []metav1.Condition { return i.Status.Conditions }

// SetConditions sets the conditions.
func (i *TerraformClusterIdentity) SetConditions(conds []metav1.Condition) {
	i.Status.Conditions = conds
}

// GetConditions returns the conditions.
func (t *TerraformMachineTemplate) GetConditions() []metav1.Condition { return t.Status.Conditions }

// SetConditions sets the conditions.
func (t *TerraformMachineTemplate) SetConditions(conds []metav1.Condition) {
	t.Status.Conditions = conds
}

var (
	_ Workload = &TerraformCluster{}
	_ Workload = &TerraformMachine{}
	_ Workload = &TerraformMachinePool{}
)
