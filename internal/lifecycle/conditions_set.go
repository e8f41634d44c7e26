package lifecycle

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// This file sets every condition of reference-facts §1 a workload
// carries, each in one function of its own, from the facts the pass's
// steps recorded (facts.go). Each setter says, in order, which fact wins
// over which; when no fact of this pass speaks, the condition keeps what
// the object carried, or takes its initial value when it has none. Only
// these functions set one of these conditions.

// setters set each condition but Ready, by type; setConditions runs them
// in this order, then setReady summarises them.
var setters = []struct {
	t   string
	set func(p *Pass)
}{
	{infrav1.PausedCondition, setPaused},
	{infrav1.DeletingCondition, setDeleting},
	{infrav1.DependenciesReadyCondition, setDependenciesReady},
	{infrav1.IdentityAllowedCondition, setIdentityAllowed},
	{infrav1.CredentialsMirroredCondition, setCredentialsMirrored},
	{infrav1.RunnerRBACReadyCondition, setRunnerRBACReady},
	{infrav1.ApplyJobSucceededCondition, setApplyJobSucceeded},
	{infrav1.StateReadableCondition, setStateReadable},
	{infrav1.RestoreJobSucceededCondition, setRestoreJobSucceeded},
	{infrav1.OutputsValidCondition, setOutputsValid},
	{infrav1.InfrastructureHealthyCondition, setInfrastructureHealthy},
	{infrav1.DriftJobSucceededCondition, setDriftJobSucceeded},
	{infrav1.DriftDetectedCondition, setDriftDetected},
	{infrav1.DeletionBlockedCondition, setDeletionBlocked},
	{infrav1.EndpointAvailableCondition, setEndpointAvailable},
	{infrav1.AutoscalingActiveCondition, setAutoscalingActive},
}

// setConditions sets every condition from the pass's facts, then Ready.
func setConditions(p *Pass) error {
	for _, s := range setters {
		s.set(p)
	}
	return setReady(p)
}

// Condition is condition t as this pass sees it so far: what its setter
// makes of the facts recorded until now, on a copy of the object; the
// object's own condition for a type no setter here owns. nil when unset.
func (p *Pass) Condition(t string) *metav1.Condition {
	for _, s := range setters {
		if s.t != t {
			continue
		}
		q := *p
		q.Obj = p.Obj.DeepCopyObject().(Object)
		s.set(&q)
		return condition(&q, t)
	}
	return condition(p, t)
}

// verdict is a condition's status, reason and message, as one fact gives
// them.
type verdict struct {
	status          metav1.ConditionStatus
	reason, message string
}

// first is the first verdict given, in the setter's order of precedence.
func first(vs ...*verdict) *verdict {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// unset: the object carries no condition t yet (its initial value is
// due).
func unset(p *Pass, t string) bool { return conditions.Get(p.Obj, t) == nil }

// orInitial is v, the verdict of this pass's facts; without one, initial
// when the object carries no condition t yet, else nil: t stays as it is.
func orInitial(p *Pass, t string, v, initial *verdict) *verdict {
	switch {
	case v != nil:
		return v
	case unset(p, t):
		return initial
	}
	return nil
}

// setPaused: Paused follows the pause the preamble read, from the first
// reconcile on (owner wait and finalizer pass included), like Cluster
// API's paused.EnsurePausedCondition.
func setPaused(p *Pass) {
	if !p.facts.pausedRead {
		return
	}
	if p.paused {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.PausedCondition, Status: metav1.ConditionTrue, Reason: infrav1.PausedReason})
		return
	}
	conditions.Set(p.Obj, metav1.Condition{Type: infrav1.PausedCondition, Status: metav1.ConditionFalse, Reason: infrav1.NotPausedReason})
}

// setDeleting: False/NotDeleting until the deletion timestamp; then
// True/Deleting with what deletion does or waits for, and
// True/DeletionCompleted once cleanup is done and the finalizer goes.
func setDeleting(p *Pass) {
	if !p.deleting() {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.DeletingCondition, Status: metav1.ConditionFalse, Reason: infrav1.NotDeletingReason})
		return
	}
	if p.dropFinalizer {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.DeletingCondition, Status: metav1.ConditionTrue, Reason: infrav1.DeletionCompletedReason,
			Message: deletionCompleted(p.Decision.Reason)})
		return
	}
	msg := deletionProgress(p)
	if prev := conditions.Get(p.Obj, infrav1.DeletingCondition); msg == "" && prev != nil && prev.Status == metav1.ConditionTrue && prev.Message != "" {
		// Nothing this pass tells more than what the last one said.
		return
	}
	if msg == "" {
		msg = "deletion started"
	}
	conditions.Set(p.Obj, metav1.Condition{Type: infrav1.DeletingCondition, Status: metav1.ConditionTrue, Reason: infrav1.DeletingReason, Message: capMessage(msg)})
}

