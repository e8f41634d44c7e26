package terraformmachinepool

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// instanceAddresses maps an instance's decoded addresses to
// status.instances[].addresses: absent for null, an empty list for [], as
// for a machine (Module Contract, "Null semantics": empty collections are
// distinct from null).
func instanceAddresses(in []contract.Address) clusterv1.MachineAddresses {
	if in == nil {
		return nil
	}
	out := make(clusterv1.MachineAddresses, len(in))
	for i, ad := range in {
		out[i] = clusterv1.MachineAddress{Type: clusterv1.MachineAddressType(ad.Type), Address: ad.Address}
	}
	return out
}
