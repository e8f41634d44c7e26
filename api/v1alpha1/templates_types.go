package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// TerraformClusterTemplateResource is what a TerraformCluster is created
// with.
type TerraformClusterTemplateResource struct {
	// metadata (labels and annotations) copied onto the TerraformCluster.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of the TerraformCluster. Immutable once the template exists.
	// +required
	Spec TerraformClusterSpec `json:"spec"`
}

// TerraformClusterTemplateSpec is the desired state of a
// TerraformClusterTemplate.
type TerraformClusterTemplateSpec struct {
	// template is what a ClusterClass topology expands into a
	// TerraformCluster.
	// +required
	Template TerraformClusterTemplateResource `json:"template"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformclustertemplates,scope=Namespaced,categories=cluster-api;captf,shortName=tct
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.template.spec.source.image",description="Module image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformClusterTemplate stamps out TerraformClusters for a ClusterClass.
type TerraformClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformClusterTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TerraformClusterTemplateList is a list of TerraformClusterTemplates.
type TerraformClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformClusterTemplate `json:"items"`
}

// TerraformMachineTemplateResource is what a TerraformMachine is created
// with.
type TerraformMachineTemplateResource struct {
	// metadata (labels and annotations) copied onto each TerraformMachine.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of each TerraformMachine. Immutable once the template exists.
	// +required
	Spec TerraformMachineSpec `json:"spec"`
}

// TerraformMachineTemplateSpec is the desired state of a
// TerraformMachineTemplate.
type TerraformMachineTemplateSpec struct {
	// template is what a MachineDeployment, MachineSet or control plane
	// expands into one TerraformMachine per Machine.
	// +required
	Template TerraformMachineTemplateResource `json:"template"`
}

// Architecture of a template's nodes.
// +kubebuilder:validation:Enum=amd64;arm64;s390x;ppc64le
type Architecture string

// NodeInfo describes a template's nodes for scale-from-zero.
// +kubebuilder:validation:MinProperties=1
type NodeInfo struct {
	// architecture of the nodes.
	// +optional
	Architecture Architecture `json:"architecture,omitempty"`

	// operatingSystem of the nodes.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	OperatingSystem string `json:"operatingSystem,omitempty"`
}

// CapacitySource is the image capacity was last resolved from.
type CapacitySource struct {
	// image reference the labels were read from.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
}

// TerraformMachineTemplateStatus is the observed state of a
// TerraformMachineTemplate.
type TerraformMachineTemplateStatus struct {
	// conditions of the template: CapacityResolved.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// capacity of one node, from the image's io.captf.capacity label, for
	// Cluster Autoscaler scale-from-zero.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// nodeInfo from the image's io.captf.node-info label.
	// +optional
	NodeInfo *NodeInfo `json:"nodeInfo,omitempty"`

	// capacitySource is the image capacity was resolved from; a new spec
	// image is resolved again.
	// +optional
	CapacitySource *CapacitySource `json:"capacitySource,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformmachinetemplates,scope=Namespaced,categories=cluster-api;captf,shortName=tmt
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.template.spec.source.image",description="Module image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformMachineTemplate stamps out TerraformMachines.
type TerraformMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformMachineTemplateSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status TerraformMachineTemplateStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformMachineTemplateList is a list of TerraformMachineTemplates.
type TerraformMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformMachineTemplate `json:"items"`
}

// TerraformMachinePoolTemplateResource is what a TerraformMachinePool is
// created with.
type TerraformMachinePoolTemplateResource struct {
	// metadata (labels and annotations) copied onto the TerraformMachinePool.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of the TerraformMachinePool. Immutable once the template exists.
	// +required
	Spec TerraformMachinePoolSpec `json:"spec"`
}

// TerraformMachinePoolTemplateSpec is the desired state of a
// TerraformMachinePoolTemplate.
type TerraformMachinePoolTemplateSpec struct {
	// template is what a ClusterClass topology expands into a
	// TerraformMachinePool.
	// +required
	Template TerraformMachinePoolTemplateResource `json:"template"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformmachinepooltemplates,scope=Namespaced,categories=cluster-api;captf,shortName=tmpt
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.template.spec.source.image",description="Module image"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformMachinePoolTemplate stamps out TerraformMachinePools for a
// ClusterClass. It has no status: a pool has no scale-from-zero.
type TerraformMachinePoolTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec TerraformMachinePoolTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TerraformMachinePoolTemplateList is a list of TerraformMachinePoolTemplates.
type TerraformMachinePoolTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformMachinePoolTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes,
		&TerraformClusterTemplate{}, &TerraformClusterTemplateList{},
		&TerraformMachineTemplate{}, &TerraformMachineTemplateList{},
		&TerraformMachinePoolTemplate{}, &TerraformMachinePoolTemplateList{},
	)
}
