package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// alpha is the stability prefix of every HELP text.
const alpha = "[ALPHA] "

// Label values of captf_jobs_total and captf_job_duration_seconds (result).
const (
	ResultSucceeded   = "succeeded"
	ResultFailed      = "failed"
	ResultDeadline    = "deadline"
	ResultInterrupted = "interrupted"
	ResultBlocked     = "blocked"
	ResultPlanChanged = "plan_changed"
)

// Label values of captf_job_errors_total (error_kind; step is a runner step
// name or StepNone).
const (
	ErrorKindStep        = "step"
	ErrorKindImageLayout = "image-layout"
	ErrorKindInterrupted = "interrupted"
	ErrorKindBlocked     = "blocked"
	ErrorKindPlanChanged = "plan-changed"
	ErrorKindDeadline    = "deadline"
	ErrorKindUnknown     = "unknown"
	StepNone             = "none"
)

// OpNone is the op of a reconcile decision that runs nothing.
const OpNone = "none"

// Label values of captf_lease_waits_total (reason).
const (
	LeaseWaitRun               = "run_lease"
	LeaseWaitClusterOperation  = "cluster_operation"
	LeaseWaitMachineOperations = "machine_operations"
)

// Label values of captf_state_read_errors_total (reason).
const (
	StateErrorInconsistent = "inconsistent"
	StateErrorEncrypted    = "encrypted"
	StateErrorCorrupt      = "corrupt"
	StateErrorLost         = "lost"
	StateErrorLocked       = "locked"
)

// Label values of captf_state_backups_total, captf_state_restores_total,
// captf_plan_approvals_total and captf_remediation_requests_total.
const (
	BackupTaken          = "taken"
	BackupPruned         = "pruned"
	BackupSkipped        = "skipped"
	RestoreSucceeded     = "succeeded"
	RestoreFailed        = "failed"
	RestoreNotFound      = "not_found"
	PlanApproved         = "approved"
	PlanChanged          = "changed"
	RemediationRequested = "requested"
	RemediationWithdrawn = "withdrawn"
)

// Label values of captf_identity_denied_total (reason).
const (
	IdentityDeniedNotFound  = "notfound"
	IdentityDeniedNamespace = "namespace"
)

// Label values of captf_image_inspect_errors_total (reason).
const (
	// InspectReference: the image reference does not parse.
	InspectReference = "reference"
	// InspectAuth: the registry refused the credentials (401/403), or an
	// image pull Secret could not be read.
	InspectAuth = "auth"
	// InspectNotFound: no such repository, tag or platform.
	InspectNotFound = "not_found"
	// InspectRegistry: any other registry or transport failure.
	InspectRegistry = "registry"
	// InspectLabel: a capacity label is present but invalid.
	InspectLabel = "label"
)

// Runner step label values of captf_job_step_duration_seconds.
var stepLabels = map[string]string{
	"init":               "init",
	"force-unlock":       "force-unlock",
	"validate":           "validate",
	"plan":               "plan",
	"show":               "show-json",
	"show-json":          "show-json",
	"apply":              "apply",
	"refresh":            "apply-refresh-only",
	"apply-refresh-only": "apply-refresh-only",
	"destroy":            "destroy",
	"state-push":         "state-push",
	"state-list":         "state-list",
	"prepare":            "prepare",
}

// StepLabel maps a runner step name onto the bounded step label set: init,
// force-unlock, validate, plan, show-json (the runner's "show"), apply,
// apply-refresh-only (the runner's "refresh"), destroy, state-push,
// state-list, prepare; anything else is "other".
func StepLabel(step string) string {
	if l, ok := stepLabels[step]; ok {
		return l
	}
	return "other"
}

var (
	jobDurationBuckets  = []float64{5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}
	stepDurationBuckets = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	queueBuckets        = []float64{0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}
	attemptBuckets      = []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20}
)

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: alpha + help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: alpha + help}, labels)
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: alpha + help, Buckets: buckets}, labels)
}

