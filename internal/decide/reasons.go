package decide

import (
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Reason says why a Decision was taken. It is the reason label of
// captf_reconcile_op_decisions_total and the "why" of the JobCreated event.
type Reason string

// Reasons that start an apply (book: The Reconcile Lifecycle, "Choosing the
// next operation", steps 3 to 7, and Retries and Backoff for an apply Job
// deleted while it ran). Under applyPolicy Manual the same reasons start the
// plan Job that precedes the apply.
const (
	ReasonNoState                Reason = "NoState"
	ReasonStateWithoutInputsHash Reason = "StateWithoutInputsHash"
	ReasonInputsChanged          Reason = "InputsChanged"
	ReasonLastApplyFailed        Reason = "LastApplyFailed"
	ReasonApplyInterrupted       Reason = "ApplyInterrupted"
	ReasonDriftRemediation       Reason = "DriftRemediation"
)

// Reasons that start a restore or a destroy, or drop the finalizer.
const (
	ReasonRestoreRequested Reason = "RestoreRequested"
	ReasonDeleting         Reason = v1alpha1.DeletingReason
	// ReasonNoStateToDestroy: deleting with no state and nothing ever
	// applied; the finalizer goes at once.
	ReasonNoStateToDestroy Reason = "NoStateToDestroy"
	// ReasonDestroySucceeded: a destroy Job succeeded (after the newest
	// successful apply), so deletion cleans up and drops the finalizer.
	ReasonDestroySucceeded Reason = "DestroySucceeded"
	// ReasonInfrastructureAbandoned: deleting with lost state and
	// captf.io/abandon-infrastructure naming the object's UID.
	ReasonInfrastructureAbandoned Reason = "InfrastructureAbandoned"
)

// Reasons of the refresh, membership and drift schedule, in its order.
const (
	ReasonPostApplyRefresh     Reason = "PostApplyRefresh"
	ReasonMembershipConverging Reason = "MembershipConverging"
	ReasonHealthPending        Reason = "HealthPending"
	ReasonMembershipRefreshDue Reason = "MembershipRefreshDue"
	ReasonHealthCheckDue       Reason = "HealthCheckDue"
	ReasonDriftDue             Reason = "DriftDue"
	// ReasonScheduled: nothing is due; requeue at the soonest due time.
	ReasonScheduled Reason = "Scheduled"
	// ReasonUpToDate: nothing is due and nothing is scheduled.
	ReasonUpToDate Reason = "UpToDate"
)

// Reasons that wait without a Job. Where a condition carries the same wait,
// the reason is the condition's.
const (
	ReasonJobCacheStale          Reason = "JobCacheStale"
	ReasonJobRunning             Reason = "JobRunning"
	ReasonPaused                 Reason = v1alpha1.PausedReason
	ReasonDependentsExist        Reason = v1alpha1.DependentsExistReason
	ReasonStateUnreadable        Reason = "StateUnreadable"
	ReasonStateLost              Reason = v1alpha1.StateLostReason
	ReasonRestoreBackupNotFound  Reason = v1alpha1.RestoreBackupNotFoundReason
	ReasonRestoreFailed          Reason = v1alpha1.RestoreFailedReason
	ReasonPlanAwaitingApproval   Reason = v1alpha1.PlanAwaitingApprovalReason
	ReasonDestructivePlanBlocked Reason = v1alpha1.DestructivePlanBlockedReason
	ReasonJobPolicyInvalid       Reason = v1alpha1.JobPolicyInvalidReason
	ReasonInputsTooLarge         Reason = v1alpha1.InputsTooLargeReason
	ReasonDurableInputsMissing   Reason = v1alpha1.DurableInputsMissingReason
	// ReasonOutputsMissing: the newest Job that checked the module found
	// contract outputs it does not declare, on the inputs the next Job would
	// run; nothing runs again until they change (Module Contract, "Null
	// semantics").
	ReasonOutputsMissing Reason = v1alpha1.OutputsMissingReason
	// ReasonInputsNotRendered: an apply is due but the reconcile did not
	// render the inputs (a caller error for a mutable kind; kept safe).
	ReasonInputsNotRendered Reason = "InputsNotRendered"
)

// Backoff is the reason of a requeue that waits out the retry backoff of
// the operation r would start, for example InputsChangedBackoff.
func (r Reason) Backoff() Reason { return r + "Backoff" }

// The requeues that are not backoff (book: Retries and Backoff, "What does
// not back off"), and the fallback while a started Job runs.
const (
	// RequeueLeaseWait: a run lease or the cluster operation gate is held.
	RequeueLeaseWait = 30 * time.Second
	// RequeueNotReady: credentials, dependencies or an owner not ready, and a
	// deleting cluster waiting for its machines and pools.
	RequeueNotReady = 30 * time.Second
	// RequeueStateUnreadable: an unreadable or lost state.
	RequeueStateUnreadable = time.Minute
	// RequeueJobRunning: a Job still running; the Job watch wakes the
	// reconcile sooner.
	RequeueJobRunning = time.Minute
	// RequeueJobCacheStale: the Job cache is behind the API server.
	RequeueJobCacheStale = 5 * time.Second
	// RequeueApprovalWait: at most this long while an approval is awaited;
	// an annotation change wakes the reconcile sooner.
	RequeueApprovalWait = 10 * time.Minute
	// RequeueFixInput: JobPolicyInvalid, InputsTooLarge, missing durable
	// inputs, a restore request that cannot run and a module missing
	// contract outputs; a change wakes the reconcile.
	RequeueFixInput = 10 * time.Minute
)

// Condition reasons of InfrastructureHealthy.
const (
	reasonHealthy                = v1alpha1.HealthyReason
	reasonProvisioning           = v1alpha1.ProvisioningReason
	reasonInstancePending        = v1alpha1.InstancePendingReason
	reasonInstanceUnhealthy      = v1alpha1.InstanceUnhealthyReason
	reasonInstanceDegraded       = v1alpha1.InstanceDegradedReason
	reasonInstanceStopped        = v1alpha1.InstanceStoppedReason
	reasonInstanceTerminated     = v1alpha1.InstanceTerminatedReason
	reasonWaitingForProvisioning = v1alpha1.WaitingForProvisioningReason
	reasonHealthUnknown          = v1alpha1.HealthUnknownReason
	reasonProviderIDMissing      = v1alpha1.ProviderIDMissingReason
)
