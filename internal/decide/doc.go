// Package decide is CAPTF's decision core: which operation a
// TerraformCluster, TerraformMachine or TerraformMachinePool runs next, why,
// and when to look again. It owns the retry backoff, the refresh, membership
// and drift schedule with its UID jitter, the mapping of module health to
// InfrastructureHealthy, unhealthy-sample and pending-refresh counting, the
// provisioned latch, Job names and history pruning.
//
// Everything here is pure: the input is an Observation of plain facts that
// the reconcile flow (internal/lifecycle) gathers from the object, its
// retained Jobs, its state and its durable inputs Secret; the output is a
// Decision carrying the operation, the reason, the requeue delay and, for an
// operation that runs a Job, everything needed to create it (name, attempt,
// inputs, guard and approval flags). Nothing imports client-go or
// controller-runtime, so every rule is checked with tables alone.
//
// # The order of the rules
//
// Decide stops at the first rule that matches. Its rules carry the book's
// numbers (The Reconcile Lifecycle, "Choosing the next operation"): the
// order of the operations, then the schedule. Before the order come the
// waits that hold every operation:
//
//   - The Job cache is behind the API server: requeue after 5 s.
//   - A Job is active: wait for it, requeue after 1 min (the Job watch wakes
//     the reconcile sooner).
//   - Paused: start nothing.
//   - Deleting with no state and nothing ever applied: drop the finalizer.
//     Deleting with lost state and captf.io/abandon-infrastructure naming the
//     UID (and no restore requested): drop the finalizer.
//   - An owner not ready (ignored while deleting), then credentials not
//     ready: requeue after 30 s.
//
// The order:
//
//  1. A requested restore: the one captf.io/restore-state names, unless
//     deleting (a deleting object whose state is lost restores first, then
//     destroys). A backup that does not exist, or a serial whose restore
//     already failed, holds the object for 10 min (an annotation change
//     wakes it).
//  2. Being deleted: wait while the state is lost, while a kind with members
//     (a cluster) still has machines or pools, or while the durable inputs
//     are missing; else destroy.
//
// Between 2 and 3, lost or unreadable state requeues after 1 min. Then a
// module known to lack contract outputs: when the newest Job that checked
// the module's outputs ran the inputs the next Job would run (the image is
// one of them) and found some undeclared, no apply, plan, refresh or drift
// starts; re-checked every 10 min, and a change wakes the reconcile sooner
// (Module Contract, "Null semantics").
//
//  3. No state yet: apply (the first apply).
//  4. State without an inputs hash: apply.
//  5. A mutable kind's changed inputs: apply.
//  6. A mutable kind's failed newest apply (drift remediations passed
//     over): apply again. An apply Job deleted while it ran (cluster, pool)
//     sits with it.
//  7. Drift found with action Remediate, below the remediation cap: apply.
//
// Every apply but the first is gated for a kind that guards its applies (a
// TerraformCluster): under applyPolicy Manual by a plan Job and its
// approval, otherwise by the destructive-plan guard (a blocked hash is not
// re-applied until approved or changed, re-checked every 10 min).
//
// The schedule, when no apply reason matched, stopping at the first one due:
//
//  1. The post-apply refresh: a kind refreshed after an apply (machine,
//     pool), unless the apply's own reading was definite.
//  2. Membership converging: a pool's membership convergence or pending
//     health, every 30 s.
//  3. Pending health: a cluster or machine, 30 s doubling to 5 min.
//  4. The membership refresh interval of a pool.
//  5. The health-check interval of a remediated machine.
//  6. The drift interval.
//  7. Otherwise, requeue at the soonest of them.
//
// Every operation that would start a Job passes the same final checks: an
// invalid Job policy holds it for 10 min, and the operation's retry backoff
// (min(1m·2^(n-1), 10m), the cap once n reaches the failed-Jobs limit)
// turns it into a requeue whose reason ends in "Backoff". A restore never
// backs off.
//
// # Choices where the book leaves a detail open
//
//   - A restore request whose serial already failed holds the object rather
//     than letting apply, drift or refresh run against the state it asked to
//     replace; an interrupted restore Job is retried.
//   - A deleting object with unreadable (but present) state still destroys:
//     the destroy Job reports the problem itself.
//   - A deleting TerraformCluster with no state drops its finalizer without
//     waiting for its machines and pools: there is nothing to destroy.
//   - An apply Job deleted while it ran keeps an apply due (reason
//     ApplyInterrupted) right after order step 6.
//   - Drift checks do not wait for the provisioned latch: an applied object
//     whose outputs are still pending (a machine's provider_id, say) would
//     otherwise never have its outputs read again. The remediation
//     health-check interval does wait for it, as the book says.
//   - A restore whose durable inputs are gone, when current inputs cannot be
//     built either, holds for 10 min like any other Job without inputs.
//   - The drift interval counts from the last successful drift check once
//     there is one, so a pool re-applied every few minutes by bootstrap
//     rotation still gets its drift checks.
//   - Ticks in Job names: refresh and drift use the Unix time of their newest
//     success, a drift remediation the drift check it answers, a restore its
//     serial.
//   - Pruning keeps the newest counted failure as well as the newest
//     unsuccessful Job while no success is newer, so backoff survives an
//     interrupted Job at a limit of 0.
package decide
