package lifecycle

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// setterCase is one row of a setter's table: the facts of a pass (and the
// condition the object carried), and the condition the setter leaves.
type setterCase struct {
	name string
	// kind is the object's kind (TerraformCluster when empty).
	kind infrav1.WorkloadKind
	// deleting gives the object a deletion timestamp.
	deleting bool
	// before is the condition the object carried, nil for none.
	before *metav1.Condition
	// facts fills the pass's facts.
	facts func(p *Pass)
	// want is the condition after the setter (nil: unset); wantMessage a
	// part of its message.
	want        *metav1.Condition
	wantMessage string
}

func cnd(s metav1.ConditionStatus, reason string) *metav1.Condition {
	return &metav1.Condition{Status: s, Reason: reason}
}

// runSetterCases runs set on a pass made of each case's facts and checks
// condition t.
func runSetterCases(t *testing.T, ct string, set func(*Pass), cases []setterCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kind := c.kind
			if kind == "" {
				kind = infrav1.KindTerraformCluster
			}
			obj := kind.NewObject()
			obj.SetName("o")
			obj.SetNamespace("ns")
			obj.SetGeneration(3)
			if c.deleting {
				now := metav1.Now()
				obj.SetDeletionTimestamp(&now)
			}
			if c.before != nil {
				b := *c.before
				b.Type = ct
				obj.SetConditions([]metav1.Condition{b})
			}
			p := &Pass{Obj: obj, Kind: kind, Suffix: "sfx"}
			if c.facts != nil {
				c.facts(p)
			}
			set(p)
			got := conditions.Get(obj, ct)
			switch {
			case c.want == nil && got != nil:
				t.Fatalf("%s set to %s/%s (%s), want it unset", ct, got.Status, got.Reason, got.Message)
			case c.want == nil:
				return
			case got == nil:
				t.Fatalf("%s unset, want %s/%s", ct, c.want.Status, c.want.Reason)
			case got.Status != c.want.Status || got.Reason != c.want.Reason:
				t.Fatalf("%s = %s/%s (%s), want %s/%s", ct, got.Status, got.Reason, got.Message, c.want.Status, c.want.Reason)
			case !strings.Contains(got.Message, c.wantMessage):
				t.Fatalf("%s message %q, want it to contain %q", ct, got.Message, c.wantMessage)
			case c.before == nil && got.ObservedGeneration != 3:
				t.Fatalf("%s observedGeneration %d, want the object's 3", ct, got.ObservedGeneration)
			}
		})
	}
}

func finished(op infrav1.Operation, out jobs.Outcome, detail string) jobResult {
	return jobResult{name: "j-" + string(op), op: op, c: &jobs.Classification{Outcome: out, Detail: detail}}
}

func withResults(rs ...jobResult) func(p *Pass) {
	return func(p *Pass) { p.facts.results = append(p.facts.results, rs...) }
}

func leaseWait(op infrav1.Operation) *refusal {
	return &refusal{op: op, cause: refusedLease, wait: &Wait{Reason: infrav1.WaitingForRunLeaseReason, Message: "run lease held by Job x"}}
}

func credentials(access, mirror, rbac identity.Verdict) *identity.Credentials {
	return &identity.Credentials{
		Access: identity.Access{Verdict: access},
		Mirror: identity.MirrorResult{Verdict: mirror},
		RBAC:   identity.RBACResult{Verdict: rbac},
	}
}

var (
	allowed   = identity.Verdict{Status: metav1.ConditionTrue, Reason: infrav1.IdentityAllowedReason, Message: "allowed"}
	notInNS   = identity.Verdict{Status: metav1.ConditionFalse, Reason: infrav1.NamespaceNotAllowedReason, Message: "does not allow namespace ns"}
	mirrored  = identity.Verdict{Status: metav1.ConditionTrue, Reason: infrav1.MirroredReason}
	pending   = identity.Verdict{Status: metav1.ConditionUnknown, Reason: infrav1.MirrorPendingReason, Message: "Waiting for IdentityAllowed"}
	rbacReady = identity.Verdict{Status: metav1.ConditionTrue, Reason: infrav1.RBACReadyReason}
	rbacNotIn = identity.Verdict{Status: metav1.ConditionFalse, Reason: infrav1.ServiceAccountNotOptedInReason, Message: "lacks the label"}
)

