package inputs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// Values of the captf.io/endpoint-source annotation.
const (
	EndpointSourceUser   = "user"
	EndpointSourceModule = "module"
)

// ControlPlaneEndpointInput returns the cluster role's control_plane_endpoint
// input (Cluster Role "control_plane_endpoint (input)"): always null when the
// endpoint source is module; otherwise Cluster.spec.controlPlaneEndpoint when
// it is valid, else a valid TerraformCluster.spec.controlPlaneEndpoint, else
// null.
func ControlPlaneEndpointInput(endpointSource string, clusterSpec, infraSpec *contract.Endpoint) *contract.Endpoint {
	switch {
	case endpointSource == EndpointSourceModule:
		return nil
	case clusterSpec.Valid():
		e := *clusterSpec
		return &e
	case infraSpec.Valid():
		e := *infraSpec
		return &e
	}
	return nil
}

// EndpointSourceBeforeApply returns the captf.io/endpoint-source value to
// hold before an apply starts: once written the value never changes; while
// none is recorded and this is the object's first apply, "user" when either
// endpoint field holds a valid endpoint; otherwise the annotation stays
// absent (""). The "module" value is recorded when the controller copies the
// module's output (contract.ShouldWriteEndpoint).
func EndpointSourceBeforeApply(current string, firstApply bool, clusterSpec, infraSpec *contract.Endpoint) string {
	if current != "" {
		return current
	}
	if firstApply && (clusterSpec.Valid() || infraSpec.Valid()) {
		return EndpointSourceUser
	}
	return ""
}

// ControlPlaneInitialized returns the latched control_plane_initialized
// input: true when Cluster.status.initialization.controlPlaneInitialized is
// true (nil is false) or the last rendered value in the durable inputs Secret
// was true. It is never rendered false after an apply with true.
func ControlPlaneInitialized(clusterField *bool, lastRendered bool) bool {
	return clusterField != nil && *clusterField || lastRendered
}

// LastControlPlaneInitialized reads control_plane_initialized from the
// terraform.tfvars.json of a durable inputs Secret. No data (no Secret yet)
// and a missing key read as false.
func LastControlPlaneInitialized(tfvars []byte) (bool, error) {
	if len(tfvars) == 0 {
		return false, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(tfvars, &doc); err != nil {
		return false, fmt.Errorf("durable terraform.tfvars.json is not a JSON object: %w", err)
	}
	raw, ok := doc[contract.InputControlPlaneInitialized]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("durable terraform.tfvars.json: %s is not a bool", contract.InputControlPlaneInitialized)
	}
	return b, nil
}

// ClusterNetwork is the cluster role's cluster_network input. Every
// attribute is always rendered: unset CIDR lists as [], an unset service
// domain or API server port as null.
type ClusterNetwork struct {
	// Pods is Cluster.spec.clusterNetwork.pods.cidrBlocks.
	Pods []string
	// Services is Cluster.spec.clusterNetwork.services.cidrBlocks.
	Services []string
	// ServiceDomain is Cluster.spec.clusterNetwork.serviceDomain ("" unset).
	ServiceDomain string
	// APIServerPort is Cluster.spec.clusterNetwork.apiServerPort (0 unset).
	APIServerPort int32
}

// NewClusterNetwork returns the cluster_network input for the fields of
// Cluster.spec.clusterNetwork, or nil (rendered null) when none is set.
func NewClusterNetwork(pods, services []string, serviceDomain string, apiServerPort int32) *ClusterNetwork {
	if len(pods) == 0 && len(services) == 0 && serviceDomain == "" && apiServerPort == 0 {
		return nil
	}
	return &ClusterNetwork{Pods: pods, Services: services, ServiceDomain: serviceDomain, APIServerPort: apiServerPort}
}

// DefaultBootstrapFormat is bootstrap_format when the bootstrap Secret has
// no format key.
const DefaultBootstrapFormat = "cloud-config"

// BootstrapFormat returns bootstrap_format from the bootstrap Secret's format
// key: its value, or cloud-config when absent or empty.
func BootstrapFormat(format []byte) string {
	if len(format) == 0 {
		return DefaultBootstrapFormat
	}
	return string(format)
}

// Autoscaling is the machinepool role's autoscaling input.
type Autoscaling struct {
	Enabled bool
	Min     int32
	Max     int32
}

// Autoscaler annotations on a MachinePool.
const (
	AutoscalerMinSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	AutoscalerMaxSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
)

// AutoscalingResult is the parsed autoscaling input and the reason of the
// pool's AutoscalingActive condition.
type AutoscalingResult struct {
	Autoscaling
	// Reason is ReplicasManagedByModule (enabled), AutoscalingDisabled (no
	// annotation) or AutoscalingAnnotationsInvalid.
	Reason string
	// Message explains an invalid pair, empty otherwise.
	Message string
}

