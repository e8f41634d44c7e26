package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ApplyPolicy decides whether a TerraformCluster's applies wait for a plan
// approval.
// +kubebuilder:validation:Enum=Automatic;Manual
type ApplyPolicy string

const (
	// ApplyPolicyAutomatic applies new inputs at once (destructive plans
	// still wait for approval).
	ApplyPolicyAutomatic ApplyPolicy = "Automatic"
	// ApplyPolicyManual runs a plan first and applies only an approved plan.
	ApplyPolicyManual ApplyPolicy = "Manual"
)

// ClusterDefaults are what a TerraformCluster passes to its machines and
// pools, never to itself.
type ClusterDefaults struct {
	// identityRef is the identity a machine or pool without its own uses.
	// Unset, they fall back to the cluster's own spec.identityRef.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// jobs is merged field by field under each machine's and pool's
	// spec.jobs.
	// +optional
	Jobs *JobPolicy `json:"jobs,omitempty"`

	// drift gives machines and pools an inherited drift interval.
	// +optional
	Drift *MachineDriftPolicy `json:"drift,omitempty"`
}

// TerraformClusterSpec is the desired state of a TerraformCluster.
type TerraformClusterSpec struct {
	WorkspaceSpec `json:",inline"`

	// identityRef names the TerraformClusterIdentity whose credentials the
	// cluster's Jobs use. Required on a TerraformCluster; a
	// TerraformClusterTemplate may leave it to a ClusterClass patch.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// controlPlaneEndpoint is the workload cluster's API endpoint. Set by the
	// user it becomes the module's control_plane_endpoint input; otherwise the
	// controller writes it once from the module's output. Immutable once it
	// has a host.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.host) == has(self.port)",message="host and port must be set together"
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// drift is the cluster's drift check.
	// +optional
	Drift *DriftPolicy `json:"drift,omitempty"`

	// applyPolicy is Automatic (the default) or Manual, where every apply but
	// the first waits for an approved plan.
	// +optional
	ApplyPolicy ApplyPolicy `json:"applyPolicy,omitempty"`

	// defaults apply to the cluster's machines and pools.
	// +optional
	Defaults *ClusterDefaults `json:"defaults,omitempty"`
}

// TerraformClusterStatus is the observed state of a TerraformCluster.
// +kubebuilder:validation:MinProperties=1
type TerraformClusterStatus struct {
	WorkspaceStatus `json:",inline"`

	// failureDomains the module reported, published to the Cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []clusterv1.FailureDomain `json:"failureDomains,omitempty"`

	// plan is the plan awaiting approval under applyPolicy Manual.
	// +optional
	Plan *PlanPreview `json:"plan,omitempty"`
}

// PlanPreview is a plan waiting for approval.
type PlanPreview struct {
	// inputsHash the plan was computed for.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	InputsHash string `json:"inputsHash"`

	// job that computed the plan.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Job string `json:"job"`

	// planHash to approve with captf.io/approve-plan.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	PlanHash string `json:"planHash"`

	// add is the number of resources to create.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Add int32 `json:"add,omitempty"`

	// change is the number of resources to update in place.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Change int32 `json:"change,omitempty"`

	// destroy is the number of resources to delete.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Destroy int32 `json:"destroy,omitempty"`

	// resources are "<address> (<action>)" entries, sorted, at most 50.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=600
	Resources []string `json:"resources,omitempty"`

	// truncated is true when more than 50 resources changed.
	// +optional
	Truncated bool `json:"truncated,omitempty"`

	// createdAt is when the plan was read.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformclusters,scope=Namespaced,categories=cluster-api;captf,shortName=tc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Ready condition"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned",description="Infrastructure provisioned"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.controlPlaneEndpoint.host",description="Control-plane endpoint"
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.source.image",priority=1,description="Module image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="has(self.spec.identityRef)",message="spec.identityRef is required"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.controlPlaneEndpoint) || !has(oldSelf.spec.controlPlaneEndpoint.host) || (has(self.spec.controlPlaneEndpoint) && self.spec.controlPlaneEndpoint == oldSelf.spec.controlPlaneEndpoint)",message="controlPlaneEndpoint is immutable once it has a host"

// TerraformCluster runs a cluster-role module for a Cluster API Cluster.
type TerraformCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformClusterSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status TerraformClusterStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformClusterList is a list of TerraformClusters.
type TerraformClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformCluster `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TerraformCluster{}, &TerraformClusterList{})
}
