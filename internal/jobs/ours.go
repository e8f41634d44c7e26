package jobs

import (
	"bytes"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NotOurs says why existing, found under the name of built (a Job or
// per-run Secret CAPTF was about to create), is not the one CAPTF made:
// its controller is not built's controller (another UID: a foreign object,
// or one left by an earlier object of the same name), or it lacks one of
// built's labels. "" when it is CAPTF's and may be taken as the run's.
// Security Model: an object with CAPTF's name but not CAPTF's marks is
// reported, never reused. Pure.
func NotOurs(existing, built metav1.Object) string {
	want := metav1.GetControllerOfNoCopy(built)
	got := metav1.GetControllerOfNoCopy(existing)
	switch {
	case got == nil:
		return "it has no controller owner reference"
	case want != nil && (got.UID != want.UID || got.Kind != want.Kind || got.APIVersion != want.APIVersion):
		return fmt.Sprintf("it is controlled by %s %s (UID %s), not by %s %s (UID %s)", got.Kind, got.Name, got.UID, want.Kind, want.Name, want.UID)
	}
	return missingLabel(existing, built)
}

// NotOursOrphan says why secret, a per-run Secret found with no Job of its
// name, is not one CAPTF left behind for an earlier Job of that name (a
// Job deleted before the garbage collector took its Secret): it must be
// controlled by a batch/v1 Job named job.Name, whatever its UID, and carry
// job's labels. "" when it is such an orphan, which CAPTF may delete. Pure.
func NotOursOrphan(secret metav1.Object, job metav1.Object) string {
	got := metav1.GetControllerOfNoCopy(secret)
	switch {
	case got == nil:
		return "it has no controller owner reference"
	case got.APIVersion != "batch/v1" || got.Kind != "Job" || got.Name != job.GetName():
		return fmt.Sprintf("it is controlled by %s %s, not by Job %s", got.Kind, got.Name, job.GetName())
	}
	return missingLabel(secret, job)
}

// missingLabel names the first label of built (in key order) that existing
// lacks or holds with another value; "" when it has them all.
func missingLabel(existing, built metav1.Object) string {
	keys := make([]string, 0, len(built.GetLabels()))
	for k := range built.GetLabels() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	have := existing.GetLabels()
	for _, k := range keys {
		if v, ok := have[k]; !ok || v != built.GetLabels()[k] {
			return fmt.Sprintf("its label %s is not %q", k, built.GetLabels()[k])
		}
	}
	return ""
}

// NotPending says why secret, found under the per-run Secret name of built
// (the PendingRunSecret of a run), is not a Secret CAPTF wrote for that
// name before creating its Job: it must have no controller, be owned by
// built's owner (same UID) and carry built's labels. "" when it is; its
// data is the run's when SameData says so too. Pure.
func NotPending(secret, built *corev1.Secret) string {
	if c := metav1.GetControllerOfNoCopy(secret); c != nil {
		return fmt.Sprintf("it is controlled by %s %s", c.Kind, c.Name)
	}
	if len(built.OwnerReferences) != 1 {
		return "the run's Secret names no owner"
	}
	want := built.OwnerReferences[0]
	if !slices.ContainsFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.UID == want.UID && o.Kind == want.Kind && o.APIVersion == want.APIVersion
	}) {
		return fmt.Sprintf("it is not owned by %s %s (UID %s)", want.Kind, want.Name, want.UID)
	}
	return missingLabel(secret, built)
}

// SameData reports whether two Secrets hold the same keys and values.
func SameData(a, b *corev1.Secret) bool {
	if len(a.Data) != len(b.Data) {
		return false
	}
	for k, v := range b.Data {
		if got, ok := a.Data[k]; !ok || !bytes.Equal(got, v) {
			return false
		}
	}
	return true
}
