// Package lifecycle is CAPTF's reconcile flow, written once for
// TerraformCluster, TerraformMachine and TerraformMachinePool (book: The
// Reconcile Lifecycle). Each kind plugs in through an Adapter: its role, its
// owner lookup, how it builds its inputs, what it does with its outputs, and
// what it does after the flow.
//
// One pass, in order (flow.go runs the steps: Reconcile the preamble and
// patchStatus, passSteps those between; each has its own file). Reconcile
// leaves an object with Cluster API's externally-managed annotation before
// any step runs. An unpaused pass:
//
//	preamble        preamble.go: owner lookup, the pause read (from the
//	                first pass on), then an owner wait ends the pass unless
//	                the object is being deleted; the finalizer (adding it
//	                ends the pass)
//	credentials     credentials.go: identity, credential mirror, runner RBAC
//	resolvePolicy   bookkeeping.go: the effective Job policy and whether it
//	                is valid
//	bookkeeping     bookkeeping.go: finished Jobs into status and facts,
//	                digest pin, pruning, a Job that vanished while it ran
//	activeJob       activejob.go: a Job is running: hand it its per-run
//	                Secret, delete it if stuck
//	clearMoveBlock  activejob.go: clusterctl's block-move annotation removed
//	                once no Job is active (written by the status step's
//	                metadata patch)
//	readState       readstate.go: state, backups, adoption, outputs into
//	                status (no Job active)
//	buildInputs     inputs.go: the current inputs and their hash (no Job
//	                active)
//	decide          decide.go: internal/decide picks the next operation, or
//	                the wait
//	planRecords     planrecords.go: the phases of the object's TerraformPlan
//	                records (written by bookkeeping), finished ones pruned
//	act             act.go: the run assembled, leases, durable inputs, the
//	                move block, the per-run Secret and the Job (one rollback
//	                path); or cleanup; or the wait recorded
//	after           flow.go: the kind's own steps (Adapter.After: a
//	                machine's remediation annotation, a pool's replica
//	                write-back), not while a Job is active
//	patchStatus     status.go: compute (every condition from the facts,
//	                conditions_set.go; the per-object gauges), write (one
//	                status patch), after-write (events and counters, Jobs
//	                marked bookkept, after a completed deletion the
//	                finalizer removed)
//
// A paused pass runs preamble, then resolvePolicy, bookkeeping,
// pausedBranch (preamble.go: delete a Job that can never start; once no
// Job is active, adopt the state of an apply that finished while paused,
// then clearMoveBlock), decide (which waits on the pause), planRecords and act, then
// patchStatus: no credentials, no state read for the decision, no inputs,
// no after.
//
// The pass takes its snapshot (with the patch helper) before any step runs;
// its writes go out as one merge patch of the status and at most one of
// metadata and spec, each locked to the version it builds on, and through
// the patch helper only after a conflict (onepatch.go). Steps never set
// a condition on the object: they record typed facts (facts.go), and the
// status step sets every condition from them in one place, one setter per
// condition (conditions_set.go), whose order of precedence between facts
// is written in the setter. The operation → condition mapping (which
// condition an operation's Job, lease waits and refusals report on, and
// its reasons) is internal/jobs' operation table. The only writes before
// the final status patch are the ones the book names: the clusterctl move
// block, and the objects the flow owns (Jobs, Secrets, Leases).
package lifecycle
