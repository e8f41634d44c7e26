package terraformmachine

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// writeOutputs reports whether the decoded outputs may be written to the
// TerraformMachine: not when the verdict is False (Contract - Machine Role,
// "addresses": "a violation is OutputsValid=False/OutputsInvalid, and
// nothing is written"; the same holds for a missing output, a changed
// provider ID and a failure-domain mismatch). Pending outputs write what is
// known.
func writeOutputs(v contract.Verdict) bool { return v.Status != contract.StatusFalse }

// statusAddresses maps the decoded addresses output to status.addresses:
// absent (nil) while the output is null, an empty list for [] (Module
// Contract, "Null semantics": addresses = [] means provisioned with no
// addresses). The API field keeps the difference (omitzero), and Cluster
// API copies a present list, [] included, to Machine.status.addresses.
func statusAddresses(out []contract.Address) clusterv1.MachineAddresses {
	if out == nil {
		return nil
	}
	addrs := make(clusterv1.MachineAddresses, 0, len(out))
	for _, ad := range out {
		addrs = append(addrs, clusterv1.MachineAddress{Type: clusterv1.MachineAddressType(ad.Type), Address: ad.Address})
	}
	return addrs
}
