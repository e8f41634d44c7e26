package kit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

// Scenario is one situation the contract test puts a module in: the
// role's contract inputs as the manager would render them for it, and
// what the manager requires of the outputs afterwards.
type Scenario struct {
	// Name says what the scenario is, in the failures it reports.
	Name string
	// Run is the name of the scenario's run block in the harness.
	Run string
	// Inputs are the Kubernetes-side facts the inputs are rendered from.
	Inputs inputs.RoleInputs
	// check decodes the outputs with the manager's decoder for the role
	// and returns what breaks the contract.
	check func(raw contract.RawOutputs, undeclared []string) []Failure
}

// Failure is one way a module broke the contract in a scenario. It never
// holds an input or output value, only names, paths and rules.
type Failure struct {
	// Scenario is the scenario's name ("" for a failure of the whole run).
	Scenario string
	// Output is the contract output at fault, "" when none is.
	Output string
	// Message says what is wrong.
	Message string
}

func (f Failure) String() string {
	var b strings.Builder
	if f.Scenario != "" {
		fmt.Fprintf(&b, "scenario %q: ", f.Scenario)
	}
	if f.Output != "" {
		fmt.Fprintf(&b, "output %q: ", f.Output)
	}
	b.WriteString(f.Message)
	return b.String()
}

// Sample facts the scenarios render. They look like what a Cluster API
// Quick Start produces; none of them is a secret.
const (
	sampleCluster           = "demo"
	sampleNamespace         = "default"
	sampleKubernetesVersion = "v1.33.1"
	sampleFailureDomain     = "fd-1"
)

// SampleBootstrapData is the bootstrap Secret value the machine and pool
// scenarios pass (as base64, like the manager). The contract test keeps
// it out of everything it prints.
var SampleBootstrapData = []byte("#cloud-config\nruncmd:\n  - echo captf-contract-test\n")

// DefaultClusterOutputs is captf_cluster_outputs when the author gives no
// exports of their cluster module: an object with a string and an integer.
var DefaultClusterOutputs = json.RawMessage(`{"network_id":"network-demo","subnet_count":2}`)

func common(object string) inputs.Common {
	return inputs.Common{
		Cluster: inputs.ObjectRef{Name: sampleCluster, Namespace: sampleNamespace},
		Object:  inputs.ObjectRef{Name: object, Namespace: sampleNamespace},
	}
}

