package decide

import (
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Operation is what the reconcile does next. The first six are Job
// operations (the values of the op label and status.activeJob.operation);
// OpDropFinalizer and OpNone start no Job.
type Operation string

// The operations. The Job operations carry the API's values.
const (
	OpNone          Operation = "none"
	OpApply         Operation = Operation(v1alpha1.OperationApply)
	OpDestroy       Operation = Operation(v1alpha1.OperationDestroy)
	OpPlan          Operation = Operation(v1alpha1.OperationPlan)
	OpRefresh       Operation = Operation(v1alpha1.OperationRefresh)
	OpDrift         Operation = Operation(v1alpha1.OperationDrift)
	OpRestore       Operation = Operation(v1alpha1.OperationRestore)
	OpDropFinalizer Operation = "drop-finalizer"
)

// IsJob reports whether the operation runs as a Job.
func (o Operation) IsJob() bool { return opIndex(o) >= 0 }

// API is the operation as status.activeJob.operation and the op label carry
// it; empty for OpNone and OpDropFinalizer.
func (o Operation) API() v1alpha1.Operation {
	if !o.IsJob() {
		return ""
	}
	return v1alpha1.Operation(o)
}

// jobOps lists the Job operations in a fixed order, indexing per-op tables.
var jobOps = [...]Operation{OpApply, OpDestroy, OpPlan, OpRefresh, OpDrift, OpRestore}

func opIndex(o Operation) int {
	switch o {
	case OpApply:
		return 0
	case OpDestroy:
		return 1
	case OpPlan:
		return 2
	case OpRefresh:
		return 3
	case OpDrift:
		return 4
	case OpRestore:
		return 5
	}
	return -1
}

// ApplyPolicy is a TerraformCluster's spec.applyPolicy.
type ApplyPolicy = v1alpha1.ApplyPolicy

// The apply policies. The empty value means Automatic.
const (
	ApplyAutomatic = v1alpha1.ApplyPolicyAutomatic
	ApplyManual    = v1alpha1.ApplyPolicyManual
)

// DriftAction is what a drift finding leads to (spec.drift.action).
type DriftAction = v1alpha1.DriftAction

// The drift actions. The empty value means Report.
const (
	DriftReport    = v1alpha1.DriftActionReport
	DriftRemediate = v1alpha1.DriftActionRemediate
)

// StateStatus is what reading the object's state found this pass.
type StateStatus string

// The state statuses.
const (
	// StateNotFound: no base state Secret exists.
	StateNotFound StateStatus = "NotFound"
	// StateRead: the state was read; StateInputsHash holds its inputs hash.
	StateRead StateStatus = "Read"
	// StateUnreadable: the state exists but could not be used: corrupt,
	// inconsistent, encrypted or locked by a foreign holder.
	StateUnreadable StateStatus = "Unreadable"
)

// InputsStatus says whether the current inputs were built this pass.
type InputsStatus string

// The inputs statuses.
const (
	// InputsBuilt: CurrentInputsHash holds the hash of the freshly rendered
	// inputs.
	InputsBuilt InputsStatus = "Built"
	// InputsNotRendered: nothing was rendered because none is needed, as for
	// a TerraformMachine once it is provisioned (it never re-renders).
	InputsNotRendered InputsStatus = "NotRendered"
	// InputsWaiting: a dependency is not ready (bootstrap data, cluster
	// exports, cluster infrastructure, variable sources); InputsReason names
	// it. Requeued after 30 s.
	InputsWaiting InputsStatus = "Waiting"
	// InputsTooLarge: the rendered inputs are over the 1,000,000-byte cap.
	// Requeued after 10 min; a change wakes the reconcile.
	InputsTooLarge InputsStatus = "TooLarge"
)

// JobRecord is one retained, finished Job of the object, as read from its
// labels, annotations and the runner's result document.
type JobRecord struct {
	// Name is the Job's name.
	Name string
	// Op is the Job's operation (op label).
	Op Operation
	// Attempt is the Job's attempt number (attempt label); 0 if unreadable.
	Attempt int
	// Finished is when the Job finished (its completion or failure time).
	Finished time.Time
	// Succeeded is true when the Job completed successfully.
	Succeeded bool
	// InputsHash is the Job's captf.io/inputs-hash annotation.
	InputsHash string
	// DeadlineExceeded: the Job was killed by activeDeadlineSeconds. It
	// counts as a failure even when the runner reported itself interrupted.
	DeadlineExceeded bool
	// Interrupted: the Job was stopped from outside (drain, eviction, Job
	// deletion) without a deadline kill. It counts toward no backoff.
	Interrupted bool
	// Blocked: an apply the runner stopped before a destructive plan
	// (captf.io/destructive-plan-blocked). Counts toward nothing.
	Blocked bool
	// PlanChanged: an approved apply whose plan no longer matched
	// (captf.io/plan-changed). Counts toward nothing.
	PlanChanged bool
	// PlanUnreadable: a plan Job that succeeded but whose plan could not be
	// read (captf.io/plan-unreadable). Counts as a failure.
	PlanUnreadable bool
	// DriftRemediation: an apply that remediates drift
	// (captf.io/drift-remediation).
	DriftRemediation bool
	// DriftDetected: for a successful drift Job, whether its plan found drift.
	DriftDetected bool
	// RestoreSerial: for a restore Job, the backup serial it pushed
	// (captf.io/restore-serial).
	RestoreSerial int64
	// OutputsChecked: the runner matched the contract outputs against the
	// module's declarations (every Job but a restore, from a runner that
	// got as far as building its root).
	OutputsChecked bool
	// UndeclaredOutputs are the contract outputs the module does not
	// declare, as the runner found them (empty when OutputsChecked is false
	// or the module declares them all).
	UndeclaredOutputs []string
}

// Outcome classifies a finished Job for backoff, retries and pruning.
type Outcome int

// The outcomes.
const (
	// OutcomeSucceeded: a success; it resets the op's failure count.
	OutcomeSucceeded Outcome = iota
	// OutcomeFailed: a failure that counts toward backoff.
	OutcomeFailed
	// OutcomeInterrupted: stopped from outside; counts toward nothing.
	OutcomeInterrupted
	// OutcomeBlocked: stopped before a destructive plan; counts toward
	// nothing.
	OutcomeBlocked
	// OutcomePlanChanged: an approved apply whose plan changed; counts toward
	// nothing.
	OutcomePlanChanged
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomeSucceeded:
		return "succeeded"
	case OutcomeFailed:
		return "failed"
	case OutcomeInterrupted:
		return "interrupted"
	case OutcomeBlocked:
		return "blocked"
	case OutcomePlanChanged:
		return "plan-changed"
	}
	return "unknown"
}

