package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// TerraformMachinePoolSpec is the desired state of a TerraformMachinePool.
// Every field is mutable; a change re-applies the module.
type TerraformMachinePoolSpec struct {
	WorkspaceSpec `json:",inline"`

	// identityRef names the TerraformClusterIdentity the pool's Jobs use.
	// Unset, the cluster's spec.defaults.identityRef, else its own
	// spec.identityRef, is used.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// providerID of the scaling group, from the module's provider_id output.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// providerIDList is every non-terminated member's provider ID, sorted and
	// de-duplicated.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	ProviderIDList []string `json:"providerIDList,omitempty"`

	// drift is the pool's drift check, which cannot be disabled.
	// +optional
	Drift *MachinePoolDriftPolicy `json:"drift,omitempty"`

	// membershipRefreshIntervalSeconds between refreshes that pick up
	// members joining or leaving the group: 15 to 86400; unset or 0 means 60.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 0 || (self >= 15 && self <= 86400)",message="membershipRefreshIntervalSeconds must be 0 or between 15 and 86400"
	MembershipRefreshIntervalSeconds *int32 `json:"membershipRefreshIntervalSeconds,omitempty"`
}

// InstanceState is a pool member's health state.
// +kubebuilder:validation:Enum=pending;running;degraded;stopped;terminated;unknown
type InstanceState string

// The instance states.
const (
	InstanceStatePending    InstanceState = "pending"
	InstanceStateRunning    InstanceState = "running"
	InstanceStateDegraded   InstanceState = "degraded"
	InstanceStateStopped    InstanceState = "stopped"
	InstanceStateTerminated InstanceState = "terminated"
	InstanceStateUnknown    InstanceState = "unknown"
)

// Instance is one member of a pool, as the module reports it.
type Instance struct {
	// providerID of the member.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID"`

	// instanceID is the cloud's own ID of the member.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	InstanceID string `json:"instanceID,omitempty"`

	// addresses of the member, in canonical order. An empty list means the
	// member has no addresses; the field is absent when the instance's
	// addresses are null.
	// +optional
	Addresses clusterv1.MachineAddresses `json:"addresses,omitzero"`

	// failureDomain the member runs in.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// state is the member's health state.
	// +optional
	State InstanceState `json:"state,omitempty"`
}

// TerraformMachinePoolStatus is the observed state of a TerraformMachinePool.
// +kubebuilder:validation:MinProperties=1
type TerraformMachinePoolStatus struct {
	WorkspaceStatus `json:",inline"`

	// ready latches with initialization.provisioned (Cluster API v1beta1
	// compatibility).
	// +optional
	Ready bool `json:"ready,omitempty"`

	// replicas is the group's desired capacity as of the last refresh.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// instances are the module's per-member details, at most 1000.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	Instances []Instance `json:"instances,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformmachinepools,scope=Namespaced,categories=cluster-api;captf,shortName=tmp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="MachinePool",type="string",JSONPath=".metadata.ownerReferences[?(@.kind==\"MachinePool\")].name",description="Owning MachinePool"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="Desired capacity"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformMachinePool runs a machinepool-role module for a Cluster API
// MachinePool.
type TerraformMachinePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformMachinePoolSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status TerraformMachinePoolStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformMachinePoolList is a list of TerraformMachinePools.
type TerraformMachinePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformMachinePool `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TerraformMachinePool{}, &TerraformMachinePoolList{})
}