func TestSetPaused(t *testing.T) {
	runSetterCases(t, infrav1.PausedCondition, setPaused, []setterCase{
		{name: "§1.14: True/Paused when the object or its Cluster is paused",
			facts: func(p *Pass) { p.facts.pausedRead, p.paused = true, true }, want: cnd(metav1.ConditionTrue, infrav1.PausedReason)},
		{name: "§1.14: False/NotPaused otherwise",
			facts: func(p *Pass) { p.facts.pausedRead = true }, want: cnd(metav1.ConditionFalse, infrav1.NotPausedReason)},
		{name: "set on the first reconcile, while the object waits for its owner (the preamble read the pause)",
			facts: func(p *Pass) { p.facts.pausedRead, p.OwnerWait = true, &Wait{Reason: infrav1.WaitingForOwnerReason} },
			want:  cnd(metav1.ConditionFalse, infrav1.NotPausedReason)},
		{name: "a pass that never read the pause (it failed before) leaves Paused as it was",
			before: cnd(metav1.ConditionTrue, infrav1.PausedReason), want: cnd(metav1.ConditionTrue, infrav1.PausedReason)},
	})
}

func TestSetDeleting(t *testing.T) {
	destroy := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "o-destroy-1", Labels: map[string]string{infrav1.OpLabel: "destroy"}}}
	decided := func(r decide.Reason) func(p *Pass) {
		return func(p *Pass) { p.facts.acted, p.Decision.Reason = true, r }
	}
	runSetterCases(t, infrav1.DeletingCondition, setDeleting, []setterCase{
		{name: "§1.14: False/NotDeleting while the object has no deletion timestamp",
			want: cnd(metav1.ConditionFalse, infrav1.NotDeletingReason)},
		{name: "The Reconcile Lifecycle: the message names the destroy Job that runs", deleting: true,
			facts: func(p *Pass) { p.Active = destroy },
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "destroy Job o-destroy-1 running"},
		{name: "the message names the destroy Job this pass started", deleting: true,
			facts: func(p *Pass) { p.facts.started = &startedJob{name: "o-destroy-2", op: infrav1.OperationDestroy} },
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "destroy Job o-destroy-2 started"},
		{name: "Deletion order: a cluster waits for its machines and pools", deleting: true,
			facts: decided(decide.ReasonDependentsExist),
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "waiting for the cluster's TerraformMachines and TerraformMachinePools to be deleted"},
		{name: "Lifecycle walkthroughs: a destroy that waits on credentials shows that in Deleting", deleting: true,
			facts: func(p *Pass) {
				decided(decide.Reason(infrav1.NamespaceNotAllowedReason))(p)
				p.CredentialsWait = infrav1.NamespaceNotAllowedReason
				p.facts.credentials = credentials(notInNS, pending, rbacReady)
			},
			want: cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "waiting for credentials: NamespaceNotAllowed: does not allow namespace ns"},
		{name: "Conditions: an operator decision on lost state", deleting: true,
			facts: decided(decide.ReasonStateLost),
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "lost state"},
		{name: "a destroy waiting for its run lease says so", deleting: true,
			facts: func(p *Pass) { p.facts.acted, p.facts.refusal = true, leaseWait(infrav1.OperationDestroy) },
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "destroy cannot start: WaitingForRunLease"},
		{name: "a foreign state Secret holds the finalizer", deleting: true,
			facts: func(p *Pass) { p.facts.acted, p.facts.foreignState = true, []string{"tfstate-default-sfx"} },
			want:  cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "waiting for Secret tfstate-default-sfx"},
		{name: "reference-facts §1.14: DeletionCompleted once cleanup is done; no state: removing the finalizer", deleting: true,
			facts: func(p *Pass) { p.dropFinalizer, p.Decision.Reason = true, decide.ReasonNoStateToDestroy },
			want:  cnd(metav1.ConditionTrue, infrav1.DeletionCompletedReason), wantMessage: "no state to destroy: deletion completed, removing the finalizer"},
		{name: "a pass that decided nothing keeps what the last one said", deleting: true,
			before: &metav1.Condition{Status: metav1.ConditionTrue, Reason: infrav1.DeletingReason, Message: "destroy Job x running"},
			want:   cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "destroy Job x running"},
		{name: "the first deleting pass that decided nothing says deletion started", deleting: true,
			before: cnd(metav1.ConditionFalse, infrav1.NotDeletingReason),
			want:   cnd(metav1.ConditionTrue, infrav1.DeletingReason), wantMessage: "deletion started"},
	})
}

