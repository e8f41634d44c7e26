package jobs

import (
	"fmt"
	"slices"

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
