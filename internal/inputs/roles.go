package inputs

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// ObjectRef names an object in a namespace.
type ObjectRef struct {
	Name      string
	Namespace string
}

// Common holds what every role's common inputs are built from.
type Common struct {
	// Cluster is the owning Cluster API Cluster (captf_cluster).
	Cluster ObjectRef
	// Object is the Terraform* object itself (captf_object; its kind comes
	// from the role).
	Object ObjectRef
	// Template is the object's cluster.x-k8s.io/cloned-from-name
	// annotation, "" when absent (captf_tags["captf.io/template"]).
	Template string
}

// RoleInputs is what Render renders: *ClusterInputs, *MachineInputs or
// *MachinePoolInputs.
type RoleInputs interface {
	// Role is the contract role the inputs are for.
	Role() contract.Role
	// values returns every contract input of the role, in declaration
	// order.
	values() []field
	// hashExcluded lists inputs left out of the inputs hash.
	hashExcluded() []string
}

// ClusterInputs are the Kubernetes-side facts of the cluster role's inputs.
type ClusterInputs struct {
	Common
	// ControlPlaneEndpoint is the control_plane_endpoint input, from
	// ControlPlaneEndpointInput; nil renders null.
	ControlPlaneEndpoint *contract.Endpoint
	// KubernetesVersion is Cluster.spec.topology.version; "" renders null.
	KubernetesVersion string
	// ControlPlaneInitialized is the latched value from
	// ControlPlaneInitialized.
	ControlPlaneInitialized bool
	// ClusterNetwork is from NewClusterNetwork; nil renders null.
	ClusterNetwork *ClusterNetwork
}

// MachineInputs are the Kubernetes-side facts of the machine role's inputs.
type MachineInputs struct {
	Common
	// ClusterOutputs is the cluster module's exports value as read from the
	// cluster state (ExternallyManagedClusterOutputs for an externally
	// managed cluster). Its bytes are kept as they are; nil renders null.
	ClusterOutputs json.RawMessage
	// MachineName is the owning Machine's name.
	MachineName string
	// BootstrapData is the raw value of the bootstrap Secret; it is always
	// rendered as standard, padded base64.
	BootstrapData []byte
	// BootstrapFormat is the bootstrap Secret's format key ("" renders
	// cloud-config).
	BootstrapFormat string
	// FailureDomain is Machine.spec.failureDomain; "" renders null.
	FailureDomain string
	// KubernetesVersion is Machine.spec.version; "" renders null.
	KubernetesVersion string
	// ControlPlane is true when the Machine carries the
	// cluster.x-k8s.io/control-plane label.
	ControlPlane bool
}

// MachinePoolInputs are the Kubernetes-side facts of the machinepool role's
// inputs.
type MachinePoolInputs struct {
	Common
	// ClusterOutputs is as for MachineInputs.
	ClusterOutputs json.RawMessage
	// MachinePoolName is the owning MachinePool's name.
	MachinePoolName string
	// Replicas is from PoolReplicas.
	Replicas int32
	// BootstrapData is the raw value of the bootstrap Secret, rendered as
	// base64.
	BootstrapData []byte
	// BootstrapFormat is the bootstrap Secret's format key ("" renders
	// cloud-config).
	BootstrapFormat string
	// NodeLabels is MachinePool.spec.template.metadata.labels; nil renders
	// {}.
	NodeLabels map[string]string
	// FailureDomains is MachinePool.spec.failureDomains; nil renders [].
	FailureDomains []string
	// ClusterFailureDomains is from ClusterFailureDomainNames; nil renders
	// [].
	ClusterFailureDomains []string
	// KubernetesVersion is MachinePool.spec.template.spec.version; ""
	// renders null.
	KubernetesVersion string
	// Autoscaling is from ParseAutoscaling.
	Autoscaling Autoscaling
}

// Role implements RoleInputs.
func (*ClusterInputs) Role() contract.Role { return contract.RoleCluster }

// Role implements RoleInputs.
func (*MachineInputs) Role() contract.Role { return contract.RoleMachine }

// Role implements RoleInputs.
func (*MachinePoolInputs) Role() contract.Role { return contract.RoleMachinePool }

func (in *ClusterInputs) hashExcluded() []string { return nil }
func (in *MachineInputs) hashExcluded() []string { return nil }

