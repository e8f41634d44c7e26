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

// transitioned reports whether next differs in status or reason from prev
// (nil when the object had no such condition yet).
func transitioned(prev *metav1.Condition, next metav1.Condition) bool {
	return prev == nil || prev.Status != next.Status || prev.Reason != next.Reason
}