// deletionCompleted says why deletion completed.
func deletionCompleted(r decide.Reason) string {
	switch r {
	case decide.ReasonDestroySucceeded:
		return "the destroy succeeded: deletion completed, removing the finalizer"
	case decide.ReasonNoStateToDestroy:
		return "no state to destroy: deletion completed, removing the finalizer"
	case decide.ReasonInfrastructureAbandoned:
		return "the infrastructure is abandoned: deletion completed, removing the finalizer"
	}
	return "deletion completed, removing the finalizer"
}

// deletionProgress says what deletion does or waits for this pass, ""
// when the pass found nothing to say (it stopped before deciding).
func deletionProgress(p *Pass) string {
	switch {
	case p.facts.started != nil:
		return fmt.Sprintf("%s Job %s started", p.facts.started.op, p.facts.started.name)
	case p.Active != nil:
		return fmt.Sprintf("%s Job %s running", p.Active.Labels[infrav1.OpLabel], p.Active.Name)
	case len(p.facts.foreignState) > 0:
		return "waiting for Secret " + strings.Join(p.facts.foreignState, ", ") +
			", which carries this object's state name but not CAPTF's owner labels, to be removed or labelled"
	case p.facts.refusal != nil:
		v := refusalVerdict(p.facts.refusal)
		return fmt.Sprintf("%s cannot start: %s: %s", p.facts.refusal.op, v.reason, v.message)
	case !p.facts.acted:
		return ""
	}
	switch r := p.Decision.Reason; {
	case r == decide.ReasonDependentsExist:
		return "waiting for the cluster's TerraformMachines and TerraformMachinePools to be deleted"
	case r == decide.ReasonStateLost:
		return "waiting for an operator decision on the lost state: restore a backup with " + infrav1.RestoreStateAnnotation +
			", or abandon the infrastructure with " + infrav1.AbandonInfrastructureAnnotation
	case r == decide.ReasonPaused:
		return "paused: no destroy starts until the object is unpaused"
	case p.CredentialsWait != "" && string(r) == p.CredentialsWait:
		return "waiting for credentials: " + credentialsWait(p)
	case r == decide.ReasonJobCacheStale:
		return "waiting for the Job cache to catch up"
	}
	return "waiting: " + string(p.Decision.Reason)
}

// credentialsWait is the first credentials check that is not True, with
// its message.
func credentialsWait(p *Pass) string {
	if cr := p.facts.credentials; cr != nil {
		for _, v := range cr.Verdicts() {
			if v.Status != metav1.ConditionTrue {
				return v.Reason + ": " + v.Message
			}
		}
	}
	return p.CredentialsWait
}

// setDependenciesReady: the owner lookup's or the inputs' wait, else True
// when the pass built the inputs. A pass that stopped before them (the one
// that adds the finalizer, one with a Job running) learnt nothing of what
// the object waits for, so the condition keeps what the last pass that
// looked said, and stays unset until one has: a new object never claims
// its dependencies ready before they were checked.
func setDependenciesReady(p *Pass) {
	if w := p.OwnerWait; w != nil {
		status := metav1.ConditionUnknown
		if w.False {
			status = metav1.ConditionFalse
		}
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.DependenciesReadyCondition, Status: status, Reason: w.Reason, Message: w.Message})
		return
	}
	if !p.facts.dependenciesChecked {
		return
	}
	conditions.Set(p.Obj, metav1.Condition{Type: infrav1.DependenciesReadyCondition, Status: metav1.ConditionTrue, Reason: infrav1.DependenciesReadyReason})
}

