// Package terraformmachinepool reconciles TerraformMachinePools: the
// machinepool role of a module, run through the shared flow of
// internal/lifecycle. The adapter adds what only a pool does: the
// MachinePool owner, replicas (fixed or autoscaled) and the member list,
// inputs rebuilt for the pool's whole life, and the replica write-back.
package terraformmachinepool