var (
	jobsTotal = counter("captf_jobs_total",
		"Completed runner Jobs by kind, operation and result.", "kind", "op", "result")
	jobDuration = histogram("captf_job_duration_seconds",
		"Wall time of runner Jobs from start to finish, in seconds.", jobDurationBuckets, "kind", "op", "result")
	jobStepDuration = histogram("captf_job_step_duration_seconds",
		"Duration of each runner step, in seconds.", stepDurationBuckets, "kind", "op", "step")
	jobQueue = histogram("captf_job_queue_seconds",
		"Time from Job creation to the start of its source container, in seconds.", queueBuckets, "kind", "op")
	jobErrors = counter("captf_job_errors_total",
		"Unsuccessful runner Jobs by error kind and failed step.", "kind", "op", "error_kind", "step")
	jobAttempts = histogram("captf_job_attempts",
		"Attempt number of a succeeded Job: one plus the failed Jobs of that operation since its last success.", attemptBuckets, "kind", "op")
	resourcesChanged = counter("captf_resources_changed_total",
		"Resources added, changed, destroyed or imported by apply and destroy Jobs.", "kind", "op", "action")
	driftResources = counter("captf_drift_resources_total",
		"Resources to add, change or destroy found by drift Jobs that detected drift.", "kind", "action")
	decisions = counter("captf_reconcile_op_decisions_total",
		"Operations reconciles decided on (op none: nothing to run), by reason.", "kind", "op", "reason")
	stateReadErrors = counter("captf_state_read_errors_total",
		"Transitions into an unreadable Terraform state, by reason.", "kind", "reason")
	outputsInvalid = counter("captf_outputs_invalid_total",
		"Transitions into invalid module outputs, by reason.", "kind", "reason")
	driftDetected = gauge("captf_drift_detected",
		"1 when the object's DriftDetected condition is True, else 0.", "kind", "namespace", "name")
	ready = gauge("captf_ready",
		"The object's Ready condition: 1 True, 0 False, -1 Unknown.", "kind", "namespace", "name")
	infrastructureHealthy = gauge("captf_infrastructure_healthy",
		"The object's InfrastructureHealthy condition: 1 True, 0 False, -1 Unknown.", "kind", "namespace", "name")
	stateResources = gauge("captf_state_resources",
		"Managed resources (data sources excluded) in the object's last-read Terraform state.", "kind", "namespace", "name")
	stateBytes = gauge("captf_state_bytes",
		"Compressed size of the object's Terraform state, summed over its Secrets, in bytes.", "kind", "namespace", "name")
	inputsBytes = gauge("captf_inputs_bytes",
		"Size of the object's rendered main.tf.json plus terraform.tfvars.json, in bytes.", "kind", "namespace", "name")
	lastSuccess = gauge("captf_last_success_timestamp_seconds",
		"Unix time of the object's newest successful Job per operation.", "kind", "namespace", "name", "op")
	unhealthySamples = gauge("captf_unhealthy_samples",
		"A TerraformMachine's status.unhealthySamples.", "namespace", "name")
	forceUnlocks = counter("captf_lock_force_unlocks_total",
		"Stale Terraform state locks force-unlocked.", "kind")
	identityDenied = counter("captf_identity_denied_total",
		"Transitions into an identity that does not exist or does not allow the namespace.", "reason")
	imageInspectErrors = counter("captf_image_inspect_errors_total",
		"Transitions into a failure to read a TerraformMachineTemplate image's capacity labels.", "reason")
	inputsHashChanges = counter("captf_inputs_hash_changes_total",
		"Applies started because a mutable object's rendered inputs changed.", "kind")
	remediationRequests = counter("captf_remediation_requests_total",
		"remediate-machine annotations requested or withdrawn on Machines.", "action")
	destructiveApprovals = counter("captf_destructive_plan_approvals_consumed_total",
		"Destructive-plan approvals removed after a successful apply.", "kind")
	leaseWaits = counter("captf_lease_waits_total",
		"Waits for a run lease or a cluster operation, once per wait.", "kind", "reason")
	stateBackups = counter("captf_state_backups_total",
		"State backups taken, pruned or skipped.", "kind", "result")
	stateRestores = counter("captf_state_restores_total",
		"State restores that succeeded, failed or found no backup.", "kind", "result")
	planApprovals = counter("captf_plan_approvals_total",
		"Approved plans applied, or changed before they could be.", "kind", "result")
	buildInfo = gauge("captf_build_info",
		"The manager's version, commit and module contract; constant 1.", "version", "commit", "contract")
)

// perObject are the gauges labeled kind, namespace, name (and op).
var perObject = []*prometheus.GaugeVec{driftDetected, ready, infrastructureHealthy, stateResources, stateBytes, inputsBytes, lastSuccess}

