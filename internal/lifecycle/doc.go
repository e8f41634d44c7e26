// Package lifecycle is CAPTF's reconcile flow, written once for
// TerraformCluster, TerraformMachine and TerraformMachinePool (book: The
// Reconcile Lifecycle). Each kind plugs in through an Adapter: its role, its
// owner lookup, how it builds its inputs, what it does with its outputs, and
// what it does after the flow.
//
// One pass, in order (flow.go):
//
//	preamble      externally managed, owner lookup (an owner wait ends the
//	              pass unless the object is being deleted), finalizer, pause
//	credentials   identity, credential mirror, runner RBAC (not when paused)
//	bookkeeping   finished Jobs into status, digest pin, pruning, a Job that
//	              vanished while it ran
//	activeJob     a Job is running: delete it if stuck
//	readState     state, backups, adoption, outputs into status (no Job active)
//	buildInputs   the current inputs and their hash (no Job active)
//	decide        internal/decide picks the next operation, or the wait
//	act           leases, durable inputs, the move block, the Job; or cleanup
//	patchStatus   conditions computed once, one status patch, then Jobs
//	              marked bookkept and, after a completed deletion, the
//	              finalizer removed
//
// The patch helper takes its snapshot before any step runs. Steps never set
// a condition on the object: they record facts (conditions.go), and the
// status step computes every condition from them in one place. The only
// writes before the final status patch are the ones the book names: the
// clusterctl move block, and the objects the flow owns (Jobs, Secrets,
// Leases).
package lifecycle
