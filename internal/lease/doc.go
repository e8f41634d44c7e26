// Package lease owns CAPTF's coordination.k8s.io/v1 Leases: the per-object
// run lease and the per-Cluster write lease of the cluster operation gate
// (book: The Reconcile Lifecycle, "Run leases and the cluster operation
// gate"; reference-facts §9).
//
// # Run lease
//
// captf-run-<suffix> (suffix = the object's state suffix) is taken before a
// Job is created, with holderIdentity set to the Job's name, so two
// managers, or two reconciles racing after a crash, can never start two
// Jobs of one object. Every write is a create or a resourceVersion-checked
// update, so of two acquirers exactly one wins; the loser reads the winner
// and waits (WaitingForRunLease). A round that ends in a write may decide
// from the manager's cache (Leases.Hint): a stale copy only costs a refused
// write and a live round; a round that decides without writing reads live. Re-acquiring for the same Job name
// succeeds (the name is deterministic, and creating the Job twice fails on
// its name), and renews the lease at most every RenewInterval. The lease is
// given back (holderIdentity cleared) when the finished Job's per-run Secret
// is deleted, and deleted at the object's cleanup.
//
// A lease held by another Job is taken over only when that holder is gone
// for good:
//
//   - its Job has finished (a Complete or Failed condition);
//   - its Job does not exist, no pod of it is still running, and the lease
//     was last renewed more than MissingHolderGrace (2 min) ago — the grace
//     covers the moment between taking the lease and creating the Job, and
//     a manager restarting in between;
//   - its Job started more than activeDeadlineSeconds + DeadlineBackstop
//     (15 min) ago and still has not finished — the backstop covers the
//     pod's 600 s termination grace after the deadline's SIGTERM plus five
//     minutes for the Job controller to mark the Job failed, so only a Job
//     nothing is finishing any more is passed over.
//
// # Cluster write lease and the operation gate
//
// With --cluster-operation-gate, an apply, destroy or restore crosses a
// second gate (refresh, drift and plan do not):
//
//   - a TerraformCluster takes captf-cluster-<hash> (hash = the first 16 hex
//     characters of sha256("<namespace>/<cluster name>")) after its run
//     lease, then looks for in-flight machine operations: run leases of the
//     cluster's TerraformMachines and TerraformMachinePools, found by their
//     cluster-name label, whose live holder runs an apply, destroy or
//     restore. If there are any it keeps both leases and waits
//     (WaitingForMachineOperations), so new machine operations queue
//     behind it;
//   - a TerraformMachine or TerraformMachinePool, once it holds its run
//     lease, checks the cluster lease: while a live holder has it, the
//     member gives its run lease back and waits
//     (WaitingForClusterOperation).
//
// Each side writes its own lease before it reads the other's, so at least
// one of two concurrent entrants sees the other: the gate never lets a
// cluster operation and a machine operation start together. Reads that
// decide go to the API server (a client.Reader such as the manager's
// APIReader), never a cache that could be behind.
//
// A TerraformCluster that keeps both leases while it waits renews them on
// each pass (every 30 s), so its not-yet-created Job is not mistaken for a
// missing one. Should the object decide another Job meanwhile, that Job
// waits up to MissingHolderGrace for the old hold to lapse, unless the
// caller gives the old hold back with Leave.
//
// The "may I" decisions are pure functions (Assess, Gated, MemberMayStart,
// ClusterMayStart); Leases carries out the API calls around them.
package lease
