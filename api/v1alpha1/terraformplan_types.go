package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TerraformPlanReason says why a person must look at a plan.
// +kubebuilder:validation:Enum=Manual;DestructivePlan;PlanChanged
type TerraformPlanReason string

const (
	// TerraformPlanManual: a plan Job's plan under applyPolicy Manual,
	// approved with captf.io/approve-plan=<planHash>.
	TerraformPlanManual TerraformPlanReason = "Manual"
	// TerraformPlanDestructive: an apply (or a drift remediation) stopped
	// before a plan that deletes or replaces a resource, approved with
	// captf.io/approve-destructive-plan=<inputsHash>.
	TerraformPlanDestructive TerraformPlanReason = "DestructivePlan"
	// TerraformPlanChanged: an approved apply whose plan differed from the
	// approved one; the new plan waits for captf.io/approve-plan.
	TerraformPlanChanged TerraformPlanReason = "PlanChanged"
)

// TerraformPlanPhase is where a recorded plan is in its life.
// +kubebuilder:validation:Enum=Pending;Approved;Applied;Superseded;Expired
type TerraformPlanPhase string

const (
	// TerraformPlanPending: the plan waits for its approval.
	TerraformPlanPending TerraformPlanPhase = "Pending"
	// TerraformPlanApproved: the target's approval annotation names this
	// plan; the apply runs or is about to.
	TerraformPlanApproved TerraformPlanPhase = "Approved"
	// TerraformPlanApplied: the approved apply succeeded.
	TerraformPlanApplied TerraformPlanPhase = "Applied"
	// TerraformPlanSuperseded: a newer plan of the same target was
	// recorded, or the inputs it was planned for were replaced.
	TerraformPlanSuperseded TerraformPlanPhase = "Superseded"
	// TerraformPlanExpired: the target no longer waits for it and no newer
	// plan replaced it (the target applied without it, or is deleting).
	TerraformPlanExpired TerraformPlanPhase = "Expired"
)

// Finished says a record is in a phase it never leaves; only finished
// records are pruned.
func (p TerraformPlanPhase) Finished() bool {
	return p == TerraformPlanApplied || p == TerraformPlanSuperseded || p == TerraformPlanExpired
}

// PlanPhaseLabel keeps a TerraformPlan's phase on its metadata, which
// clusterctl move carries (status is not moved).
const PlanPhaseLabel = "captf.io/plan-phase"

// Bounds of a TerraformPlan's change list.
const (
	// MaxPlanChangesBytes is the budget of spec.changes: addresses, paths
	// and values together.
	MaxPlanChangesBytes = 256 * 1024
	// MaxPlanValueBytes caps one before or after value.
	MaxPlanValueBytes = 1024
	// MaxPlanPathBytes caps one attribute path.
	MaxPlanPathBytes = 512
	// MaxPlanChanges caps the resource changes recorded.
	MaxPlanChanges = 2000
	// MaxPlanAttributes caps the attributes recorded per resource.
	MaxPlanAttributes = 1000
	// SensitiveValue replaces a sensitive value, as the runtime prints it.
	SensitiveValue = "(sensitive value)"
	// UnknownValue stands for a value known only after apply.
	UnknownValue = "(known after apply)"
)

// PlanTargetReference names the object a plan was computed for, in the
// record's namespace.
type PlanTargetReference struct {
	// kind of the object: TerraformCluster, TerraformMachine or
	// TerraformMachinePool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// uid of the object when the plan was recorded (clusterctl move gives
	// the object a new one; the record's owner reference follows it).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	UID string `json:"uid"`
}

// PlanCounts are a plan's counts.
type PlanCounts struct {
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
	// import is the number of resources to import.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Import int32 `json:"import,omitempty"`
	// move is the number of resources to move to a new address.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Move int32 `json:"move,omitempty"`
	// outputs is the number of root outputs that change.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Outputs int32 `json:"outputs,omitempty"`
}