func init() {
	ctrlmetrics.Registry.MustRegister(
		jobsTotal, jobDuration, jobStepDuration, jobQueue, jobErrors, activeJobs, jobAttempts,
		resourcesChanged, driftResources, decisions, stateReadErrors, outputsInvalid,
		driftDetected, ready, infrastructureHealthy, stateResources, stateBytes, inputsBytes,
		lastSuccess, unhealthySamples, forceUnlocks, identityDenied, imageInspectErrors,
		inputsHashChanges, remediationRequests, destructiveApprovals, leaseWaits,
		stateBackups, stateRestores, planApprovals, buildInfo,
	)
}

// JobFinished counts a completed Job and observes its wall time (start to
// finish). result is one of the Result* values.
func JobFinished(kind infrav1.WorkloadKind, op, result string, duration time.Duration) {
	jobsTotal.WithLabelValues(string(kind), op, result).Inc()
	jobDuration.WithLabelValues(string(kind), op, result).Observe(duration.Seconds())
}

// JobStep observes one runner step's duration; step is mapped with
// StepLabel.
func JobStep(kind infrav1.WorkloadKind, op, step string, duration time.Duration) {
	jobStepDuration.WithLabelValues(string(kind), op, StepLabel(step)).Observe(duration.Seconds())
}

// JobQueued observes the time from a Job's creation to its source
// container's start. Call it only when the start time is known.
func JobQueued(kind infrav1.WorkloadKind, op string, wait time.Duration) {
	jobQueue.WithLabelValues(string(kind), op).Observe(wait.Seconds())
}

// JobError counts an unsuccessful Job: errorKind is one of the ErrorKind*
// values, step the failed runner step (StepNone when none failed).
func JobError(kind infrav1.WorkloadKind, op, errorKind, step string) {
	if step == "" {
		step = StepNone
	} else if step != StepNone {
		step = StepLabel(step)
	}
	jobErrors.WithLabelValues(string(kind), op, errorKind, step).Inc()
}

// JobAttempts observes the attempt number of a succeeded Job.
func JobAttempts(kind infrav1.WorkloadKind, op string, attempts int) {
	jobAttempts.WithLabelValues(string(kind), op).Observe(float64(attempts))
}

// ResourcesChanged adds n to the resources an apply or destroy changed;
// action is add, change, destroy or import. n <= 0 adds nothing.
func ResourcesChanged(kind infrav1.WorkloadKind, op, action string, n int) {
	if n > 0 {
		resourcesChanged.WithLabelValues(string(kind), op, action).Add(float64(n))
	}
}

// DriftResources adds n to the resources a drift Job found drifted; action
// is add, change or destroy. n <= 0 adds nothing.
func DriftResources(kind infrav1.WorkloadKind, action string, n int) {
	if n > 0 {
		driftResources.WithLabelValues(string(kind), action).Add(float64(n))
	}
}

// Decision counts a reconcile's decision: the operation (OpNone for
// nothing) and its reason.
func Decision(kind infrav1.WorkloadKind, op, reason string) {
	decisions.WithLabelValues(string(kind), op, reason).Inc()
}

// StateReadError counts a transition into unreadable state (StateError*).
func StateReadError(kind infrav1.WorkloadKind, reason string) {
	stateReadErrors.WithLabelValues(string(kind), reason).Inc()
}

// OutputsInvalid counts a transition into invalid outputs.
func OutputsInvalid(kind infrav1.WorkloadKind, reason string) {
	outputsInvalid.WithLabelValues(string(kind), reason).Inc()
}

// LockForceUnlocked counts a stale state lock force-unlocked.
func LockForceUnlocked(kind infrav1.WorkloadKind) { forceUnlocks.WithLabelValues(string(kind)).Inc() }

// IdentityDenied counts a transition into a denied identity
// (IdentityDenied*).
func IdentityDenied(reason string) { identityDenied.WithLabelValues(reason).Inc() }

// ImageInspectError counts a transition into a template capacity failure
// (Inspect*).
func ImageInspectError(reason string) { imageInspectErrors.WithLabelValues(reason).Inc() }

// InputsHashChanged counts an apply started because a mutable object's
// inputs changed.
func InputsHashChanged(kind infrav1.WorkloadKind) {
	inputsHashChanges.WithLabelValues(string(kind)).Inc()
}

// RemediationRequest counts a remediate-machine annotation set
// (RemediationRequested) or withdrawn (RemediationWithdrawn).
func RemediationRequest(action string) { remediationRequests.WithLabelValues(action).Inc() }

// DestructivePlanApprovalConsumed counts a destructive approval removed
// after success.
func DestructivePlanApprovalConsumed(kind infrav1.WorkloadKind) {
	destructiveApprovals.WithLabelValues(string(kind)).Inc()
}