// ParseAutoscaling reads the MachinePool's autoscaler min/max-size
// annotations (MachinePool Role "autoscaling (input)"): enabled with both
// values if and only if both are present, parse as non-negative integers and
// min <= max; otherwise {enabled=false, min=0, max=0}, with
// AutoscalingAnnotationsInvalid when an annotation is present but the pair is
// incomplete, unparsable or inverted.
func ParseAutoscaling(annotations map[string]string) AutoscalingResult {
	minS, hasMin := annotations[AutoscalerMinSizeAnnotation]
	maxS, hasMax := annotations[AutoscalerMaxSizeAnnotation]
	invalid := func(msg string) AutoscalingResult {
		return AutoscalingResult{Reason: contract.ReasonAutoscalingAnnotationsInvalid, Message: msg}
	}
	switch {
	case !hasMin && !hasMax:
		return AutoscalingResult{Reason: contract.ReasonAutoscalingDisabled}
	case !hasMin:
		return invalid("annotation " + AutoscalerMinSizeAnnotation + " is missing")
	case !hasMax:
		return invalid("annotation " + AutoscalerMaxSizeAnnotation + " is missing")
	}
	lo, err := parseSize(minS)
	if err != nil {
		return invalid("annotation " + AutoscalerMinSizeAnnotation + " " + err.Error())
	}
	hi, err := parseSize(maxS)
	if err != nil {
		return invalid("annotation " + AutoscalerMaxSizeAnnotation + " " + err.Error())
	}
	if lo > hi {
		return invalid(fmt.Sprintf("min-size %d is greater than max-size %d", lo, hi))
	}
	return AutoscalingResult{Autoscaling: Autoscaling{Enabled: true, Min: lo, Max: hi}, Reason: contract.ReasonReplicasManagedByModule}
}

var errNotSize = errors.New("is not a non-negative integer")

func parseSize(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, errNotSize
	}
	return int32(n), nil
}

// PoolReplicas returns the machinepool role's replicas input (MachinePool
// Role "replicas (input)"). Without autoscaling it is MachinePool.spec.replicas
// (nil defaults to 1, an explicit 0 stays 0). With autoscaling it is
// TerraformMachinePool.status.replicas once observed, else
// MachinePool.spec.replicas (nil: the minimum), clamped into [min, max].
func PoolReplicas(a Autoscaling, specReplicas, statusReplicas *int32) int32 {
	if !a.Enabled {
		if specReplicas == nil {
			return 1
		}
		return *specReplicas
	}
	r := a.Min
	switch {
	case statusReplicas != nil:
		r = *statusReplicas
	case specReplicas != nil:
		r = *specReplicas
	}
	return min(max(r, a.Min), a.Max)
}

// ExternallyManagedClusterOutputs returns captf_cluster_outputs for the
// machines and pools of a TerraformCluster carrying
// cluster.x-k8s.io/managed-by: {}, without reading any state.
func ExternallyManagedClusterOutputs() json.RawMessage { return json.RawMessage("{}") }

// ClusterFailureDomainNames returns the names of the cluster's failure_domains
// output, in the module's order, for a pool's cluster_failure_domains input.
func ClusterFailureDomainNames(fds []contract.FailureDomain) []string {
	names := make([]string, 0, len(fds))
	for _, fd := range fds {
		names = append(names, fd.Name)
	}
	return names
}

// CheckClusterOutputs reports whether an exports value can be rendered and
// hashed as captf_cluster_outputs (integer numbers only). A failing value
// keeps machines and pools at WaitingForClusterExports.
func CheckClusterOutputs(exports json.RawMessage) error {
	if len(exports) == 0 {
		return nil
	}
	if _, err := canonical.Canonicalize(exports); err != nil {
		return fmt.Errorf("cluster exports cannot be hashed: %w", err)
	}
	return nil
}

// Tag keys of captf_tags.
const (
	TagCluster   = "captf.io/cluster"
	TagNamespace = "captf.io/namespace"
	TagKind      = "captf.io/kind"
	TagName      = "captf.io/name"
	TagManagedBy = "captf.io/managed-by"
	TagTemplate  = "captf.io/template"
	// ManagedByValue is the value of captf.io/managed-by.
	ManagedByValue = "captf"
	// ClonedFromNameAnnotation names the template an object was cloned
	// from; its value is captf.io/template.
	ClonedFromNameAnnotation = "cluster.x-k8s.io/cloned-from-name"
)

// Tags returns captf_tags for an object of the role: the fixed keys, with
// captf.io/template from the object's cloned-from-name annotation ("" when
// absent).
func Tags(role contract.Role, c Common) map[string]string {
	return map[string]string{
		TagCluster:   c.Cluster.Name,
		TagNamespace: c.Object.Namespace,
		TagKind:      string(role.Kind()),
		TagName:      c.Object.Name,
		TagManagedBy: ManagedByValue,
		TagTemplate:  c.Template,
	}
}
