package lifecycle

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// A pass never writes a condition onto the object while it runs. Each step
// records what it found as a fact about a condition, with the weight of
// what found it; computeConditions, in the status step, writes every
// condition once from those facts, the defaults and the conditions the
// object carried, and then summarises Ready. So the patch helper's
// snapshot always sees the object as it was read, every "before" a step
// compares with is the stored condition, and which finding wins is decided
// in one place instead of by the order the steps happen to run in.

// weight orders the facts recorded about one condition in a pass: the
// heaviest wins; between facts of one weight, the one recorded last.
type weight int

const (
	// fromReading: a reading of this pass (state, outputs, health,
	// credentials, owner).
	fromReading weight = iota
	// fromJobResult: a Job bookkept this pass reported it.
	fromJobResult
	// fromJobStart: a Job this pass started or found running.
	fromJobStart
	// fromRefusal: this pass cannot run the operation (a lease wait, an
	// invalid Job policy, inputs too large, a refused identity, missing
	// durable inputs).
	fromRefusal
)

type fact struct {
	c metav1.Condition
	w weight
}

// record notes a fact about condition t; the heaviest fact of the pass
// becomes the condition.
func (p *Pass) record(w weight, t string, status metav1.ConditionStatus, reason, message string) {
	if p.facts == nil {
		p.facts = map[string]fact{}
	}
	if cur, ok := p.facts[t]; ok && cur.w > w {
		return
	}
	p.facts[t] = fact{w: w, c: metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}}
}

// SetCondition lets an adapter record what its own step observed.
func (p *Pass) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	p.record(fromReading, t, status, reason, message)
}

// Condition is condition t as this pass sees it: what the pass recorded,
// else what the object carried when the pass read it; nil when neither.
func (p *Pass) Condition(t string) *metav1.Condition {
	if f, ok := p.facts[t]; ok {
		c := f.c
		return &c
	}
	return p.Before(t)
}

// Before is condition t as the object carried it when the pass read it,
// nil when unset.
func (p *Pass) Before(t string) *metav1.Condition {
	if c, ok := p.before[t]; ok {
		return &c
	}
	return nil
}

// snapshotConditions keeps the conditions the object carries as the pass
// read it.
func snapshotConditions(p *Pass) {
	p.before = map[string]metav1.Condition{}
	for _, c := range p.Obj.GetConditions() {
		p.before[c.Type] = c
	}
}

// ownedConditions are every condition the flow and the kinds set; the patch
// helper resolves conflicts on them in the flow's favour.
var ownedConditions = []string{
	infrav1.ReadyCondition,
	infrav1.PausedCondition,
	infrav1.DeletingCondition,
	infrav1.DependenciesReadyCondition,
	infrav1.IdentityAllowedCondition,
	infrav1.CredentialsMirroredCondition,
	infrav1.RunnerRBACReadyCondition,
	infrav1.ApplyJobSucceededCondition,
	infrav1.StateReadableCondition,
	infrav1.RestoreJobSucceededCondition,
	infrav1.OutputsValidCondition,
	infrav1.InfrastructureHealthyCondition,
	infrav1.DriftJobSucceededCondition,
	infrav1.DriftDetectedCondition,
	infrav1.DeletionBlockedCondition,
	infrav1.EndpointAvailableCondition,
	infrav1.AutoscalingActiveCondition,
}

// recordDefaults records the conditions every object carries from its
// first reconcile: Deleting, Paused and DependenciesReady follow the pass;
// the others start at their initial reason until a step says otherwise.
func recordDefaults(p *Pass) {
	initial := func(t string, status metav1.ConditionStatus, reason string) {
		if p.Condition(t) == nil {
			p.record(fromReading, t, status, reason, "")
		}
	}
	if p.deleting() {
		p.record(fromReading, infrav1.DeletingCondition, metav1.ConditionTrue, infrav1.DeletingReason, "")
	} else {
		p.record(fromReading, infrav1.DeletingCondition, metav1.ConditionFalse, infrav1.NotDeletingReason, "")
	}
	if p.pausedSeen {
		if p.paused {
			p.record(fromReading, infrav1.PausedCondition, metav1.ConditionTrue, infrav1.PausedReason, "")
		} else {
			p.record(fromReading, infrav1.PausedCondition, metav1.ConditionFalse, infrav1.NotPausedReason, "")
		}
	}
	if p.OwnerWait == nil {
		p.record(fromReading, infrav1.DependenciesReadyCondition, metav1.ConditionTrue, infrav1.DependenciesReadyReason, "")
	}
	initial(infrav1.DriftDetectedCondition, metav1.ConditionUnknown, infrav1.DriftNotCheckedReason)
	initial(infrav1.DriftJobSucceededCondition, metav1.ConditionUnknown, infrav1.DriftNotCheckedReason)
	initial(infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.NoApplyYetReason)
	initial(infrav1.StateReadableCondition, metav1.ConditionUnknown, infrav1.StateNotFoundReason)
	initial(infrav1.OutputsValidCondition, metav1.ConditionUnknown, infrav1.OutputsPendingReason)
	initial(infrav1.IdentityAllowedCondition, metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason)
	initial(infrav1.CredentialsMirroredCondition, metav1.ConditionUnknown, infrav1.MirrorPendingReason)
	initial(infrav1.RunnerRBACReadyCondition, metav1.ConditionUnknown, infrav1.RBACFailedReason)
	if p.Obj.Capabilities().HasMembers {
		initial(infrav1.DeletionBlockedCondition, metav1.ConditionFalse, infrav1.NotBlockedReason)
	}
}

