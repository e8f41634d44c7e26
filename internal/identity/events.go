package identity

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is an event the caller should emit on the object it reconciles. Its
// message names objects and reasons, never a credential value.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is one of the api/v1alpha1 *Event names.
	Reason string
	// Message is the human-readable note.
	Message string
}

func normalEvent(reason, message string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}

func warningEvent(reason, message string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

// transitioned reports whether a condition's next status and reason
// differ from prev (nil when the object had no such condition yet).
func transitioned(prev *metav1.Condition, status metav1.ConditionStatus, reason string) bool {
	return prev == nil || prev.Status != status || prev.Reason != reason
}

// Verdict is what a check of the credentials step found, in the terms of
// the condition it is reported on: IdentityAllowed, CredentialsMirrored or
// RunnerRBACReady. The reconcile flow's setter of that condition makes it
// the condition; this package never sets one on a workload.
type Verdict struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}
