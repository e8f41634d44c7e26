package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WorkloadKind is one of the three kinds that run Jobs and keep state:
// TerraformCluster, TerraformMachine and TerraformMachinePool. Its value is
// the kind's name, as Job and Secret owner references, the owner-kind label,
// captf_object.kind and captf_tags["captf.io/kind"] carry it.
type WorkloadKind string

// The workload kinds.
const (
	KindTerraformCluster     WorkloadKind = "TerraformCluster"
	KindTerraformMachine     WorkloadKind = "TerraformMachine"
	KindTerraformMachinePool WorkloadKind = "TerraformMachinePool"
)

// WorkloadKinds lists the workload kinds in the order the book gives them.
func WorkloadKinds() []WorkloadKind {
	return []WorkloadKind{KindTerraformCluster, KindTerraformMachine, KindTerraformMachinePool}
}

// Short is the kind's code in Job, Secret and state names: c, m or mp; ""
// for anything that is not a workload kind.
func (k WorkloadKind) Short() string {
	switch k {
	case KindTerraformCluster:
		return "c"
	case KindTerraformMachine:
		return "m"
	case KindTerraformMachinePool:
		return "mp"
	}
	return ""
}

// Valid reports whether k is one of the three workload kinds.
func (k WorkloadKind) Valid() bool { return k.Short() != "" }

// Finalizer is the finalizer CAPTF puts on objects of the kind.
func (k WorkloadKind) Finalizer() string {
	switch k {
	case KindTerraformCluster:
		return TerraformClusterFinalizer
	case KindTerraformMachine:
		return TerraformMachineFinalizer
	case KindTerraformMachinePool:
		return TerraformMachinePoolFinalizer
	}
	return ""
}

// ObjectList is a list of one kind's objects (the shape controller-runtime's
// client.ObjectList has).
// +kubebuilder:object:generate=false
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}

// NewObject returns an empty object of the kind, nil for anything else.
func (k WorkloadKind) NewObject() Workload {
	switch k {
	case KindTerraformCluster:
		return &TerraformCluster{}
	case KindTerraformMachine:
		return &TerraformMachine{}
	case KindTerraformMachinePool:
		return &TerraformMachinePool{}
	}
	return nil
}

// NewList returns an empty list of the kind's objects, nil for anything else.
func (k WorkloadKind) NewList() ObjectList {
	switch k {
	case KindTerraformCluster:
		return &TerraformClusterList{}
	case KindTerraformMachine:
		return &TerraformMachineList{}
	case KindTerraformMachinePool:
		return &TerraformMachinePoolList{}
	}
	return nil
}

// String returns the kind's name.
func (k WorkloadKind) String() string { return string(k) }

// ReadyBeforeProvisioned are the Ready inputs of every workload kind until
// provisioned latches (reference-facts §1.1).
var ReadyBeforeProvisioned = []string{
	DependenciesReadyCondition,
	IdentityAllowedCondition,
	CredentialsMirroredCondition,
	RunnerRBACReadyCondition,
	ApplyJobSucceededCondition,
	StateReadableCondition,
	OutputsValidCondition,
	InfrastructureHealthyCondition,
	DeletingCondition,
}

// ReadyConditions are the conditions Ready summarises for an object of the
// kind, before and after provisioned latches (reference-facts §1.1). After
// provisioning every kind keeps InfrastructureHealthy and Deleting; a kind
// whose Ready reports a re-apply (Capabilities.ReadyReportsReapply, a
// TerraformMachinePool) also keeps ApplyJobSucceeded. A failed re-apply of
// a cluster must not flip the Cluster's InfrastructureReady.
func (k WorkloadKind) ReadyConditions(provisioned bool) []string {
	switch {
	case !provisioned:
		return ReadyBeforeProvisioned
	case k.Capabilities().ReadyReportsReapply:
		return []string{InfrastructureHealthyCondition, ApplyJobSucceededCondition, DeletingCondition}
	}
	return []string{InfrastructureHealthyCondition, DeletingCondition}
}