func TestSetDependenciesReady(t *testing.T) {
	runSetterCases(t, infrav1.DependenciesReadyCondition, setDependenciesReady, []setterCase{
		{name: "§1.3: True/DependenciesReady when everything awaited exists",
			facts: func(p *Pass) { p.facts.dependenciesChecked = true },
			want:  cnd(metav1.ConditionTrue, infrav1.DependenciesReadyReason)},
		{name: "unset while no pass has checked the inputs (the finalizer's pass)",
			want: nil},
		{name: "a pass that did not build the inputs keeps the last verdict",
			before: cnd(metav1.ConditionUnknown, infrav1.WaitingForClusterInfrastructureReason),
			want:   cnd(metav1.ConditionUnknown, infrav1.WaitingForClusterInfrastructureReason)},
		{name: "§1.3: Unknown for a wait (WaitingForOwner)",
			facts: func(p *Pass) { p.OwnerWait = &Wait{Reason: infrav1.WaitingForOwnerReason, Message: "no owner yet"} },
			want:  cnd(metav1.ConditionUnknown, infrav1.WaitingForOwnerReason), wantMessage: "no owner yet"},
		{name: "§1.3: False for a definite problem (OwnerMismatch)",
			facts: func(p *Pass) { p.OwnerWait = &Wait{Reason: infrav1.OwnerMismatchReason, Message: "uid", False: true} },
			want:  cnd(metav1.ConditionFalse, infrav1.OwnerMismatchReason)},
	})
}

func TestSetCredentialsConditions(t *testing.T) {
	withCreds := func(p *Pass) { p.facts.credentials = credentials(notInNS, pending, rbacNotIn) }
	runSetterCases(t, infrav1.IdentityAllowedCondition, setIdentityAllowed, []setterCase{
		{name: "§1.4: the identity check's verdict", facts: withCreds, want: cnd(metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason), wantMessage: "does not allow"},
		{name: "§1.4: Unknown/IdentityCheckFailed before the first check", want: cnd(metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason)},
		{name: "a pass without the credentials step keeps the last verdict", before: cnd(metav1.ConditionTrue, infrav1.IdentityAllowedReason),
			want: cnd(metav1.ConditionTrue, infrav1.IdentityAllowedReason)},
	})
	runSetterCases(t, infrav1.CredentialsMirroredCondition, setCredentialsMirrored, []setterCase{
		{name: "§1.5: Unknown/MirrorPending whenever IdentityAllowed is False", facts: withCreds, want: cnd(metav1.ConditionUnknown, infrav1.MirrorPendingReason)},
		{name: "§1.5: True/Mirrored", facts: func(p *Pass) { p.facts.credentials = credentials(allowed, mirrored, rbacReady) }, want: cnd(metav1.ConditionTrue, infrav1.MirroredReason)},
		{name: "§1.5: Unknown/MirrorPending before the first mirror", want: cnd(metav1.ConditionUnknown, infrav1.MirrorPendingReason)},
	})
	runSetterCases(t, infrav1.RunnerRBACReadyCondition, setRunnerRBACReady, []setterCase{
		{name: "§1.6: the runner RBAC's verdict", facts: withCreds, want: cnd(metav1.ConditionFalse, infrav1.ServiceAccountNotOptedInReason)},
		{name: "§1.6 defines no Unknown reason (RBACFailed is False only): unset until the credentials step has a result"},
		{name: "a pass without the credentials step keeps the last verdict", before: cnd(metav1.ConditionTrue, infrav1.RBACReadyReason),
			want: cnd(metav1.ConditionTrue, infrav1.RBACReadyReason)},
	})
}

