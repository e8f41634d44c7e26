package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// TerraformMachineSpec is the desired state of a TerraformMachine. source,
// identityRef, variables and variablesFrom define the machine and are
// immutable; jobs, drift and remediation are operational policy and stay
// mutable.
type TerraformMachineSpec struct {
	WorkspaceSpec `json:",inline"`

	// identityRef names the TerraformClusterIdentity the machine's Jobs use.
	// Unset, the cluster's spec.defaults.identityRef, else its own
	// spec.identityRef, is used.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// providerID of the instance, set once by the controller from the
	// module's provider_id output.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// drift is the machine's drift check (always reported, never
	// remediated).
	// +optional
	Drift *MachineDriftPolicy `json:"drift,omitempty"`

	// remediation asks Cluster API to replace an unhealthy instance.
	// +optional
	Remediation *MachineRemediation `json:"remediation,omitempty"`
}

// TerraformMachineStatus is the observed state of a TerraformMachine.
// +kubebuilder:validation:MinProperties=1
type TerraformMachineStatus struct {
	WorkspaceStatus `json:",inline"`

	// addresses of the instance, in canonical order. An empty list means
	// the instance has no addresses (the module's addresses output is []);
	// the field is absent while the output is null. Cluster API copies the
	// list to Machine.status.addresses when present, [] included, and leaves
	// the Machine's list alone when absent.
	// +optional
	Addresses clusterv1.MachineAddresses `json:"addresses,omitzero"`

	// failureDomain the instance runs in.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain string `json:"failureDomain,omitempty"`

	// interruptible is true for a spot or preemptible instance.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`

	// unhealthySamples counts consecutive unhealthy health samples.
	// +optional
	// +kubebuilder:validation:Minimum=1
	UnhealthySamples int32 `json:"unhealthySamples,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformmachines,scope=Namespaced,categories=cluster-api;captf,shortName=tm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Machine",type="string",JSONPath=".metadata.ownerReferences[?(@.kind==\"Machine\")].name",description="Owning Machine"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Infrastructure provisioned"
// +kubebuilder:printcolumn:name="ProviderID",type="string",JSONPath=".spec.providerID",description="Provider ID"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.source.image",priority=1,description="Module image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.spec.source == oldSelf.spec.source",message="spec.source is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.spec.identityRef) == has(oldSelf.spec.identityRef) && (!has(self.spec.identityRef) || self.spec.identityRef == oldSelf.spec.identityRef)",message="spec.identityRef is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.spec.variablesFrom) == has(oldSelf.spec.variablesFrom) && (!has(self.spec.variablesFrom) || self.spec.variablesFrom == oldSelf.spec.variablesFrom)",message="spec.variablesFrom is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.providerID) || (has(self.spec.providerID) && self.spec.providerID == oldSelf.spec.providerID)",message="spec.providerID is set once"

// TerraformMachine runs a machine-role module for a Cluster API Machine.
type TerraformMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformMachineSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status TerraformMachineStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformMachineList is a list of TerraformMachines.
type TerraformMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformMachine `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TerraformMachine{}, &TerraformMachineList{})
}
