package contract

import (
	"fmt"
	"slices"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Version is the module contract version this controller generates roots
// against; every role receives it as captf_contract.
const Version = "v1alpha1"

// Role is the part of the contract a module implements.
type Role string

// The three roles of v1alpha1.
const (
	RoleCluster     Role = "cluster"
	RoleMachine     Role = "machine"
	RoleMachinePool Role = "machinepool"
)

// Roles lists every role in a fixed order.
func Roles() []Role { return []Role{RoleCluster, RoleMachine, RoleMachinePool} }

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if _, ok := roleInputs[r]; !ok {
		return "", fmt.Errorf("unknown role %q: want cluster, machine or machinepool", s)
	}
	return r, nil
}

// Kind returns the Terraform* kind whose objects run the role.
func (r Role) Kind() v1alpha1.WorkloadKind {
	switch r {
	case RoleCluster:
		return v1alpha1.KindTerraformCluster
	case RoleMachine:
		return v1alpha1.KindTerraformMachine
	case RoleMachinePool:
		return v1alpha1.KindTerraformMachinePool
	}
	return ""
}

// Input is one contract input of a role.
type Input struct {
	// Name is the Terraform variable name, identical in the generated root
	// and in the module.
	Name string
	// Type is the Terraform type constraint the contract gives the input.
	Type string
	// Nullable is true when the controller may render null: the generated
	// root then declares the variable with "default": null and the module
	// declares it with default = null.
	Nullable bool
	// Sensitive marks the root variable sensitive = true (bootstrap_data).
	Sensitive bool
	// Required is true when a module must declare the variable. Every
	// v1alpha1 input is required.
	Required bool
}

// Contract input names.
const (
	InputContract                = "captf_contract"
	InputCluster                 = "captf_cluster"
	InputObject                  = "captf_object"
	InputClusterOutputs          = "captf_cluster_outputs"
	InputTags                    = "captf_tags"
	InputControlPlaneEndpoint    = "control_plane_endpoint"
	InputKubernetesVersion       = "kubernetes_version"
	InputControlPlaneInitialized = "control_plane_initialized"
	InputClusterNetwork          = "cluster_network"
	InputMachineName             = "machine_name"
	InputBootstrapData           = "bootstrap_data"
	InputBootstrapFormat         = "bootstrap_format"
	InputFailureDomain           = "failure_domain"
	InputControlPlane            = "control_plane"
	InputMachinePoolName         = "machinepool_name"
	InputReplicas                = "replicas"
	InputNodeLabels              = "node_labels"
	InputFailureDomains          = "failure_domains"
	InputClusterFailureDomains   = "cluster_failure_domains"
	InputAutoscaling             = "autoscaling"
)

// Terraform type constraints of the inputs, as the role skeletons write them.
const (
	TypeClusterRef     = "object({ name = string, namespace = string })"
	TypeObjectRef      = "object({ kind = string, name = string, namespace = string })"
	TypeEndpoint       = "object({ host = string, port = number })"
	TypeClusterNetwork = "object({ pods = list(string), services = list(string), service_domain = string, api_server_port = number })"
	TypeAutoscaling    = "object({ enabled = bool, min = number, max = number })"
)

func in(name, typ string) Input { return Input{Name: name, Type: typ, Required: true} }

func nullable(name, typ string) Input {
	return Input{Name: name, Type: typ, Nullable: true, Required: true}
}

func sensitive(name, typ string) Input {
	return Input{Name: name, Type: typ, Sensitive: true, Required: true}
}

var (
	inContract       = in(InputContract, "string")
	inCluster        = in(InputCluster, TypeClusterRef)
	inObject         = in(InputObject, TypeObjectRef)
	inClusterOutputs = nullable(InputClusterOutputs, "any")
	inTags           = in(InputTags, "map(string)")
)

