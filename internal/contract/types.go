package contract

import (
	"encoding/json"
	"unicode/utf8"
)

// Endpoint is a control-plane endpoint (Cluster API APIEndpoint): the
// cluster role's control_plane_endpoint input and output.
type Endpoint struct {
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Valid reports whether both host and port are set, as Cluster API's
// APIEndpoint.IsValid requires. A nil endpoint is not valid.
func (e *Endpoint) Valid() bool {
	return e != nil && e.Host != "" && e.Port != 0
}

// InBounds reports whether a valid endpoint also meets the contract's
// bounds: host 1–512 characters, port 1–65535.
func (e *Endpoint) InBounds() bool {
	return e.Valid() && utf8.RuneCountInString(e.Host) <= MaxEndpointHostLength && e.Port > 0 && e.Port <= MaxPort
}

// FailureDomain is one entry of the cluster role's failure_domains output,
// with the controller's default applied (ControlPlane true when unset).
type FailureDomain struct {
	Name         string
	ControlPlane bool
	Attributes   map[string]string
}

// Address is one machine address (Cluster API MachineAddress).
type Address struct {
	Type    string
	Address string
}

// Health is the common health output.
type Health struct {
	// State is one of HealthStates.
	State string
	// Healthy is the module's own verdict.
	Healthy bool
	// Message is surfaced in the InfrastructureHealthy condition message.
	Message *string
	// Reasons are machine-readable reasons (nil when unset).
	Reasons []string
}

// Instance is one entry of a pool's instances output, mapped field by field
// onto MachinePoolInstance.
type Instance struct {
	ProviderID    string
	InstanceID    string
	Addresses     []Address
	FailureDomain string
	State         string
}

// RawOutputs maps each root output name to its JSON value, as read from
// the state. OpenTofu and Terraform leave a root output whose value is null
// out of the state altogether, so an absent key reads as null, exactly like
// a present JSON null. That a module does not declare an output cannot be
// seen in the state: the runner leaves such an output out of the generated
// root and lists it in its result document, and the caller reports it
// through the facts' Undeclared list.
type RawOutputs map[string]json.RawMessage

// ClusterOutputs are the decoded outputs of the cluster role.
type ClusterOutputs struct {
	// ControlPlaneEndpoint is nil when the module leaves it null.
	ControlPlaneEndpoint *Endpoint
	// FailureDomains is nil for both null and []: both clear
	// status.failureDomains.
	FailureDomains []FailureDomain
	// Exports is the exports value's JSON exactly as the state reader
	// handed it over, nil while it is null. It is canonicalisable (integer
	// numbers only) whenever the verdict is not OutputsInvalid.
	Exports json.RawMessage
	// Health is nil while null.
	Health *Health
}

// MachineOutputs are the decoded outputs of the machine role.
type MachineOutputs struct {
	// ProviderID is nil while null or "".
	ProviderID *string
	// Addresses are in canonical order; nil while null, empty for [].
	Addresses []Address
	// FailureDomain is nil when null.
	FailureDomain *string
	// Interruptible is false when null.
	Interruptible bool
	// Health is nil while null.
	Health *Health
}

// MachinePoolOutputs are the decoded outputs of the machinepool role.
type MachinePoolOutputs struct {
	// ProviderID is the group id, nil when null or "".
	ProviderID *string
	// ProviderIDList is sorted and de-duplicated; nil while null, empty for
	// [].
	ProviderIDList []string
	// Replicas is nil while null; an explicit 0 is a pointer to 0.
	Replicas *int32
	// Instances are sorted by provider ID and capped at MaxInstances; nil
	// when null.
	Instances []Instance
	// InstancesTotal is the length of the instances output before the cap.
	InstancesTotal int
	// Health is nil while null.
	Health *Health
}
