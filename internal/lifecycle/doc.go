// Package lifecycle is CAPTF's reconcile flow, written once for
// TerraformCluster, TerraformMachine and TerraformMachinePool (book: The
// Reconcile Lifecycle). Each kind plugs in through an Adapter: its role, its
// owner lookup, how it builds its inputs, what it does with its outputs, and
// what it does after the flow.
//
// One pass, in order (flow.go has one function per step):
//
//	preamble      externally managed, owner lookup, finalizer, pause
//	credentials   identity, credential mirror, runner RBAC
//	bookkeeping   finished Jobs into status, digest pin, pruning, lock check
//	activeJob     a Job is running: delete it if stuck, else wait
//	readState     state, backups, adoption, outputs into status
//	buildInputs   the current inputs and their hash
//	decide        internal/decide picks the next operation
//	act           leases, durable inputs, the move block, the Job; or cleanup
//	patchStatus   one status patch, Ready summarised, then Jobs marked bookkept
//
// The only writes before the final status patch are the ones the book names:
// the finalizer, the clusterctl move block, and the objects the flow owns
// (Jobs, Secrets, Leases).
package lifecycle