// Outcome classifies the Job (book: Retries and Backoff, "Counting
// failures"). A deadline kill wins over every marker: it counts even when the
// runner reported itself interrupted. Blocked, plan-changed and interrupted
// (without a deadline) count toward nothing. A plan Job that succeeded but
// whose plan could not be read counts as a failure.
func (j JobRecord) Outcome() Outcome {
	switch {
	case j.DeadlineExceeded:
		return OutcomeFailed
	case j.Blocked:
		return OutcomeBlocked
	case j.PlanChanged:
		return OutcomePlanChanged
	case j.Interrupted:
		return OutcomeInterrupted
	case j.Succeeded && j.PlanUnreadable:
		return OutcomeFailed
	case j.Succeeded:
		return OutcomeSucceeded
	}
	return OutcomeFailed
}

// newer reports whether a finished after b. Ties are broken by the higher
// attempt, then by name, so every list of records has one total order.
func newer(a, b *JobRecord) bool {
	if !a.Finished.Equal(b.Finished) {
		return a.Finished.After(b.Finished)
	}
	if a.Attempt != b.Attempt {
		return a.Attempt > b.Attempt
	}
	return a.Name > b.Name
}

// ActiveJob is a Job of the object that has not finished.
type ActiveJob struct {
	Name string
	Op   Operation
}

// RestoreRequest is a captf.io/restore-state annotation.
type RestoreRequest struct {
	// Serial is the requested backup serial (0 when the value is not a
	// serial).
	Serial int64
	// BackupFound: a backup with that serial exists.
	BackupFound bool
}

// PlanPreview is a TerraformCluster's status.plan.
type PlanPreview struct {
	// InputsHash is the inputs hash the plan was computed for.
	InputsHash string
	// PlanHash is the plan's hash, what captf.io/approve-plan must name.
	PlanHash string
	// NoChanges: the plan has no changes, so it needs no approval.
	NoChanges bool
}