func TestSetApplyJobSucceeded(t *testing.T) {
	applied := finished(infrav1.OperationApply, jobs.OutcomeSucceeded, "")
	failed := finished(infrav1.OperationApply, jobs.OutcomeFailed, "step apply failed")
	planned := finished(infrav1.OperationPlan, jobs.OutcomeSucceeded, "")
	planned.plan = &planRecord{reason: infrav1.PlanAwaitingApprovalReason, message: "approve with: kubectl annotate"}
	runSetterCases(t, infrav1.ApplyJobSucceededCondition, setApplyJobSucceeded, []setterCase{
		{name: "§1.7: Unknown/NoApplyYet before the first apply completes", want: cnd(metav1.ConditionUnknown, infrav1.NoApplyYetReason)},
		{name: "§1.7: once one has completed it stays what the last Job said", before: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason),
			want: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason)},
		{name: "§1.7: True/ApplySucceeded", facts: withResults(applied), want: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason)},
		{name: "§1.7: True/DestroySucceeded", facts: withResults(finished(infrav1.OperationDestroy, jobs.OutcomeSucceeded, "")),
			want: cnd(metav1.ConditionTrue, infrav1.DestroySucceededReason)},
		{name: "§1.7: False/ApplyFailed names the Job and its detail", facts: withResults(failed),
			want: cnd(metav1.ConditionFalse, infrav1.ApplyFailedReason), wantMessage: "Job j-apply: step apply failed"},
		{name: "§1.7: False/JobDeadlineExceeded", facts: withResults(finished(infrav1.OperationApply, jobs.OutcomeDeadline, "deadline")),
			want: cnd(metav1.ConditionFalse, infrav1.JobDeadlineExceededReason)},
		{name: "the newest Job bookkept this pass wins", facts: withResults(failed, applied), want: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason)},
		{name: "an interrupted run sets no reason of its own", before: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason),
			facts: withResults(finished(infrav1.OperationApply, jobs.OutcomeInterrupted, "evicted")), want: cnd(metav1.ConditionTrue, infrav1.ApplySucceededReason)},
		{name: "§1.7: Unknown/PlanAwaitingApproval with the approve command", facts: withResults(planned),
			want: cnd(metav1.ConditionUnknown, infrav1.PlanAwaitingApprovalReason), wantMessage: "approve with"},
		{name: "drift and restore Jobs do not report here", facts: withResults(finished(infrav1.OperationDrift, jobs.OutcomeFailed, "x")),
			want: cnd(metav1.ConditionUnknown, infrav1.NoApplyYetReason)},
		{name: "Retries and Backoff: an apply Job that vanished while it ran is False/ApplyFailed, over the Jobs bookkept before it",
			facts: func(p *Pass) { withResults(applied)(p); p.facts.vanished = "o-apply-2" },
			want:  cnd(metav1.ConditionFalse, infrav1.ApplyFailedReason), wantMessage: "Job o-apply-2 disappeared while it ran"},
		{name: "§1.7: False/IdentityNotAllowed outranks a Job result",
			facts: func(p *Pass) { withResults(applied)(p); p.facts.credentials = credentials(notInNS, pending, rbacReady) },
			want:  cnd(metav1.ConditionFalse, infrav1.IdentityNotAllowedReason)},
		{name: "§1.7: False/InputsTooLarge outranks a refused identity",
			facts: func(p *Pass) {
				p.facts.credentials = credentials(notInNS, pending, rbacReady)
				p.Inputs = InputsOutcome{Status: decide.InputsTooLarge, Message: "1000001 bytes"}
			},
			want: cnd(metav1.ConditionFalse, infrav1.InputsTooLargeReason), wantMessage: "1000001 bytes"},
		{name: "§1.7: Unknown/WaitingForRunLease: a lease wait outranks everything else",
			facts: func(p *Pass) {
				withResults(applied)(p)
				p.Inputs = InputsOutcome{Status: decide.InputsTooLarge}
				p.facts.refusal = leaseWait(infrav1.OperationApply)
			},
			want: cnd(metav1.ConditionUnknown, infrav1.WaitingForRunLeaseReason)},
		{name: "§1.7: False/JobPolicyInvalid", facts: func(p *Pass) {
			p.facts.refusal = &refusal{op: infrav1.OperationApply, cause: refusedJobPolicy, detail: "lockTimeoutSeconds"}
		}, want: cnd(metav1.ConditionFalse, infrav1.JobPolicyInvalidReason), wantMessage: "lockTimeoutSeconds"},
		{name: "§1.7: False/DestroyFailed when the durable inputs are missing at destroy", deleting: true, facts: func(p *Pass) {
			p.facts.refusal = &refusal{op: infrav1.OperationDestroy, cause: refusedDurableMissing, detail: "captf-inputs-tc-o"}
		}, want: cnd(metav1.ConditionFalse, infrav1.DestroyFailedReason), wantMessage: "captf-inputs-tc-o is missing"},
		{name: "a drift Job's lease wait is not reported here", facts: func(p *Pass) { p.facts.refusal = leaseWait(infrav1.OperationDrift) },
			want: cnd(metav1.ConditionUnknown, infrav1.NoApplyYetReason)},
	})
}

