package cli

import (
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestNamesMatchTheManagers keeps the names the plugin spells itself (so
// it starts without linking controller-runtime) equal to the manager's:
// the runner's container, and the
// lock Lease of a state.
func TestNamesMatchTheManagers(t *testing.T) {
	if sourceContainer != jobs.SourceContainer {
		t.Errorf("sourceContainer = %q, the Job's container is %q", sourceContainer, jobs.SourceContainer)
	}
	if got, want := lockLeaseName("0123456789abcdef-c"), state.LockLeaseName("0123456789abcdef-c"); got != want {
		t.Errorf("lockLeaseName = %q, the backend's Lease is %q", got, want)
	}
	if pausedAnnotation != clusterv1.PausedAnnotation {
		t.Errorf("pausedAnnotation = %q, Cluster API's is %q", pausedAnnotation, clusterv1.PausedAnnotation)
	}
	if managedByAnnotation != clusterv1.ManagedByAnnotation {
		t.Errorf("managedByAnnotation = %q, Cluster API's is %q", managedByAnnotation, clusterv1.ManagedByAnnotation)
	}
	if clustersGVR.GroupVersion() != clusterv1.GroupVersion {
		t.Errorf("clustersGVR is of %s, Cluster API's Cluster of %s", clustersGVR.GroupVersion(), clusterv1.GroupVersion)
	}
	if lockInfoAnnotation != state.LockInfoAnnotation {
		t.Errorf("lockInfoAnnotation = %q, want %q", lockInfoAnnotation, state.LockInfoAnnotation)
	}
}