// roleInputs lists each role's inputs in the order the generated root
// declares them and terraform.tfvars.json carries them: the common inputs,
// then the role's own, as in the role skeletons. The cluster role has no
// captf_cluster_outputs at all (Contract - Common "captf_cluster_outputs").
var roleInputs = map[Role][]Input{
	RoleCluster: {
		inContract, inCluster, inObject, inTags,
		nullable(InputControlPlaneEndpoint, TypeEndpoint),
		nullable(InputKubernetesVersion, "string"),
		in(InputControlPlaneInitialized, "bool"),
		nullable(InputClusterNetwork, TypeClusterNetwork),
	},
	RoleMachine: {
		inContract, inCluster, inObject, inClusterOutputs, inTags,
		in(InputMachineName, "string"),
		sensitive(InputBootstrapData, "string"),
		in(InputBootstrapFormat, "string"),
		nullable(InputFailureDomain, "string"),
		nullable(InputKubernetesVersion, "string"),
		in(InputControlPlane, "bool"),
	},
	RoleMachinePool: {
		inContract, inCluster, inObject, inClusterOutputs, inTags,
		in(InputMachinePoolName, "string"),
		in(InputReplicas, "number"),
		sensitive(InputBootstrapData, "string"),
		in(InputBootstrapFormat, "string"),
		in(InputNodeLabels, "map(string)"),
		in(InputFailureDomains, "list(string)"),
		in(InputClusterFailureDomains, "list(string)"),
		nullable(InputKubernetesVersion, "string"),
		in(InputAutoscaling, TypeAutoscaling),
	},
}

// Inputs returns the role's contract inputs in declaration order (a copy).
func (r Role) Inputs() []Input { return slices.Clone(roleInputs[r]) }

// InputNames returns the names of the role's contract inputs in
// declaration order.
func (r Role) InputNames() []string {
	names := make([]string, 0, len(roleInputs[r]))
	for _, i := range roleInputs[r] {
		names = append(names, i.Name)
	}
	return names
}

// Input returns the role's contract input called name.
func (r Role) Input(name string) (Input, bool) {
	for _, i := range roleInputs[r] {
		if i.Name == name {
			return i, true
		}
	}
	return Input{}, false
}

// IsInput reports whether name is one of the role's contract inputs.
func (r Role) IsInput(name string) bool {
	_, ok := r.Input(name)
	return ok
}

// NullMeaning says what a null value of a contract output means to the
// controller.
type NullMeaning int

const (
	// NullPending: not yet known; the controller keeps waiting
	// (OutputsValid=Unknown/OutputsPending).
	NullPending NullMeaning = iota
	// NullAllowed: null is a final value (the output is optional, or the
	// role gives null its own meaning).
	NullAllowed
)

// Output is one contract output of a role. Every contract output must be
// declared by the module: the generated root re-exports each declared one,
// marked sensitive, and the runner reports an undeclared one, which is
// OutputsValid=False/OutputsMissing.
type Output struct {
	// Name is the output name, identical in the module and the root.
	Name string
	// Null says what a null value means.
	Null NullMeaning
	// Shape describes the value the controller decodes.
	Shape string
}

// Contract output names.
const (
	OutputHealth               = "health"
	OutputControlPlaneEndpoint = "control_plane_endpoint"
	OutputFailureDomains       = "failure_domains"
	OutputExports              = "exports"
	OutputProviderID           = "provider_id"
	OutputAddresses            = "addresses"
	OutputFailureDomain        = "failure_domain"
	OutputInterruptible        = "interruptible"
	OutputProviderIDList       = "provider_id_list"
	OutputReplicas             = "replicas"
	OutputInstances            = "instances"
)

const shapeHealth = "{ state = pending|running|degraded|stopped|terminated|unknown, healthy = bool, message = optional(string), reasons = optional(list(string)) }"

const shapeAddresses = "list({ type = InternalIP|InternalDNS|ExternalIP|ExternalDNS|Hostname, address = string 1-256 }), at most 256"