func TestSetStateReadable(t *testing.T) {
	read := func(s stateReading) func(p *Pass) { return func(p *Pass) { p.facts.state = &s } }
	runSetterCases(t, infrav1.StateReadableCondition, setStateReadable, []setterCase{
		{name: "§1.8: Unknown/StateNotFound before any state", want: cnd(metav1.ConditionUnknown, infrav1.StateNotFoundReason)},
		{name: "§1.8: True/StateRead", facts: read(stateReading{outcome: stateFound}), want: cnd(metav1.ConditionTrue, infrav1.StateReadReason)},
		{name: "§1.8: Unknown/StateNotFound when no state exists yet", before: cnd(metav1.ConditionTrue, infrav1.StateReadReason),
			facts: read(stateReading{outcome: stateNotFound}), want: cnd(metav1.ConditionUnknown, infrav1.StateNotFoundReason)},
		{name: "§1.8: False/StateLost names the Secret and the restore annotation", facts: read(stateReading{outcome: stateLost}),
			want: cnd(metav1.ConditionFalse, infrav1.StateLostReason), wantMessage: "is missing; restore a backup with " + infrav1.RestoreStateAnnotation},
		{name: "§1.8: StateLost of a base Secret without tfstate", facts: read(stateReading{outcome: stateLost, neverWritten: true}),
			want: cnd(metav1.ConditionFalse, infrav1.StateLostReason), wantMessage: "holds no state"},
		{name: "§1.8: False/StateLocked with the holder", facts: read(stateReading{outcome: stateUnreadable, reason: infrav1.StateLockedReason, detail: "held by alice"}),
			want: cnd(metav1.ConditionFalse, infrav1.StateLockedReason), wantMessage: "held by alice"},
		{name: "§1.8: StateLost for a TerraformMachine state without inputs hash", kind: infrav1.KindTerraformMachine,
			facts: func(p *Pass) { read(stateReading{outcome: stateFound})(p); p.facts.stateNoInputsHash = true },
			want:  cnd(metav1.ConditionFalse, infrav1.StateLostReason), wantMessage: "records no inputs hash"},
		{name: "a state already found lost keeps its own message", kind: infrav1.KindTerraformMachine,
			facts: func(p *Pass) { read(stateReading{outcome: stateLost})(p); p.facts.stateNoInputsHash = true },
			want:  cnd(metav1.ConditionFalse, infrav1.StateLostReason), wantMessage: "is missing"},
		{name: "a foreign state Secret is never deleted and outranks the reading", deleting: true,
			facts: func(p *Pass) { read(stateReading{outcome: stateFound})(p); p.facts.foreignState = []string{"s1"} },
			want:  cnd(metav1.ConditionFalse, infrav1.StateSecretForeignReason), wantMessage: "Secret s1"},
		{name: "a pass that read no state keeps the last reading", before: cnd(metav1.ConditionFalse, infrav1.StateCorruptReason),
			want: cnd(metav1.ConditionFalse, infrav1.StateCorruptReason)},
	})
}

func TestSetRestoreJobSucceeded(t *testing.T) {
	runSetterCases(t, infrav1.RestoreJobSucceededCondition, setRestoreJobSucceeded, []setterCase{
		{name: "§1.9: set only once a restore has been requested"},
		{name: "§1.9: True/StateRestored", facts: withResults(finished(infrav1.OperationRestore, jobs.OutcomeSucceeded, "")),
			want: cnd(metav1.ConditionTrue, infrav1.StateRestoredReason)},
		{name: "§1.9: False/RestoreFailed", facts: withResults(finished(infrav1.OperationRestore, jobs.OutcomeDeadline, "deadline")),
			want: cnd(metav1.ConditionFalse, infrav1.RestoreFailedReason)},
		{name: "§1.9: False/RestoreBackupNotFound", facts: func(p *Pass) {
			p.facts.refusal = &refusal{op: infrav1.OperationRestore, cause: refusedBackupNotFound, detail: `"7"`}
		}, want: cnd(metav1.ConditionFalse, infrav1.RestoreBackupNotFoundReason), wantMessage: `serial "7"`},
		{name: "§1.9: lease waits as for apply", facts: func(p *Pass) { p.facts.refusal = leaseWait(infrav1.OperationRestore) },
			want: cnd(metav1.ConditionUnknown, infrav1.WaitingForRunLeaseReason)},
	})
}