// PlanAttributeChange is one attribute whose value the plan changes.
type PlanAttributeChange struct {
	// path of the attribute: names joined by dots, list indexes in
	// brackets (tags["team"], rule[0].port).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=600
	Path string `json:"path"`

	// before is the value before the change, as JSON; unset when the
	// attribute did not exist. A sensitive value reads "(sensitive value)".
	// +optional
	// +kubebuilder:validation:MaxLength=1100
	Before *string `json:"before,omitempty"`

	// after is the value after the change, as JSON; unset when the
	// attribute goes. A sensitive value reads "(sensitive value)", a value
	// known only after apply "(known after apply)".
	// +optional
	// +kubebuilder:validation:MaxLength=1100
	After *string `json:"after,omitempty"`

	// sensitive: the value is sensitive on either side and is masked.
	// +optional
	Sensitive bool `json:"sensitive,omitempty"`

	// unknown: the value after is known only after apply.
	// +optional
	Unknown bool `json:"unknown,omitempty"`

	// truncated: a value was longer than 1024 bytes and was cut.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// PlanResourceChange is one resource the plan changes.
type PlanResourceChange struct {
	// address of the resource instance.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=600
	Address string `json:"address"`

	// actions planned: create, update, delete, read, forget, then import
	// and move when the change imports or moves the resource.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=16
	Actions []string `json:"actions"`

	// label is the one word shown to people: create, update, delete,
	// replace, read, forget, import or move.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Label string `json:"label"`

	// attributes whose values change, sorted by path.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Attributes []PlanAttributeChange `json:"attributes,omitempty"`

	// omittedAttributes is the number of changed attributes left out to
	// stay within the record's bounds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedAttributes int32 `json:"omittedAttributes,omitempty"`
}

// PlanOmitted says what of a plan the record leaves out.
type PlanOmitted struct {
	// resources is the number of changed resources left out.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Resources int32 `json:"resources,omitempty"`

	// attributes is the number of changed attributes left out, over the
	// recorded resources.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attributes int32 `json:"attributes,omitempty"`
}

// TerraformPlanSpec is the plan as the manager recorded it. The manager
// writes it once; nobody edits it.
type TerraformPlanSpec struct {
	// targetRef is the object the plan was computed for.
	// +required
	TargetRef PlanTargetReference `json:"targetRef"`

	// job that computed the plan.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Job string `json:"job"`

	// inputsHash the plan was computed for; captf.io/approve-destructive-plan
	// approves a DestructivePlan record with it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	InputsHash string `json:"inputsHash"`

	// planHash of the plan; captf.io/approve-plan approves a Manual or
	// PlanChanged record with it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	PlanHash string `json:"planHash"`

	// reason a person must look at the plan.
	// +required
	Reason TerraformPlanReason `json:"reason"`

	// recordedAt is when the manager recorded the plan, to the microsecond:
	// of two records of one object, the later one is the newer plan.
	// +optional
	RecordedAt *metav1.MicroTime `json:"recordedAt,omitempty"`

	// runtimeVersion of the runtime that computed the plan.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RuntimeVersion string `json:"runtimeVersion,omitempty"`

	// counts of the plan.
	// +optional
	Counts PlanCounts `json:"counts,omitempty,omitzero"`

	// changes are the resources the plan changes, sorted by address, with
	// their attribute-level before and after values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2000
	Changes []PlanResourceChange `json:"changes,omitempty"`

	// omitted says what the record leaves out to stay within its bounds.
	// +optional
	Omitted *PlanOmitted `json:"omitted,omitempty"`

	// note says why the changes are missing or incomplete, when they are.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Note string `json:"note,omitempty"`
}

// TerraformPlanStatus is where the plan is in its life.
type TerraformPlanStatus struct {
	// phase of the plan, also kept in the captf.io/plan-phase label.
	// +optional
	Phase TerraformPlanPhase `json:"phase,omitempty"`

	// phaseTime is when the plan entered its phase.
	// +optional
	PhaseTime *metav1.Time `json:"phaseTime,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=terraformplans,scope=Namespaced,categories=cluster-api;captf,shortName=tfplan
// +kubebuilder:printcolumn:name="Target",type="string",JSONPath=".spec.targetRef.name",description="Object the plan is for"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".spec.reason",description="Why the plan needs a person"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase",description="Phase of the plan"
// +kubebuilder:printcolumn:name="Add",type="integer",JSONPath=".spec.counts.add",description="Resources to create"
// +kubebuilder:printcolumn:name="Change",type="integer",JSONPath=".spec.counts.change",description="Resources to update"
// +kubebuilder:printcolumn:name="Destroy",type="integer",JSONPath=".spec.counts.destroy",description="Resources to delete"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TerraformPlan is the record of a plan a person must review: what it
// changes, attribute by attribute, with sensitive values masked. The
// manager writes it; approving stays an annotation on the target. It has
// no status subresource: the phase and its label change in one write.
type TerraformPlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the plan as recorded.
	// +required
	Spec TerraformPlanSpec `json:"spec"`

	// status is where the plan is in its life.
	// +optional
	Status TerraformPlanStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TerraformPlanList is a list of TerraformPlans.
type TerraformPlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TerraformPlan `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &TerraformPlan{}, &TerraformPlanList{})
}