// setIdentityAllowed: the credentials step's identity check; before the
// first one, Unknown/IdentityCheckFailed.
func setIdentityAllowed(p *Pass) {
	initial := &verdict{status: metav1.ConditionUnknown, reason: infrav1.IdentityCheckFailedReason}
	if v := credentialsVerdict(p, infrav1.IdentityAllowedCondition, initial, func(c *identity.Credentials) identity.Verdict { return c.Access.Verdict }); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.IdentityAllowedCondition, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// setCredentialsMirrored: the credentials step's mirror; before the first
// one, Unknown/MirrorPending.
func setCredentialsMirrored(p *Pass) {
	initial := &verdict{status: metav1.ConditionUnknown, reason: infrav1.MirrorPendingReason}
	if v := credentialsVerdict(p, infrav1.CredentialsMirroredCondition, initial, func(c *identity.Credentials) identity.Verdict { return c.Mirror.Verdict }); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.CredentialsMirroredCondition, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// setRunnerRBACReady: the credentials step's runner RBAC. RunnerRBACReady
// has no Unknown reason (reference-facts §1.6), so it has no initial
// value: it stays unset until the credentials step has a result, and Ready
// counts it Unknown until then.
func setRunnerRBACReady(p *Pass) {
	if v := credentialsVerdict(p, infrav1.RunnerRBACReadyCondition, nil, func(c *identity.Credentials) identity.Verdict { return c.RBAC.Verdict }); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.RunnerRBACReadyCondition, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// credentialsVerdict is what the credentials step found for condition t
// (of picks it); without a result this pass, initial when t is unset, nil
// to keep t as it is.
func credentialsVerdict(p *Pass, t string, initial *verdict, of func(*identity.Credentials) identity.Verdict) *verdict {
	var v *verdict
	if cr := p.facts.credentials; cr != nil {
		iv := of(cr)
		v = &verdict{iv.Status, iv.Reason, iv.Message}
	}
	return orInitial(p, t, v, initial)
}

// setApplyJobSucceeded covers the last apply or destroy Job (and a plan
// awaiting approval). In order: the act step's refusal of an apply,
// destroy or plan (a lease wait, an invalid policy or Job, a taken name,
// missing durable inputs at destroy); inputs too large; an identity the
// namespace may not use; an apply Job that vanished while it ran; the
// newest Job bookkept this pass; before any, Unknown/NoApplyYet.
func setApplyJobSucceeded(p *Pass) {
	const t = infrav1.ApplyJobSucceededCondition
	if v := orInitial(p, t, first(refusalOn(p, t), inputsTooLarge(p), identityRefused(p), vanishedApply(p), newestResult(p, t, applyResultVerdict)), &verdict{status: metav1.ConditionUnknown, reason: infrav1.NoApplyYetReason}); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// refusalOn is the verdict of the pass's refusal when it concerns an
// operation whose Job reports on t.
func refusalOn(p *Pass, t string) *verdict {
	r := p.facts.refusal
	if r == nil || jobs.OperationOf(r.op).Condition != t {
		return nil
	}
	v := refusalVerdict(r)
	return &v
}

// refusalVerdict is what a refusal says on its operation's condition.
func refusalVerdict(r *refusal) verdict {
	switch r.cause {
	case refusedLease:
		return verdict{metav1.ConditionUnknown, r.wait.Reason, r.wait.Message}
	case refusedJobPolicy:
		return verdict{metav1.ConditionFalse, infrav1.JobPolicyInvalidReason, r.detail}
	case refusedJobInvalid:
		return verdict{metav1.ConditionFalse, infrav1.JobInvalidReason, r.detail}
	case refusedJobNameTaken:
		return verdict{metav1.ConditionFalse, infrav1.JobNameTakenReason, r.detail}
	case refusedDurableMissing:
		msg := "the durable inputs Secret " + r.detail + " is missing"
		if r.op == infrav1.OperationDestroy {
			return verdict{metav1.ConditionFalse, infrav1.DestroyFailedReason, msg}
		}
		return verdict{metav1.ConditionUnknown, infrav1.DurableInputsMissingReason, msg}
	case refusedBackupNotFound:
		return verdict{metav1.ConditionFalse, infrav1.RestoreBackupNotFoundReason, "no state backup with the serial " + r.detail}
	}
	return verdict{metav1.ConditionUnknown, "", ""}
}

// inputsTooLarge: the rendered inputs are over the bound; no Job.
func inputsTooLarge(p *Pass) *verdict {
	if p.Inputs.Status != decide.InputsTooLarge {
		return nil
	}
	return &verdict{metav1.ConditionFalse, infrav1.InputsTooLargeReason, p.Inputs.Message}
}

// identityRefused: the identity may not be used from the namespace; no
// Job.
func identityRefused(p *Pass) *verdict {
	cr := p.facts.credentials
	if cr == nil || cr.Access.Allowed() || cr.Access.Verdict.Status != metav1.ConditionFalse {
		return nil
	}
	return &verdict{metav1.ConditionFalse, infrav1.IdentityNotAllowedReason, cr.Access.Verdict.Message}
}

// vanishedMessage is what an apply Job that vanished while it ran leaves
// on ApplyJobSucceeded and in its JobInterrupted event.
func vanishedMessage(job string) string {
	return "Job " + job + " disappeared while it ran and may have applied part of its change; an apply of the current inputs is due"
}

// vanishedApply (Retries and Backoff, "An apply Job deleted while it
// ran").
func vanishedApply(p *Pass) *verdict {
	if p.facts.vanished == "" {
		return nil
	}
	return &verdict{metav1.ConditionFalse, infrav1.ApplyFailedReason, vanishedMessage(p.facts.vanished)}
}

// newestResult is the verdict of the newest Job bookkept this pass whose
// operation reports on t and whose result says something (of).
func newestResult(p *Pass, t string, of func(r *jobResult) *verdict) *verdict {
	var v *verdict
	for i := range p.facts.results {
		r := &p.facts.results[i]
		if jobs.OperationOf(r.op).Condition != t {
			continue
		}
		if rv := of(r); rv != nil {
			v = rv
		}
	}
	return v
}

// resultVerdict is a finished Job's verdict on its operation's condition:
// its success, or its failure reason with the Job's detail; nil for an
// outcome that sets no reason (an interrupted run).
func resultVerdict(r *jobResult) *verdict {
	reason := r.c.Reason(r.op)
	switch {
	case reason == "":
		return nil
	case r.c.Outcome == jobs.OutcomeSucceeded:
		return &verdict{metav1.ConditionTrue, reason, ""}
	}
	return &verdict{metav1.ConditionFalse, reason, fmt.Sprintf("Job %s: %s", r.name, r.c.Detail)}
}

// applyResultVerdict: a plan recorded for approval (a plan Job's, or an
// approved apply's whose plan changed) is Unknown with the approve
// command; a succeeded apply or destroy notes what of its result was
// clamped.
func applyResultVerdict(r *jobResult) *verdict {
	if r.plan != nil {
		return &verdict{metav1.ConditionUnknown, r.plan.reason, r.plan.message}
	}
	if r.op == infrav1.OperationPlan {
		return nil
	}
	v := resultVerdict(r)
	if v != nil && v.status == metav1.ConditionTrue {
		v.message = clampedNote(r.c)
	}
	return v
}

// setStateReadable: in order, a foreign Secret that holds deletion back;
// a state decide found without the inputs hash it needs (unless the
// reading already found it lost); this pass's reading; before any,
// Unknown/StateNotFound.
func setStateReadable(p *Pass) {
	const t = infrav1.StateReadableCondition
	if v := orInitial(p, t, first(foreignState(p), stateWithoutHash(p), stateVerdict(p)), &verdict{status: metav1.ConditionUnknown, reason: infrav1.StateNotFoundReason}); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

func foreignState(p *Pass) *verdict {
	if len(p.facts.foreignState) == 0 {
		return nil
	}
	return &verdict{metav1.ConditionFalse, infrav1.StateSecretForeignReason,
		"Secret " + strings.Join(p.facts.foreignState, ", ") + " carries this object's state name but not CAPTF's owner labels for it; " +
			"it is never deleted, and the finalizer stays until it is removed or labelled"}
}

// stateWithoutHash: a TerraformMachine whose state carries no inputs
// hash: nothing recorded what was applied (Terraform State).
func stateWithoutHash(p *Pass) *verdict {
	if !p.facts.stateNoInputsHash || (p.facts.state != nil && p.facts.state.outcome == stateLost) {
		return nil
	}
	return &verdict{metav1.ConditionFalse, infrav1.StateLostReason,
		"the state in Secret " + state.SecretName(p.Suffix) + " records no inputs hash; restore a backup with " + infrav1.RestoreStateAnnotation}
}

func stateVerdict(p *Pass) *verdict {
	s := p.facts.state
	if s == nil {
		return nil
	}
	switch s.outcome {
	case stateFound:
		return &verdict{metav1.ConditionTrue, infrav1.StateReadReason, ""}
	case stateLost:
		missing := "is missing"
		if s.neverWritten {
			missing = "holds no state"
		}
		return &verdict{metav1.ConditionFalse, infrav1.StateLostReason,
			"the state Secret " + state.SecretName(p.Suffix) + " " + missing + "; restore a backup with " + infrav1.RestoreStateAnnotation}
	case stateUnreadable:
		return &verdict{metav1.ConditionFalse, s.reason, s.detail}
	}
	return &verdict{metav1.ConditionUnknown, infrav1.StateNotFoundReason, ""}
}

// setRestoreJobSucceeded: set only once a restore was asked for. In
// order: this pass's refusal of the restore (a lease wait, no such
// backup, an invalid or taken Job); the newest restore Job bookkept this
// pass.
func setRestoreJobSucceeded(p *Pass) {
	const t = infrav1.RestoreJobSucceededCondition
	v := first(refusalOn(p, t), newestResult(p, t, resultVerdict))
	if v == nil {
		return
	}
	conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
}

// setOutputsValid: this pass's verdict on the outputs; else, with no
// outputs read, a module known to lack contract outputs; before any,
// Unknown/OutputsPending.
func setOutputsValid(p *Pass) {
	const t = infrav1.OutputsValidCondition
	var v *verdict
	switch {
	case p.facts.outputs != nil:
		o := p.facts.outputs
		v = &verdict{metav1Status(o.Status), o.Reason, o.Message}
	case p.facts.outputsMissing:
		v = &verdict{metav1.ConditionFalse, infrav1.OutputsMissingReason,
			"the module does not declare the contract outputs " + strings.Join(p.facts.missingOutputs, ", ") + "; no Job runs until the module changes"}
	case unset(p, t):
		v = &verdict{status: metav1.ConditionUnknown, reason: infrav1.OutputsPendingReason}
	default:
		return
	}
	conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
}

// setInfrastructureHealthy: this pass's health reading; unset until the
// first.
func setInfrastructureHealthy(p *Pass) {
	if h := p.facts.health; h != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.InfrastructureHealthyCondition, Status: h.status, Reason: h.reason, Message: h.message})
	}
}

// setDriftJobSucceeded covers the last drift or refresh Job. In order:
// this pass's refusal of one (a lease wait, missing durable inputs, an
// invalid or taken Job); one started or running; the newest bookkept this
// pass; before any, Unknown/DriftNotChecked.
func setDriftJobSucceeded(p *Pass) {
	const t = infrav1.DriftJobSucceededCondition
	if v := orInitial(p, t, first(refusalOn(p, t), runningOn(p, t), newestResult(p, t, resultVerdict)), &verdict{status: metav1.ConditionUnknown, reason: infrav1.DriftNotCheckedReason}); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// runningOn: a Job started this pass, or found running, whose operation
// has a running reason on t.
func runningOn(p *Pass, t string) *verdict {
	name, op := "", infrav1.Operation("")
	switch {
	case p.facts.started != nil:
		name, op = p.facts.started.name, p.facts.started.op
	case p.facts.running != nil:
		name, op = p.facts.running.Name, infrav1.Operation(p.facts.running.Labels[infrav1.OpLabel])
	default:
		return nil
	}
	o := jobs.OperationOf(op)
	if o.Condition != t || o.Running == "" {
		return nil
	}
	return &verdict{metav1.ConditionUnknown, o.Running, "Job " + name + " is running"}
}

// setDriftDetected (Drift, "Report or remediate"). In order: a
// remediation apply started this pass (True/DriftRemediating); the newest
// finding of a Job bookkept this pass: a drift Job's (False/NoDrift, or
// True/DriftReported or DriftPending by the drift action), a remediation
// apply's (False/NoDrift when it succeeded, True/DriftPending when it
// failed, was blocked or its plan changed); before any,
// Unknown/DriftNotChecked.
func setDriftDetected(p *Pass) {
	const t = infrav1.DriftDetectedCondition
	var v *verdict
	if s := p.facts.started; s != nil && s.remediation {
		v = &verdict{metav1.ConditionTrue, infrav1.DriftRemediatingReason, "Job " + s.name + " remediates the drift"}
	} else {
		for i := range p.facts.results {
			if rv := driftFinding(&p.facts.results[i]); rv != nil {
				v = rv
			}
		}
	}
	if v = orInitial(p, t, v, &verdict{status: metav1.ConditionUnknown, reason: infrav1.DriftNotCheckedReason}); v != nil {
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: v.status, Reason: v.reason, Message: v.message})
	}
}

// driftFinding is what a finished Job says about drift, nil when
// nothing.
func driftFinding(r *jobResult) *verdict {
	succeeded := r.c.Outcome == jobs.OutcomeSucceeded
	switch {
	case r.remediation && succeeded:
		return &verdict{metav1.ConditionFalse, infrav1.NoDriftReason, "Job " + r.name + " remediated the drift"}
	case r.remediation && r.c.Reason(r.op) != "":
		return &verdict{metav1.ConditionTrue, infrav1.DriftPendingReason, fmt.Sprintf("Job %s did not remediate the drift: %s", r.name, r.c.Detail)}
	case r.op != infrav1.OperationDrift || !succeeded:
		return nil
	case !r.c.Result.DriftDetected:
		return &verdict{metav1.ConditionFalse, infrav1.NoDriftReason, fmt.Sprintf("Job %s found no drift", r.name)}
	}
	reason := infrav1.DriftReportedReason
	if r.remediate {
		reason = infrav1.DriftPendingReason
	}
	return &verdict{metav1.ConditionTrue, reason, driftFoundMessage(r)}
}

// driftFoundMessage is a drift Job's finding, for DriftDetected and its
// event.
func driftFoundMessage(r *jobResult) string {
	if d := r.c.Result.LastRun.Drift; d != nil {
		return fmt.Sprintf("Job %s found drift: %d to add, %d to change, %d to destroy", r.name, deref(d.Add), deref(d.Change), deref(d.Destroy))
	}
	return fmt.Sprintf("Job %s found drift", r.name)
}

// setDeletionBlocked (a kind with members: a TerraformCluster's):
// True/DependentsExist while the decision waits on the cluster's machines
// and pools; False/NotBlocked
// once the pass decided anything else with no Job active, and from the
// first reconcile.
func setDeletionBlocked(p *Pass) {
	const t = infrav1.DeletionBlockedCondition
	if !p.Obj.Capabilities().HasMembers {
		return
	}
	switch {
	case p.facts.acted && p.Decision.Reason == decide.ReasonDependentsExist:
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: infrav1.DependentsExistReason,
			Message: "waiting for the cluster's TerraformMachines and TerraformMachinePools to be deleted"})
	case (p.facts.acted && p.Active == nil && !p.paused && !p.jobCacheStale) || unset(p, t):
		conditions.Set(p.Obj, metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: infrav1.NotBlockedReason})
	}
}