// hashExcluded leaves replicas out of the hash while autoscaling is enabled,
// so the autoscaler's own scaling never re-applies the pool.
func (in *MachinePoolInputs) hashExcluded() []string {
	if in.Autoscaling.Enabled {
		return []string{contract.InputReplicas}
	}
	return nil
}

func commonFields(role contract.Role, c Common, clusterOutputs *json.RawMessage) []field {
	f := []field{
		{contract.InputContract, contract.Version},
		{contract.InputCluster, object{{"name", c.Cluster.Name}, {"namespace", c.Cluster.Namespace}}},
		{contract.InputObject, object{{"kind", string(role.Kind())}, {"name", c.Object.Name}, {"namespace", c.Object.Namespace}}},
	}
	if clusterOutputs != nil {
		var v any
		if len(*clusterOutputs) > 0 {
			v = *clusterOutputs
		}
		f = append(f, field{contract.InputClusterOutputs, v})
	}
	return append(f, field{contract.InputTags, Tags(role, c)})
}

func (in *ClusterInputs) values() []field {
	f := commonFields(contract.RoleCluster, in.Common, nil)
	var ep any
	if in.ControlPlaneEndpoint != nil {
		ep = object{{"host", in.ControlPlaneEndpoint.Host}, {"port", in.ControlPlaneEndpoint.Port}}
	}
	var cn any
	if n := in.ClusterNetwork; n != nil {
		cn = object{
			{"pods", nonNil(n.Pods)},
			{"services", nonNil(n.Services)},
			{"service_domain", orNull(n.ServiceDomain)},
			{"api_server_port", portOrNull(n.APIServerPort)},
		}
	}
	return append(f,
		field{contract.InputControlPlaneEndpoint, ep},
		field{contract.InputKubernetesVersion, orNull(in.KubernetesVersion)},
		field{contract.InputControlPlaneInitialized, in.ControlPlaneInitialized},
		field{contract.InputClusterNetwork, cn},
	)
}

func (in *MachineInputs) values() []field {
	f := commonFields(contract.RoleMachine, in.Common, &in.ClusterOutputs)
	return append(f,
		field{contract.InputMachineName, in.MachineName},
		field{contract.InputBootstrapData, encodeBootstrap(in.BootstrapData)},
		field{contract.InputBootstrapFormat, BootstrapFormat([]byte(in.BootstrapFormat))},
		field{contract.InputFailureDomain, orNull(in.FailureDomain)},
		field{contract.InputKubernetesVersion, orNull(in.KubernetesVersion)},
		field{contract.InputControlPlane, in.ControlPlane},
	)
}

func (in *MachinePoolInputs) values() []field {
	f := commonFields(contract.RoleMachinePool, in.Common, &in.ClusterOutputs)
	labels := in.NodeLabels
	if labels == nil {
		labels = map[string]string{}
	}
	return append(f,
		field{contract.InputMachinePoolName, in.MachinePoolName},
		field{contract.InputReplicas, in.Replicas},
		field{contract.InputBootstrapData, encodeBootstrap(in.BootstrapData)},
		field{contract.InputBootstrapFormat, BootstrapFormat([]byte(in.BootstrapFormat))},
		field{contract.InputNodeLabels, labels},
		field{contract.InputFailureDomains, nonNil(in.FailureDomains)},
		field{contract.InputClusterFailureDomains, nonNil(in.ClusterFailureDomains)},
		field{contract.InputKubernetesVersion, orNull(in.KubernetesVersion)},
		field{contract.InputAutoscaling, object{
			{"enabled", in.Autoscaling.Enabled},
			{"min", in.Autoscaling.Min},
			{"max", in.Autoscaling.Max},
		}},
	)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func portOrNull(p int32) any {
	if p == 0 {
		return nil
	}
	return p
}

// encodeBootstrap returns the standard, padded base64 of the raw bootstrap
// bytes, built in place (bootstrap data runs to tens of KiB).
func encodeBootstrap(raw []byte) string {
	var sb strings.Builder
	sb.Grow(base64.StdEncoding.EncodedLen(len(raw)))
	w := base64.NewEncoder(base64.StdEncoding, &sb)
	_, _ = w.Write(raw) // a strings.Builder never fails
	_ = w.Close()
	return sb.String()
}
