package setup

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestManagerRunnerImageFromOwnPod: with neither --runner-image nor
// $CAPTF_MANAGER_IMAGE, the assembled manager gives its Jobs the image of
// its own Pod's container "manager", as the Pod's spec names it (so an
// image override applied at install reaches the Jobs); a Pod it cannot
// read stops it with an error naming the Pod, and without $POD_NAME the
// options are refused as before.
func TestManagerRunnerImageFromOwnPod(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const mirrored = "registry.internal/captf/manager:v0.1.0@sha256:" + "1111111111111111111111111111111111111111111111111111111111111111"
	create(t, c,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "captf-own"}},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "captf-own", Name: "captf-controller-manager-x"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "proxy", Image: "example.com/proxy:1"},
				{Name: "manager", Image: mirrored},
			}},
		})
	t.Setenv(ManagerImageEnv, "")
	t.Setenv(PodNamespaceEnv, "captf-own")
	t.Setenv(PodNameEnv, "captf-controller-manager-x")

	// Each build listens on addresses of its own.
	opts := func() Options {
		o := testOptions(t)
		o.RunnerImage = ""
		return o
	}
	_, w, err := build(ctx, cfg, opts())
	if err != nil {
		t.Fatal(err)
	}
	if w.Options.RunnerImage != mirrored {
		t.Errorf("RunnerImage %q, want the manager container's image %q", w.Options.RunnerImage, mirrored)
	}

	t.Setenv(PodNameEnv, "gone")
	if _, _, err := build(ctx, cfg, opts()); err == nil || !strings.Contains(err.Error(), "captf-own/gone") {
		t.Errorf("build with a Pod that does not exist: %v, want an error naming captf-own/gone", err)
	}
	t.Setenv(PodNameEnv, "")
	if _, _, err := build(ctx, cfg, opts()); err == nil || !strings.Contains(err.Error(), "--runner-image") {
		t.Errorf("build with no image anywhere: %v, want --runner-image refused", err)
	}
	// The flag and the variable still come first.
	t.Setenv(PodNameEnv, "captf-controller-manager-x")
	t.Setenv(ManagerImageEnv, "example.com/from-env:1")
	if _, w, err = build(ctx, cfg, opts()); err != nil || w.Options.RunnerImage != "example.com/from-env:1" {
		t.Errorf("RunnerImage %q (%v), want $%s's", w.Options.RunnerImage, err, ManagerImageEnv)
	}
}
