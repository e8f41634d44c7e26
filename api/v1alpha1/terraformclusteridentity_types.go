package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretReference names a Secret in a namespace.
type SecretReference struct {
	// name of the Secret, a DNS subdomain.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// namespace of the Secret, a DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
}

// AllowedNamespaces says which namespaces may use an identity: those in
// list, or matching selector. An empty selector allows every namespace;
// setting neither field is refused.
// +kubebuilder:validation:XValidation:rule="has(self.list) || has(self.selector)",message="allowedNamespaces must set list or selector"
type AllowedNamespaces struct {
	// list of namespace names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	List []string `json:"list,omitempty"`

	// selector of namespaces by label; {} selects every namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// TerraformClusterIdentitySpec is the desired state of a
// TerraformClusterIdentity.
type TerraformClusterIdentitySpec struct {
	// secretRef names the Secret of cloud credentials mirrored into each
	// allowed namespace that uses the identity.
	// +required
	SecretRef SecretReference `json:"secretRef"`

	// allowedNamespaces may use the identity. Unset allows none.
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// TerraformClusterIdentityStatus is the observed state of a
// TerraformClusterIdentity.
type TerraformClusterIdentityStatus struct {
	// conditions of the identity: Ready is True while its Secret exists.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// namespaces currently holding a mirror of the identity's Secret.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformclusteridentities,scope=Cluster,categories=cluster-api;captf,shortName=tfci
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Secret",type="string",JSONPath=".spec.secretRef.name",description="Credentials Secret"
// +kubebuilder:printcolumn:name="Namespace",type="string",JSONPath=".spec.secretRef.namespace",description="Credentials Secret namespace"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformClusterIdentity names a Secret of cloud credentials and the
// namespaces allowed to use it.
type TerraformClusterIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformClusterIdentitySpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status TerraformClusterIdentityStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformClusterIdentityList is a list of TerraformClusterIdentities.
type TerraformClusterIdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformClusterIdentity `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TerraformClusterIdentity{}, &TerraformClusterIdentityList{})
}