// Scenarios returns the role's scenarios. clusterOutputs is the
// captf_cluster_outputs of the machine and pool scenarios (nil:
// DefaultClusterOutputs).
func Scenarios(role contract.Role, clusterOutputs json.RawMessage) []Scenario {
	if clusterOutputs == nil {
		clusterOutputs = DefaultClusterOutputs
	}
	switch role {
	case contract.RoleCluster:
		network := inputs.NewClusterNetwork([]string{"192.168.0.0/16"}, []string{"10.128.0.0/12"}, "cluster.local", 6443)
		return []Scenario{
			{
				Name: "cluster with a module-created endpoint", Run: "cluster_module_endpoint",
				Inputs: &inputs.ClusterInputs{
					Common: common(sampleCluster), KubernetesVersion: sampleKubernetesVersion, ClusterNetwork: network,
				},
				check: checkCluster(true),
			},
			{
				Name: "cluster with an externally managed control-plane endpoint", Run: "cluster_external_endpoint",
				Inputs: &inputs.ClusterInputs{
					Common:               common(sampleCluster),
					ControlPlaneEndpoint: &contract.Endpoint{Host: "api.demo.example.com", Port: 6443},
					KubernetesVersion:    sampleKubernetesVersion, ControlPlaneInitialized: true, ClusterNetwork: network,
				},
				check: checkCluster(false),
			},
		}
	case contract.RoleMachine:
		return []Scenario{
			{
				Name: "machine with bootstrap data", Run: "machine_worker",
				Inputs: &inputs.MachineInputs{
					Common: common("demo-md-0-x7k2p"), ClusterOutputs: clusterOutputs, MachineName: "demo-md-0-x7k2p",
					BootstrapData: SampleBootstrapData, KubernetesVersion: sampleKubernetesVersion,
				},
				check: checkMachine(nil),
			},
			{
				Name: "control-plane machine with bootstrap data", Run: "machine_control_plane",
				Inputs: &inputs.MachineInputs{
					Common: common("demo-cp-q9v4d"), ClusterOutputs: clusterOutputs, MachineName: "demo-cp-q9v4d",
					BootstrapData: SampleBootstrapData, FailureDomain: sampleFailureDomain,
					KubernetesVersion: sampleKubernetesVersion, ControlPlane: true,
				},
				check: checkMachine(ptr(sampleFailureDomain)),
			},
		}
	case contract.RoleMachinePool:
		off := inputs.ParseAutoscaling(nil).Autoscaling
		on := inputs.ParseAutoscaling(map[string]string{
			inputs.AutoscalerMinSizeAnnotation: "1",
			inputs.AutoscalerMaxSizeAnnotation: "5",
		}).Autoscaling
		pool := func(a inputs.Autoscaling, spec int32) *inputs.MachinePoolInputs {
			return &inputs.MachinePoolInputs{
				Common: common("demo-mp-0"), ClusterOutputs: clusterOutputs, MachinePoolName: "demo-mp-0",
				Replicas: inputs.PoolReplicas(a, &spec, nil), BootstrapData: SampleBootstrapData,
				NodeLabels:     map[string]string{"node-role.kubernetes.io/worker": ""},
				FailureDomains: []string{sampleFailureDomain}, ClusterFailureDomains: []string{sampleFailureDomain, "fd-2"},
				KubernetesVersion: sampleKubernetesVersion, Autoscaling: a,
			}
		}
		return []Scenario{
			{Name: "pool with autoscaling off", Run: "pool_fixed", Inputs: pool(off, 3), check: checkPool},
			{Name: "pool with autoscaling on", Run: "pool_autoscaled", Inputs: pool(on, 2), check: checkPool},
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// verdictFailures turns the manager's verdict into failures, one per
// missing, invalid or pending output.
func verdictFailures(v contract.Verdict) []Failure {
	var fs []Failure
	for _, o := range v.Missing {
		fs = append(fs, Failure{Output: o, Message: "the module does not declare this contract output (" + contract.ReasonOutputsMissing + ")"})
	}
	for _, p := range v.Problems {
		fs = append(fs, Failure{Output: outputOf(p.Path), Message: p.String() + " (" + contract.ReasonOutputsInvalid + ")"})
	}
	for _, o := range v.Pending {
		fs = append(fs, Failure{Output: o, Message: "null after apply: the manager would wait for it forever (" + contract.ReasonOutputsPending + ")"})
	}
	return fs
}

// outputOf returns the output name a problem path starts with.
func outputOf(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

func checkCluster(moduleEndpoint bool) func(contract.RawOutputs, []string) []Failure {
	return func(raw contract.RawOutputs, undeclared []string) []Failure {
		out, v := contract.DecodeClusterOutputs(raw, contract.ClusterFacts{Undeclared: undeclared})
		fs := verdictFailures(v)
		if moduleEndpoint && !undeclaredOrInvalid(v, contract.OutputControlPlaneEndpoint) &&
			!contract.ShouldWriteEndpoint(out.ControlPlaneEndpoint, nil, true) {
			fs = append(fs, Failure{Output: contract.OutputControlPlaneEndpoint,
				Message: "null after apply although the control_plane_endpoint input was null: with no endpoint given, the module must create one and output it"})
		}
		return fs
	}
}

func undeclaredOrInvalid(v contract.Verdict, output string) bool {
	for _, p := range v.Problems {
		if outputOf(p.Path) == output {
			return true
		}
	}
	for _, m := range v.Missing {
		if m == output {
			return true
		}
	}
	return false
}

func checkMachine(requested *string) func(contract.RawOutputs, []string) []Failure {
	return func(raw contract.RawOutputs, undeclared []string) []Failure {
		_, v := contract.DecodeMachineOutputs(raw, contract.MachineFacts{RequestedFailureDomain: requested, Undeclared: undeclared})
		fs := verdictFailures(v)
		if v.FailureDomainMismatch {
			fs = append(fs, Failure{Output: contract.OutputFailureDomain,
				Message: fmt.Sprintf("differs from the failure_domain input %q: a machine must land in the failure domain it asked for (%s)", *requested, contract.ReasonFailureDomainMismatch)})
		}
		return fs
	}
}

func checkPool(raw contract.RawOutputs, undeclared []string) []Failure {
	_, v := contract.DecodeMachinePoolOutputs(raw, contract.MachinePoolFacts{Undeclared: undeclared})
	return verdictFailures(v)
}
