package setup

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The downward-API variables the shipped Deployment sets, naming the
// manager's own Pod.
const (
	PodNameEnv      = "POD_NAME"
	PodNamespaceEnv = "POD_NAMESPACE"
	// managerContainer is the manager's container in the shipped
	// Deployment.
	managerContainer = "manager"
)

// resolveRunnerImage fills an empty RunnerImage, after $CAPTF_MANAGER_IMAGE
// (Complete), from the manager's own Pod: the image of its container
// "manager" (or of its only container), as the Pod's spec names it. That is
// the image the manager runs from after every rewrite made on the way
// (clusterctl's image overrides, a mirror's admission), so the Jobs pull
// /runner from where the manager was pulled. Without $POD_NAME and
// $POD_NAMESPACE it leaves RunnerImage empty, for Validate to refuse.
func (o *Options) resolveRunnerImage(ctx context.Context, cfg *rest.Config) error {
	if o.RunnerImage != "" {
		return nil
	}
	if !ownPodNamed() {
		return nil
	}
	name, ns := os.Getenv(PodNameEnv), os.Getenv(PodNamespaceEnv)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("--runner-image is not set: failed to read the manager's own Pod %s/%s for its image: %w", ns, name, err)
	}
	image := ownImage(pod)
	if image == "" {
		return fmt.Errorf("--runner-image is not set and the manager's own Pod %s/%s has no container %q", ns, name, managerContainer)
	}
	o.RunnerImage = image
	return nil
}

// ownPodNamed reports whether $POD_NAME and $POD_NAMESPACE name the
// manager's own Pod, from which an empty RunnerImage is filled when the
// manager is built (Validate lets it through until then).
func ownPodNamed() bool {
	return os.Getenv(PodNameEnv) != "" && os.Getenv(PodNamespaceEnv) != ""
}

// ownImage is the image of the Pod's container "manager", or of its only
// container.
func ownImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == managerContainer {
			return c.Image
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Image
	}
	return ""
}
