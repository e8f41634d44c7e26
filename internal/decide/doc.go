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
// Decide stops at the first rule that matches:
//
//  1. The Job cache is behind the API server: requeue after 5 s.
//  2. A Job is active: wait for it, requeue after 1 min (the Job watch wakes
//     the reconcile sooner).
//  3. Paused: start nothing.
//  4. Deleting with no state and nothing ever applied: drop the finalizer.
//     Deleting with lost state and captf.io/abandon-infrastructure naming the
//     UID (and no restore requested): drop the finalizer.
//  5. An owner not ready (ignored while deleting), then credentials not
//     ready: requeue after 30 s.
//  6. A restore named by captf.io/restore-state, unless deleting (a deleting
//     object whose state is lost restores first, then destroys). A backup
//     that does not exist, or a serial whose restore already failed, holds
//     the object for 10 min (an annotation change wakes it).
//  7. Deleting: wait while the state is lost, while a cluster still has
//     machines or pools, or while the durable inputs are missing; else
//     destroy.
//  8. Lost or unreadable state: requeue after 1 min. Then a module known to
//     lack contract outputs: when the newest Job that checked the module's
//     outputs ran the inputs the next Job would run (the image is one of
//     them) and found some undeclared, no apply, plan, refresh or drift
//     starts; re-checked every 10 min, and a change wakes the reconcile
//     sooner (Module Contract, "Null semantics").
//  9. The apply reasons, in the book's order: no state yet, state without an
//     inputs hash, a mutable kind's changed inputs, a mutable kind's failed
//     newest apply (drift remediations passed over), an apply Job deleted
//     while it ran (cluster, pool), and drift found with action Remediate
//     below the remediation cap. Every apply but the first is gated on a
//     TerraformCluster: under applyPolicy Manual by a plan Job and its
//     approval, otherwise by the destructive-plan guard (a blocked hash is
//     not re-applied until approved or changed, re-checked every 10 min).
//  10. The schedule, stopping at the first one due: the post-apply refresh
//     (machine, pool, unless the apply's own reading was definite); a pool's
//     membership convergence or pending health every 30 s; pending health
//     of a cluster or machine, 30 s doubling to 5 min; a pool's membership
//     refresh interval; a machine's remediation health-check interval; the
//     drift interval. Otherwise requeue at the soonest of them.
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
//     ApplyInterrupted) right after step 6.
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