func TestSetOutputsValid(t *testing.T) {
	runSetterCases(t, infrav1.OutputsValidCondition, setOutputsValid, []setterCase{
		{name: "§1.10: Unknown/OutputsPending before any reading", want: cnd(metav1.ConditionUnknown, infrav1.OutputsPendingReason)},
		{name: "§1.10: the decode verdict", facts: func(p *Pass) {
			p.facts.outputs = &contract.Verdict{Status: contract.StatusFalse, Reason: infrav1.ProviderIDChangedReason, Message: "changed"}
		}, want: cnd(metav1.ConditionFalse, infrav1.ProviderIDChangedReason)},
		{name: "§1.10: False/OutputsMissing from the decision when no outputs were read", facts: func(p *Pass) {
			p.facts.outputsMissing, p.facts.missingOutputs = true, []string{"health"}
		}, want: cnd(metav1.ConditionFalse, infrav1.OutputsMissingReason), wantMessage: "contract outputs health"},
		{name: "a pass without outputs keeps the last verdict", before: cnd(metav1.ConditionTrue, infrav1.OutputsValidReason),
			want: cnd(metav1.ConditionTrue, infrav1.OutputsValidReason)},
	})
}

func TestSetInfrastructureHealthy(t *testing.T) {
	runSetterCases(t, infrav1.InfrastructureHealthyCondition, setInfrastructureHealthy, []setterCase{
		{name: "§1.11: unset until the first reading"},
		{name: "§1.11: the reading, with the module's message", facts: func(p *Pass) {
			p.facts.health = &verdict{status: metav1.ConditionFalse, reason: infrav1.InstanceDegradedReason, message: "disk"}
		}, want: cnd(metav1.ConditionFalse, infrav1.InstanceDegradedReason), wantMessage: "disk"},
		{name: "a pass without a reading keeps the last", before: cnd(metav1.ConditionTrue, infrav1.HealthyReason),
			want: cnd(metav1.ConditionTrue, infrav1.HealthyReason)},
	})
}

func TestSetDriftJobSucceeded(t *testing.T) {
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "o-drift-1", Labels: map[string]string{infrav1.OpLabel: "drift"}}}
	runSetterCases(t, infrav1.DriftJobSucceededCondition, setDriftJobSucceeded, []setterCase{
		{name: "§1.12: Unknown/DriftNotChecked before the first check", want: cnd(metav1.ConditionUnknown, infrav1.DriftNotCheckedReason)},
		{name: "§1.12: True/DriftChecked (refresh)", facts: withResults(finished(infrav1.OperationRefresh, jobs.OutcomeSucceeded, "")),
			want: cnd(metav1.ConditionTrue, infrav1.DriftCheckedReason)},
		{name: "§1.12: False/DriftJobFailed", facts: withResults(finished(infrav1.OperationDrift, jobs.OutcomeFailed, "boom")),
			want: cnd(metav1.ConditionFalse, infrav1.DriftJobFailedReason), wantMessage: "boom"},
		{name: "§1.12: False/DriftJobDeadlineExceeded", facts: withResults(finished(infrav1.OperationDrift, jobs.OutcomeDeadline, "")),
			want: cnd(metav1.ConditionFalse, infrav1.DriftJobDeadlineExceededReason)},
		{name: "§1.12: Unknown/DriftJobRunning while one runs", facts: func(p *Pass) { p.facts.running = running },
			want: cnd(metav1.ConditionUnknown, infrav1.DriftJobRunningReason), wantMessage: "Job o-drift-1 is running"},
		{name: "§1.12: Unknown/DriftJobRunning once this pass started one, over the result before it", facts: func(p *Pass) {
			withResults(finished(infrav1.OperationDrift, jobs.OutcomeSucceeded, ""))(p)
			p.facts.started = &startedJob{name: "o-refresh-2", op: infrav1.OperationRefresh}
		}, want: cnd(metav1.ConditionUnknown, infrav1.DriftJobRunningReason)},
		{name: "a running apply says nothing here", before: cnd(metav1.ConditionTrue, infrav1.DriftCheckedReason),
			facts: func(p *Pass) { p.facts.started = &startedJob{name: "a", op: infrav1.OperationApply} }, want: cnd(metav1.ConditionTrue, infrav1.DriftCheckedReason)},
		{name: "§1.12: Unknown/WaitingForRunLease", facts: func(p *Pass) { p.facts.refusal = leaseWait(infrav1.OperationRefresh) },
			want: cnd(metav1.ConditionUnknown, infrav1.WaitingForRunLeaseReason)},
		{name: "§1.12: Unknown/DurableInputsMissing", facts: func(p *Pass) {
			p.facts.refusal = &refusal{op: infrav1.OperationDrift, cause: refusedDurableMissing, detail: "captf-inputs-tm-o"}
		}, want: cnd(metav1.ConditionUnknown, infrav1.DurableInputsMissingReason), wantMessage: "captf-inputs-tm-o"},
	})
}