// computeConditions writes every condition the pass recorded onto the
// object, once, then summarises Ready.
func (f *Flow) computeConditions(p *Pass) error {
	recordDefaults(p)
	for _, t := range ownedConditions {
		fc, ok := p.facts[t]
		if !ok {
			continue
		}
		c := fc.c
		c.ObservedGeneration = p.Obj.GetGeneration()
		conditions.Set(p.Obj, c)
	}
	return f.summarizeReady(p)
}

// summarizeReady sets Ready over the conditions the kind lists for its
// phase (reference-facts §1.1): Deleting has negative polarity; waiting
// reasons are Unknown so waiting never turns Ready False.
func (f *Flow) summarizeReady(p *Pass) error {
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

// conditionEvents are the owned conditions that carry events of their own
// (reference-facts §2); every other owned condition's change of status or
// reason is reported as ConditionChanged.
var conditionEvents = map[string]bool{
	infrav1.PausedCondition:                true, // Paused, Resumed
	infrav1.DeletingCondition:              true, // DeletionStarted
	infrav1.StateReadableCondition:         true, // StateLost, StateUnreadable, StateLocked
	infrav1.DriftDetectedCondition:         true, // DriftDetected, DriftResolved, DriftRemediationStarted
	infrav1.InfrastructureHealthyCondition: true, // InstanceHealthy, InstanceUnhealthy
	infrav1.OutputsValidCondition:          true, // OutputsInvalid
	infrav1.ApplyJobSucceededCondition:     true, // the Job events, lease waits
	infrav1.DriftJobSucceededCondition:     true, // the Job events, lease waits
	infrav1.RestoreJobSucceededCondition:   true, // StateRestored, StateRestoreFailed
	infrav1.IdentityAllowedCondition:       true, // IdentityNotAllowed
	infrav1.CredentialsMirroredCondition:   true, // MirrorCreated, IdentitySecretNotFound
	infrav1.EndpointAvailableCondition:     true, // ControlPlaneEndpointSet
}

// negativePolarity are the owned conditions whose True is the bad state.
var negativePolarity = map[string]bool{
	infrav1.DeletingCondition:        true,
	infrav1.DeletionBlockedCondition: true,
	infrav1.DriftDetectedCondition:   true,
	infrav1.PausedCondition:          true,
}

// transitionEvents emits the events of the condition changes the pass
// made, compared with the conditions as the pass read them: DeletionStarted,
// Paused and Resumed, StateLost and StateUnreadable, and ConditionChanged
// for the conditions without events of their own.
func (f *Flow) transitionEvents(p *Pass) {
	changed := func(t string) (before, after *metav1.Condition, ok bool) {
		before, after = p.Before(t), condition(p, t)
		if after == nil {
			return nil, nil, false
		}
		return before, after, before == nil || before.Status != after.Status || before.Reason != after.Reason
	}
	if b, a, ok := changed(infrav1.DeletingCondition); ok && a.Status == metav1.ConditionTrue && (b == nil || b.Status != metav1.ConditionTrue) {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.DeletionStartedEvent, "Deletion started")
	}
	if b, a, ok := changed(infrav1.PausedCondition); ok && (b == nil || b.Status != a.Status) {
		switch {
		case a.Status == metav1.ConditionTrue:
			f.event(p, nil, corev1.EventTypeNormal, infrav1.PausedEvent, "Paused: no new Job starts")
		case b != nil:
			f.event(p, nil, corev1.EventTypeNormal, infrav1.ResumedEvent, "Resumed")
		}
	}
	if _, a, ok := changed(infrav1.StateReadableCondition); ok && a.Status == metav1.ConditionFalse {
		switch a.Reason {
		case infrav1.StateLostReason:
			f.event(p, nil, corev1.EventTypeWarning, infrav1.StateLostEvent, a.Message)
		case infrav1.StateCorruptReason, infrav1.StateInconsistentReason, infrav1.StateEncryptedReason, infrav1.StateSecretForeignReason:
			f.event(p, nil, corev1.EventTypeWarning, infrav1.StateUnreadableEvent, a.Reason+": "+a.Message)
		}
	}
	for _, t := range ownedConditions {
		if t == infrav1.ReadyCondition || conditionEvents[t] {
			continue
		}
		b, a, ok := changed(t)
		if !ok || b == nil {
			continue
		}
		bad := a.Status == metav1.ConditionFalse
		if negativePolarity[t] {
			bad = a.Status == metav1.ConditionTrue
		}
		typ := corev1.EventTypeNormal
		if bad {
			typ = corev1.EventTypeWarning
		}
		note := t + " is " + string(a.Status) + ": " + a.Reason
		if a.Message != "" {
			note += ": " + a.Message
		}
		f.event(p, nil, typ, infrav1.ConditionChangedEvent, note)
	}
}

// condition returns a copy of a condition of the object, nil when unset.
func condition(p *Pass, t string) *metav1.Condition {
	c := conditions.Get(p.Obj, t)
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}
