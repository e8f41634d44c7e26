package lifecycle

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// A pass never writes a condition onto the object while it runs. Each step
// records what it found as a typed fact (facts.go); the status step sets
// every condition once from those facts (conditions_set.go) and then
// summarises Ready. So the patch helper's snapshot always sees the object
// as it was read, and every "before" a step compares with is the stored
// condition.

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