func TestSetDriftDetected(t *testing.T) {
	found := finished(infrav1.OperationDrift, jobs.OutcomeSucceeded, "")
	found.c.Result.DriftDetected = true
	remediate := found
	remediate.remediate = true
	remediated := finished(infrav1.OperationApply, jobs.OutcomeSucceeded, "")
	remediated.remediation = true
	blocked := finished(infrav1.OperationApply, jobs.OutcomeBlocked, "needs approval")
	blocked.remediation = true
	runSetterCases(t, infrav1.DriftDetectedCondition, setDriftDetected, []setterCase{
		{name: "§1.13: Unknown/DriftNotChecked before the first check", want: cnd(metav1.ConditionUnknown, infrav1.DriftNotCheckedReason)},
		{name: "§1.13: False/NoDrift", facts: withResults(finished(infrav1.OperationDrift, jobs.OutcomeSucceeded, "")),
			want: cnd(metav1.ConditionFalse, infrav1.NoDriftReason), wantMessage: "found no drift"},
		{name: "§1.13: True/DriftReported with action Report", facts: withResults(found),
			want: cnd(metav1.ConditionTrue, infrav1.DriftReportedReason), wantMessage: "found drift"},
		{name: "§1.13: True/DriftPending with action Remediate", facts: withResults(remediate), want: cnd(metav1.ConditionTrue, infrav1.DriftPendingReason)},
		{name: "§1.13: True/DriftRemediating while the remediation apply runs", facts: func(p *Pass) {
			withResults(remediate)(p)
			p.facts.started = &startedJob{name: "o-apply-3", op: infrav1.OperationApply, remediation: true}
		}, want: cnd(metav1.ConditionTrue, infrav1.DriftRemediatingReason)},
		{name: "Drift: a remediation apply that succeeded clears to False/NoDrift at once", before: cnd(metav1.ConditionTrue, infrav1.DriftRemediatingReason),
			facts: withResults(remediated), want: cnd(metav1.ConditionFalse, infrav1.NoDriftReason), wantMessage: "remediated the drift"},
		{name: "Drift: a remediation that was blocked falls back to True/DriftPending", before: cnd(metav1.ConditionTrue, infrav1.DriftRemediatingReason),
			facts: withResults(blocked), want: cnd(metav1.ConditionTrue, infrav1.DriftPendingReason), wantMessage: "needs approval"},
		{name: "a failed drift Job leaves the finding as it was", before: cnd(metav1.ConditionTrue, infrav1.DriftReportedReason),
			facts: withResults(finished(infrav1.OperationDrift, jobs.OutcomeFailed, "x")), want: cnd(metav1.ConditionTrue, infrav1.DriftReportedReason)},
	})
}