// LeaseWait counts one wait (LeaseWait*).
func LeaseWait(kind infrav1.WorkloadKind, reason string) {
	leaseWaits.WithLabelValues(string(kind), reason).Inc()
}

// StateBackup counts a backup taken, pruned or skipped (Backup*).
func StateBackup(kind infrav1.WorkloadKind, result string) {
	stateBackups.WithLabelValues(string(kind), result).Inc()
}

// StateRestore counts a restore outcome (Restore*).
func StateRestore(kind infrav1.WorkloadKind, result string) {
	stateRestores.WithLabelValues(string(kind), result).Inc()
}

// PlanApproval counts an approved plan applied or changed (Plan*).
func PlanApproval(kind infrav1.WorkloadKind, result string) {
	planApprovals.WithLabelValues(string(kind), result).Inc()
}

// conditionValue encodes a condition status: 1 True, 0 False, -1 Unknown
// (or missing).
func conditionValue(s metav1.ConditionStatus) float64 {
	switch s {
	case metav1.ConditionTrue:
		return 1
	case metav1.ConditionFalse:
		return 0
	default:
		return -1
	}
}

// SetReady records the object's Ready condition status.
func SetReady(kind infrav1.WorkloadKind, namespace, name string, s metav1.ConditionStatus) {
	ready.WithLabelValues(string(kind), namespace, name).Set(conditionValue(s))
}

// SetInfrastructureHealthy records the object's InfrastructureHealthy
// condition status.
func SetInfrastructureHealthy(kind infrav1.WorkloadKind, namespace, name string, s metav1.ConditionStatus) {
	infrastructureHealthy.WithLabelValues(string(kind), namespace, name).Set(conditionValue(s))
}

// SetDriftDetected records whether DriftDetected is True.
func SetDriftDetected(kind infrav1.WorkloadKind, namespace, name string, detected bool) {
	v := 0.0
	if detected {
		v = 1
	}
	driftDetected.WithLabelValues(string(kind), namespace, name).Set(v)
}

// SetStateResources records the managed resources in the last-read state.
func SetStateResources(kind infrav1.WorkloadKind, namespace, name string, n int) {
	stateResources.WithLabelValues(string(kind), namespace, name).Set(float64(n))
}

// SetStateBytes records the compressed state size summed over its Secrets.
func SetStateBytes(kind infrav1.WorkloadKind, namespace, name string, n int64) {
	stateBytes.WithLabelValues(string(kind), namespace, name).Set(float64(n))
}

// SetInputsBytes records the rendered inputs' size (also when over the
// cap).
func SetInputsBytes(kind infrav1.WorkloadKind, namespace, name string, n int) {
	inputsBytes.WithLabelValues(string(kind), namespace, name).Set(float64(n))
}

// SetLastSuccess records the finish time of the object's newest successful
// Job of op.
func SetLastSuccess(kind infrav1.WorkloadKind, namespace, name, op string, t time.Time) {
	lastSuccess.WithLabelValues(string(kind), namespace, name, op).Set(float64(t.UnixNano()) / 1e9)
}

// DeleteLastSuccess removes the object's series for op: drift and refresh
// series are exported only while that operation is scheduled.
func DeleteLastSuccess(kind infrav1.WorkloadKind, namespace, name, op string) {
	lastSuccess.DeleteLabelValues(string(kind), namespace, name, op)
}

// SetUnhealthySamples records a TerraformMachine's status.unhealthySamples.
func SetUnhealthySamples(namespace, name string, n int) {
	unhealthySamples.WithLabelValues(namespace, name).Set(float64(n))
}

// ObjectDeleted removes every per-object series of the object; call it
// once the object is gone (its finalizer removed, or not found).
func ObjectDeleted(kind infrav1.WorkloadKind, namespace, name string) {
	l := prometheus.Labels{"kind": string(kind), "namespace": namespace, "name": name}
	for _, g := range perObject {
		g.DeletePartialMatch(l)
	}
	if kind.Capabilities().Remediated {
		// Only a remediated kind (a TerraformMachine) counts unhealthy
		// samples.
		unhealthySamples.DeleteLabelValues(namespace, name)
	}
}

// SetBuildInfo sets captf_build_info{version, commit, contract} to 1,
// replacing any earlier series.
func SetBuildInfo(version, commit, contract string) {
	buildInfo.Reset()
	buildInfo.WithLabelValues(version, commit, contract).Set(1)
}
