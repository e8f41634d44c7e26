// Package terraformmachine reconciles TerraformMachines: the machine role
// of a module, run through the shared flow of internal/lifecycle. The
// adapter adds what only a machine does: the Machine owner and the Cluster
// behind it, the gates on the cluster's infrastructure, exports and the
// bootstrap data, inputs rendered only until provisioned, the provider ID,
// addresses and failure domain, and the remediate-machine annotation.
package terraformmachine