var roleOutputs = map[Role][]Output{
	RoleCluster: {
		// May stay null for the life of the object when CAPI or the user
		// supplies the endpoint (Cluster Role "control_plane_endpoint").
		{Name: OutputControlPlaneEndpoint, Null: NullAllowed, Shape: "{ host = string 1-512, port = number 1-65535 }, both set or neither"},
		// null and [] both clear status.failureDomains.
		{Name: OutputFailureDomains, Null: NullAllowed, Shape: "list({ name = string 1-256, control_plane = optional(bool, true), attributes = optional(map(string)) }), unique names, at most 100"},
		{Name: OutputExports, Null: NullPending, Shape: "any value with integer numbers only"},
		{Name: OutputHealth, Null: NullPending, Shape: shapeHealth},
	},
	RoleMachine: {
		{Name: OutputProviderID, Null: NullPending, Shape: "string 1-512 (\"\" is null)"},
		{Name: OutputAddresses, Null: NullPending, Shape: shapeAddresses},
		{Name: OutputFailureDomain, Null: NullAllowed, Shape: "string 1-256, equal to the failure_domain input when one was requested"},
		// null is written as false.
		{Name: OutputInterruptible, Null: NullAllowed, Shape: "bool"},
		{Name: OutputHealth, Null: NullPending, Shape: shapeHealth},
	},
	RoleMachinePool: {
		{Name: OutputProviderID, Null: NullAllowed, Shape: "string 1-512 (\"\" is null), the group id"},
		{Name: OutputProviderIDList, Null: NullPending, Shape: "list(string 1-512), at most 10000 after de-duplication"},
		{Name: OutputReplicas, Null: NullPending, Shape: "number, integer 0-2147483647"},
		{Name: OutputInstances, Null: NullAllowed, Shape: "list({ provider_id = string 1-512, instance_id = optional(string), addresses = optional(list(address)), failure_domain = optional(string 1-256), state = optional(health state) }), capped at 1000"},
		{Name: OutputHealth, Null: NullPending, Shape: shapeHealth},
	},
}

// Outputs returns the role's contract outputs (a copy), in the order the
// generated root re-exports them.
func (r Role) Outputs() []Output { return slices.Clone(roleOutputs[r]) }

// OutputNames returns the names of the role's contract outputs.
func (r Role) OutputNames() []string {
	names := make([]string, 0, len(roleOutputs[r]))
	for _, o := range roleOutputs[r] {
		names = append(names, o.Name)
	}
	return names
}

// Limits from the Cluster API v1.14.2 markers and the contract.
const (
	MaxProviderIDLength        = 512
	MaxEndpointHostLength      = 512
	MaxFailureDomainNameLength = 256
	MaxFailureDomains          = 100
	MaxAddresses               = 256
	MaxAddressLength           = 256
	MaxProviderIDList          = 10000
	MaxInstances               = 1000
	MaxInstanceIDLength        = 256
	MaxPort                    = 65535
)

// Health states (closed enum, Contract - Common "Outputs").
const (
	HealthPending    = "pending"
	HealthRunning    = "running"
	HealthDegraded   = "degraded"
	HealthStopped    = "stopped"
	HealthTerminated = "terminated"
	HealthUnknown    = "unknown"
)

// HealthStates lists the health.state enum.
func HealthStates() []string {
	return []string{HealthPending, HealthRunning, HealthDegraded, HealthStopped, HealthTerminated, HealthUnknown}
}

// Address types (Cluster API MachineAddressType), in the canonical order
// the controller sorts addresses by.
const (
	AddressInternalIP  = "InternalIP"
	AddressInternalDNS = "InternalDNS"
	AddressExternalIP  = "ExternalIP"
	AddressExternalDNS = "ExternalDNS"
	AddressHostname    = "Hostname"
)

// AddressTypes lists the address types in canonical order.
func AddressTypes() []string {
	return []string{AddressInternalIP, AddressInternalDNS, AddressExternalIP, AddressExternalDNS, AddressHostname}
}