func TestSetDeletionBlocked(t *testing.T) {
	decided := func(r decide.Reason) func(p *Pass) {
		return func(p *Pass) { p.facts.acted, p.Decision.Reason = true, r }
	}
	runSetterCases(t, infrav1.DeletionBlockedCondition, setDeletionBlocked, []setterCase{
		{name: "§1.14: False/NotBlocked from the first reconcile", want: cnd(metav1.ConditionFalse, infrav1.NotBlockedReason)},
		{name: "§1.14: True/DependentsExist while the destroy waits for machines and pools", deleting: true,
			facts: decided(decide.ReasonDependentsExist), want: cnd(metav1.ConditionTrue, infrav1.DependentsExistReason), wantMessage: "to be deleted"},
		{name: "False/NotBlocked once the decision is anything else", deleting: true, before: cnd(metav1.ConditionTrue, infrav1.DependentsExistReason),
			facts: decided(decide.ReasonDeleting), want: cnd(metav1.ConditionFalse, infrav1.NotBlockedReason)},
		{name: "unchanged while a Job is active", deleting: true, before: cnd(metav1.ConditionTrue, infrav1.DependentsExistReason),
			facts: func(p *Pass) { decided(decide.ReasonJobRunning)(p); p.Active = &batchv1.Job{} }, want: cnd(metav1.ConditionTrue, infrav1.DependentsExistReason)},
		{name: "§1.14: a TerraformCluster's only", kind: infrav1.KindTerraformMachine},
	})
}

func TestSetEndpointAvailable(t *testing.T) {
	yes, no := true, false
	runSetterCases(t, infrav1.EndpointAvailableCondition, setEndpointAvailable, []setterCase{
		{name: "§1.14: True/EndpointAvailable", facts: func(p *Pass) { p.ObserveEndpoint(yes) }, want: cnd(metav1.ConditionTrue, infrav1.EndpointAvailableReason)},
		{name: "§1.14: False/WaitingForEndpoint", facts: func(p *Pass) { p.ObserveEndpoint(no) }, want: cnd(metav1.ConditionFalse, infrav1.WaitingForEndpointReason), wantMessage: "valid endpoint"},
		{name: "unset before provisioned (no finding)"},
	})
}

func TestSetAutoscalingActive(t *testing.T) {
	runSetterCases(t, infrav1.AutoscalingActiveCondition, setAutoscalingActive, []setterCase{
		{name: "§1.14: True/ReplicasManagedByModule", kind: infrav1.KindTerraformMachinePool, facts: func(p *Pass) {
			p.ObserveAutoscaling(Autoscaling{Active: true, Reason: infrav1.ReplicasManagedByModuleReason, Message: "min 1, max 3"})
		}, want: cnd(metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason), wantMessage: "min 1, max 3"},
		{name: "§1.14: False/AutoscalingDisabled", kind: infrav1.KindTerraformMachinePool, facts: func(p *Pass) {
			p.ObserveAutoscaling(Autoscaling{Reason: infrav1.AutoscalingDisabledReason})
		}, want: cnd(metav1.ConditionFalse, infrav1.AutoscalingDisabledReason)},
		{name: "unset without a finding", kind: infrav1.KindTerraformMachinePool},
	})
}

func TestSetReady(t *testing.T) {
	set := func(ct string, s metav1.ConditionStatus) func(p *Pass) {
		return func(p *Pass) {
			p.SetProvisioned()
			conditions.Set(p.Obj, metav1.Condition{Type: ct, Status: s, Reason: "R"})
		}
	}
	both := func(fs ...func(*Pass)) func(*Pass) {
		return func(p *Pass) {
			for _, f := range fs {
				f(p)
			}
		}
	}
	ready := func(p *Pass) { _ = setReady(p) }
	runSetterCases(t, infrav1.ReadyCondition, ready, []setterCase{
		{name: "§1.1: True/Ready when every input is healthy",
			facts: both(set(infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue), set(infrav1.DeletingCondition, metav1.ConditionFalse)),
			want:  cnd(metav1.ConditionTrue, infrav1.ReadyReason)},
		{name: "§1.1: Deleting has negative polarity: False/NotReady while deleting",
			facts: both(set(infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue), set(infrav1.DeletingCondition, metav1.ConditionTrue)),
			want:  cnd(metav1.ConditionFalse, infrav1.NotReadyReason)},
		{name: "§1.1: an Unknown input gives Ready=Unknown/ReadyUnknown",
			facts: both(set(infrav1.InfrastructureHealthyCondition, metav1.ConditionUnknown), set(infrav1.DeletingCondition, metav1.ConditionFalse)),
			want:  cnd(metav1.ConditionUnknown, infrav1.ReadyUnknownReason)},
		{name: "§1.1: DriftDetected never feeds Ready",
			facts: both(set(infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue), set(infrav1.DeletingCondition, metav1.ConditionFalse),
				set(infrav1.DriftDetectedCondition, metav1.ConditionTrue)),
			want: cnd(metav1.ConditionTrue, infrav1.ReadyReason)},
	})
}