// HistoryLimits are the effective spec.jobs history limits (after merging
// with a cluster's spec.defaults.jobs and the built-in default of 3).
type HistoryLimits struct {
	Successful int
	Failed     int
}

// DriftSettings are the drift policy facts and where they come from.
type DriftSettings struct {
	// IntervalSeconds is the object's own spec.drift.intervalSeconds (nil
	// when unset).
	IntervalSeconds *int32
	// DefaultsIntervalSeconds is the owning TerraformCluster's
	// spec.defaults.drift.intervalSeconds, for a machine or pool (nil when
	// unset or not applicable).
	DefaultsIntervalSeconds *int32
	// ManagerDefault is the manager's --drift-default-interval (30 min when
	// zero or negative).
	ManagerDefault time.Duration
	// Action is the object's own spec.drift.action. A TerraformMachine's is
	// always Report whatever is set here.
	Action DriftAction
}

// RemediationSettings are a TerraformMachine's spec.remediation facts that
// the schedule reads.
type RemediationSettings struct {
	// AnnotateMachine is spec.remediation.annotateMachine.
	AnnotateMachine bool
	// HealthCheckIntervalSeconds is spec.remediation.healthCheckIntervalSeconds
	// (300 when zero).
	HealthCheckIntervalSeconds int32
}

// Observation is everything the decision reads about one object, as plain
// facts. The reconcile flow fills it after bookkeeping, once per pass.
type Observation struct {
	// Kind, Name and UID identify the object. The UID seeds the schedule's
	// jitter.
	Kind v1alpha1.WorkloadKind
	Name string
	UID  string
	// Caps are the kind's capabilities (Kind.Capabilities()): every rule
	// that differs between kinds reads them, never Kind.
	Caps v1alpha1.Capabilities
	// Now is the time of the decision.
	Now time.Time

	// JobCacheStale: the Job cache is known to be behind the API server
	// (a Job this manager created is not in it yet). Requeued after 5 s.
	JobCacheStale bool
	// ActiveJob is the object's unfinished Job, if any.
	ActiveJob *ActiveJob
	// Paused: the object or its Cluster is paused; nothing new starts.
	Paused bool
	// OwnerWait names why the owner lookup or an owner gate is not satisfied
	// (a DependenciesReady reason); empty when satisfied. Ignored while the
	// object is being deleted.
	OwnerWait string
	// CredentialsWait names why the identity, credential mirror or runner
	// RBAC is not ready (their condition reason); empty when ready. It holds
	// every Job, destroy and restore included.
	CredentialsWait string
	// JobPolicyInvalid: the effective Job policy is invalid (lock timeout not
	// below the deadline, a number out of bounds, or a Job pod that fails
	// pod security); no Job can be built.
	JobPolicyInvalid bool

	// Deleting: the object has a deletionTimestamp.
	Deleting bool
	// DependentsExist: a deleting object of a kind with members (a
	// TerraformCluster) still has members carrying its cluster name.
	DependentsExist bool
	// AbandonInfrastructure is the captf.io/abandon-infrastructure value.
	AbandonInfrastructure string

	// Restore is the captf.io/restore-state request, if any.
	Restore *RestoreRequest
	// LastRestoredSerial is status.lastRestoredSerial: the serial of the
	// restore already attempted for the current annotation (0 when none).
	LastRestoredSerial int64

	// State is what reading the state found; StateInputsHash is the inputs
	// hash annotation on the base state Secret ("" when absent).
	State           StateStatus
	StateInputsHash string
	// EverApplied: the object counts as applied (provisioned, captf.io/applied
	// on the durable inputs Secret, a pinned digest, or a state backup).
	// With no state, such an object has lost its state.
	EverApplied bool
	// SucceededApply: an apply of the object succeeded (provisioned,
	// captf.io/applied, or a pinned digest). A state backup is no such
	// evidence: every new serial is backed up, a failed first apply's too.
	SucceededApply bool
	// Provisioned is status.initialization.provisioned.
	Provisioned bool

	// Inputs says whether the current inputs were built; CurrentInputsHash
	// is their hash when they were, InputsReason the reason when they were
	// not.
	Inputs            InputsStatus
	CurrentInputsHash string
	InputsReason      string
	// DurableInputsHash is the inputs hash of the durable inputs Secret
	// (captf-inputs-<kindshort>-<name>); DurableInputsMissing is true when
	// that Secret is gone.
	DurableInputsHash    string
	DurableInputsMissing bool
	// InterruptedApply: captf.io/interrupted-apply is recorded on the durable
	// inputs Secret (an apply Job of a cluster or pool was deleted while it
	// ran).
	InterruptedApply bool

	// ApplyPolicy is a TerraformCluster's spec.applyPolicy.
	ApplyPolicy ApplyPolicy
	// ApproveDestructivePlan and ApprovePlan are the values of
	// captf.io/approve-destructive-plan and captf.io/approve-plan.
	ApproveDestructivePlan string
	ApprovePlan            string
	// Plan is a TerraformCluster's status.plan, if any.
	Plan *PlanPreview

	// Jobs are the retained, finished Jobs of the object, in any order.
	Jobs []JobRecord
	// History are the effective history limits.
	History HistoryLimits

	// Drift holds the drift interval's sources and the drift action.
	Drift DriftSettings
	// DriftFound: the last successful drift check found drift.
	DriftFound bool
	// LastApply is when the newest successful apply finished.
	LastApply time.Time
	// LastRefresh is status.lastRefresh: the newest successful refresh, or an
	// apply whose own reading was definite (see DefiniteReading).
	LastRefresh time.Time
	// LastDriftCheck is status.lastDriftCheck.
	LastDriftCheck time.Time
	// DriftCheckRequested is when captf.io/drift-check-requested asked for
	// a drift check now (zero when it is absent).
	DriftCheckRequested time.Time

	// Health is the newest health reading's module state ("" when the
	// module gave none).
	Health HealthState
	// PendingRefreshes is status.pendingRefreshes: consecutive pending
	// samples since the last other reading or apply.
	PendingRefreshes int
	// MembershipConverging: a pool whose spec.providerIDList length differs
	// from status.replicas.
	MembershipConverging bool
	// MembershipRefreshIntervalSeconds is a pool's
	// spec.membershipRefreshIntervalSeconds (60 when zero).
	MembershipRefreshIntervalSeconds int32
	// Remediation is a TerraformMachine's spec.remediation.
	Remediation RemediationSettings
}

