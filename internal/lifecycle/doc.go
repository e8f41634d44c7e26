// Package lifecycle is CAPTF's reconcile flow, written once for
// TerraformCluster, TerraformMachine and TerraformMachinePool (book: The
// Reconcile Lifecycle). Each kind plugs in through an Adapter: its role, its
// owner lookup, how it builds its inputs, what it does with its outputs, and
// what it does after the flow.
//
// One pass, in order (flow.go runs the steps; each has its own file):
//
//	preamble      preamble.go: externally managed, owner lookup (an owner
//	              wait ends the pass unless the object is being deleted),
//	              finalizer, pause; a paused pass runs bookkeeping, adopts
//	              the state of an apply that finished while paused and
//	              clears the move block (the paused branch), then decide
//	credentials   credentials.go: identity, credential mirror, runner RBAC
//	              (not when paused)
//	bookkeeping   bookkeeping.go: finished Jobs into status, digest pin,
//	              pruning, a Job that vanished while it ran
//	activeJob     activejob.go: a Job is running: delete it if stuck
//	readState     readstate.go: state, backups, adoption, outputs into
//	              status (no Job active)
//	buildInputs   inputs.go: the current inputs and their hash (no Job
//	              active)
//	decide        decide.go: internal/decide picks the next operation, or
//	              the wait
//	act           act.go: leases, durable inputs, the move block, the Job;
//	              or cleanup
//	patchStatus   status.go: conditions computed once (conditions.go), one
//	              status patch, then Jobs marked bookkept and, after a
//	              completed deletion, the finalizer removed
//
// The pass takes its snapshot (with the patch helper) before any step runs;
// its writes go out as one merge patch of the status and at most one of
// metadata and spec, each locked to the version it builds on, and through
// the patch helper only after a conflict (onepatch.go). Steps never set
// a condition on the object: they record facts (conditions.go), and the
// status step computes every condition from them in one place. The only
// writes before the final status patch are the ones the book names: the
// clusterctl move block, and the objects the flow owns (Jobs, Secrets,
// Leases).
package lifecycle