// setEndpointAvailable (a provisioned TerraformCluster's): whether the
// module's output or the Cluster gives a valid control plane endpoint.
func setEndpointAvailable(p *Pass) {
	e := p.facts.endpoint
	switch {
	case e == nil:
	case *e:
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.EndpointAvailableCondition, Status: metav1.ConditionTrue, Reason: infrav1.EndpointAvailableReason})
	default:
		conditions.Set(p.Obj, metav1.Condition{Type: infrav1.EndpointAvailableCondition, Status: metav1.ConditionFalse, Reason: infrav1.WaitingForEndpointReason,
			Message: "neither the module's control_plane_endpoint output nor the Cluster's spec.controlPlaneEndpoint is a valid endpoint"})
	}
}

// setAutoscalingActive (a TerraformMachinePool's): what its adapter found
// of the MachinePool's autoscaler annotations.
func setAutoscalingActive(p *Pass) {
	a := p.facts.autoscaling
	if a == nil {
		return
	}
	status := metav1.ConditionFalse
	if a.Active {
		status = metav1.ConditionTrue
	}
	conditions.Set(p.Obj, metav1.Condition{Type: infrav1.AutoscalingActiveCondition, Status: status, Reason: a.Reason, Message: a.Message})
}

// setReady summarises the conditions the kind lists for its phase
// (reference-facts §1.1): Deleting has negative polarity; waiting reasons
// are Unknown so waiting never turns Ready False.
func setReady(p *Pass) error {
	return conditions.SetSummaryCondition(p.Obj, p.Obj, infrav1.ReadyCondition,
		conditions.ForConditionTypes(p.Kind.ReadyConditions(p.Provisioned())),
		conditions.NegativePolarityConditionTypes{infrav1.DeletingCondition},
		conditions.CustomMergeStrategy{MergeStrategy: conditions.DefaultMergeStrategy(
			conditions.GetPriorityFunc(conditions.GetDefaultMergePriorityFunc(infrav1.DeletingCondition)),
			conditions.ComputeReasonFunc(func(issues, unknown, _ []conditions.ConditionWithOwnerInfo) string {
				switch {
				case len(issues) > 0:
					return infrav1.NotReadyReason
				case len(unknown) > 0:
					return infrav1.ReadyUnknownReason
				}
				return infrav1.ReadyReason
			}),
		)},
	)
}