// JobPlan is what the reconcile needs to create the decided Job.
type JobPlan struct {
	// Name is the Job's deterministic name.
	Name string
	// Attempt is the a<attempt> in the name and the attempt label.
	Attempt int
	// Tick is the extra hash input of the name (see JobName).
	Tick int64
	// InputsHash is the hash of the inputs the Job runs (its
	// captf.io/inputs-hash annotation).
	InputsHash string
	// DurableInputs: the Job runs the durable inputs Secret's content rather
	// than the freshly rendered inputs.
	DurableInputs bool
	// DriftRemediation: the apply remediates drift (captf.io/drift-remediation).
	DriftRemediation bool
	// GuardDeletes: the runner stops before a delete or replace unless
	// AllowDeletesHash names InputsHash (--guard-deletes, --inputs-hash).
	GuardDeletes bool
	// AllowDeletesHash is the approved destructive inputs hash
	// (--allow-deletes-hash), when the approval names InputsHash.
	AllowDeletesHash string
	// ExpectPlanHash is the plan hash the apply must re-plan to
	// (--expect-plan, captf.io/approved-plan).
	ExpectPlanHash string
	// RestoreSerial is the backup serial a restore pushes
	// (captf.io/restore-serial).
	RestoreSerial int64
}

// Decision is the outcome of Decide.
type Decision struct {
	// Op is the next operation.
	Op Operation
	// Reason says why (a Reason constant, or the dependency reason the
	// object waits on).
	Reason Reason
	// RequeueAfter is when to look again; 0 means only a watch event wakes
	// the object. Never negative.
	RequeueAfter time.Duration
	// Job is set when Op is a Job operation.
	Job *JobPlan
	// DriftRequestAnswered: captf.io/drift-check-requested needs no Job
	// any more, so the reconcile removes it: a drift check finished after
	// it was asked for, or drift checks are off for the object. (The drift
	// Job a request starts answers it too, when the Job is created.)
	DriftRequestAnswered bool
}
