package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Color is a paint color.
// +kubebuilder:validation:Enum=red;green
type Color string

const (
	// ColorRed is used for <danger>.
	ColorRed Color = "red"
	// ColorGreen means go.
	ColorGreen Color = "green"
)

// Shared holds fields every widget shares.
type Shared struct {
	// name of the widget, a DNS label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*)?$`
	Name string `json:"name"`
}

// WidgetSpec is what a widget should be. A rule with pipes: a || b.
// +kubebuilder:validation:XValidation:rule="self.size < 10 || self.color == 'red'",message="big widgets are red"
// +kubebuilder:validation:MinProperties=1
type WidgetSpec struct {
	Shared `json:",inline"`

	// color of the widget.
	// +optional
	// +kubebuilder:default=green
	Color Color `json:"color,omitempty"`

	// size in *inches*.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Size int32 `json:"size"`

	// tags are free text.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:items:MaxLength=20
	Tags []string `json:"tags,omitempty"`

	// labels by key.
	// +kubebuilder:validation:MaxProperties=8
	Labels map[string]string `json:"labels,omitempty"`

	// odd carries a marker docsgen does not know.
	// +optional
	// +kubebuilder:validation:XIntOrString
	Odd string `json:"odd,omitempty"`

	// Internal is not serialised.
	Internal string `json:"-"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=widgets,scope=Cluster,shortName={wd;wdg},categories=toys
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Color",type="string",JSONPath=".spec.color",description="Paint, \"as sold\""
// +kubebuilder:printcolumn:name="Size",type="integer",JSONPath=".spec.size",priority=1
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() < 20",message="name too long"

// Widget is a thing with a color.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired widget.
	Spec WidgetSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// Painter is Go plumbing, not part of the schema.
type Painter interface {
	Paint(c Color) error
}

// Unused is exported but no kind reaches it.
type Unused struct {
	// x is never served.
	X string `json:"x"`
}

type hidden struct{}
