package jobs

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The manager caches every Job, pod and per-run Secret CAPTF owns. What its
// passes read of them is small: a Job's metadata, status and
// activeDeadlineSeconds; a pod's metadata and status (phase, reason,
// conditions, container states with the runner's termination message and
// image IDs); a per-run Secret's metadata. The rest (the pod template and
// spec: containers, volumes, environment, arguments; the per-run Secret's
// rendered inputs) is what makes these objects large, and at thousands of
// objects it is most of the manager's memory. The functions below reduce an
// object to what CAPTF reads before it enters the cache. Anything that needs
// the whole object reads it live (the name checks before a Job is created,
// the stuck-Job check, kubectl captf).

// ForCache reduces a Job to what the manager's passes read: its metadata
// (managed fields dropped), its status and the spec's scalar fields
// (activeDeadlineSeconds names the deadline a Job hit) and policies, and of
// the pod template only the module container's arguments that say what the
// Job was armed to stop on (ArmingOf). The rest of the template goes. It
// changes and returns job.
func ForCache(job *batchv1.Job) *batchv1.Job {
	job.ManagedFields = nil
	var kept []corev1.Container
	for _, c := range job.Spec.Template.Spec.Containers {
		if args := armingArgs(c.Args); c.Name == SourceContainer && len(args) > 0 {
			kept = append(kept, corev1.Container{Name: c.Name, Args: args})
		}
	}
	job.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: kept}}
	return job
}

// PodForCache reduces a runner pod to what the manager's passes read: its
// metadata (managed fields dropped) and status; of each container status
// its name, state, last state, image ID and the fields Classify reads. The
// spec goes. It changes and returns pod.
func PodForCache(pod *corev1.Pod) *corev1.Pod {
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{}
	pod.Status.HostIPs, pod.Status.PodIPs = nil, nil
	pod.Status.ResourceClaimStatuses = nil
	pod.Status.Resources = nil
	for _, cs := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range cs {
			cs[i].Resources, cs[i].AllocatedResources, cs[i].AllocatedResourcesStatus = nil, nil, nil
			cs[i].VolumeMounts, cs[i].User = nil, nil
		}
	}
	return pod
}

// RunSecretForCache drops the data of a per-run Secret (captf-run-<job>,
// carrying the Job's operation label): passes read only its owners and
// labels from the cache, and read it live where its data matters. Any
// other Secret is returned unchanged. It changes and returns s.
func RunSecretForCache(s *corev1.Secret) *corev1.Secret {
	if !IsRunSecret(s) {
		return s
	}
	s.Data, s.StringData = nil, nil
	return s
}

// IsRunSecret says s is a per-run Secret: named captf-run-<job> and labeled
// with the operation of its Job.
func IsRunSecret(s *corev1.Secret) bool {
	_, op := s.Labels[infrav1.OpLabel]
	return op && strings.HasPrefix(s.Name, RunSecretPrefix)
}
