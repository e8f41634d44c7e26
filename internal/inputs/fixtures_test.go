package inputs

import (
	"encoding/json"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// The book's "trimmed real example" inputs (Job Inputs §2–4) as facts.

func bookCluster() *ClusterInputs {
	return &ClusterInputs{
		Common: Common{
			Cluster: ObjectRef{Name: "prod", Namespace: "team-a"},
			Object:  ObjectRef{Name: "prod", Namespace: "team-a"},
		},
		ControlPlaneEndpoint:    &contract.Endpoint{Host: "api.prod.example.com", Port: 6443},
		KubernetesVersion:       "v1.36.2",
		ControlPlaneInitialized: true,
		ClusterNetwork:          NewClusterNetwork([]string{"192.168.0.0/16"}, []string{"10.96.0.0/12"}, "cluster.local", 6443),
	}
}

// bookExports is a module-authored exports value carrying '<', '&' and '>'.
var bookExports = json.RawMessage(`{ "network_id": "net-1", "note": "a<b & c>d" }`)

// bookBootstrap is the payload whose base64 starts the book's trimmed
// bootstrap_data ("I2Nsb3VkLWNvbmZpZwpydW5jbWQ6...").
var bookBootstrap = []byte("#cloud-config\nruncmd:")

func bookMachine() *MachineInputs {
	return &MachineInputs{
		Common: Common{
			Cluster: ObjectRef{Name: "prod", Namespace: "team-a"},
			Object:  ObjectRef{Name: "prod-md-0-abcde", Namespace: "team-a"},
		},
		ClusterOutputs:    bookExports,
		MachineName:       "prod-md-0-abcde-xyz12",
		BootstrapData:     bookBootstrap,
		BootstrapFormat:   "cloud-config",
		KubernetesVersion: "v1.36.2",
		ControlPlane:      false,
	}
}

func bookPool() *MachinePoolInputs {
	return &MachinePoolInputs{
		Common: Common{
			Cluster: ObjectRef{Name: "prod", Namespace: "team-a"},
			Object:  ObjectRef{Name: "prod-pool-0", Namespace: "team-a"},
		},
		ClusterOutputs:        bookExports,
		MachinePoolName:       "prod-pool-0",
		Replicas:              3,
		BootstrapData:         bookBootstrap,
		KubernetesVersion:     "v1.36.2",
		ClusterFailureDomains: []string{"fd-a", "fd-b"},
	}
}

const bookImage = "ghcr.io/example/noop:v1.0.0"
