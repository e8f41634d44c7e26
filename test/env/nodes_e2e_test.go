package env_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/testimage"
)

// TestExtraNodeBindsOnlyWhatItAdmits: with a second, tainted and labelled
// Node, a pod is bound where its nodeSelector, required node affinity and
// tolerations allow: one that selects the tainted Node and tolerates its
// taint runs there (and its log is read through Env.Logs); one without
// either runs on the first Node; one that selects the tainted Node without
// tolerating the taint, or selects a label no Node has, stays Pending and
// unbound.
func TestExtraNodeBindsOnlyWhatItAdmits(t *testing.T) {
	const tainted = "captf-env-pool"
	taint := corev1.Taint{Key: "example.com/pool", Value: "terraform", Effect: corev1.TaintEffectNoSchedule}
	e := env.ForTest(t, env.Options{Logger: testLogger, Kubelet: true, Registry: true, ExtraNodes: []env.Node{{
		Name: tainted, Labels: map[string]string{"example.com/pool": "terraform"}, Taints: []corev1.Taint{taint},
	}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := e.Clientset
	image := pushPodprog(ctx, t, e)
	const ns = "placement"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the default ServiceAccount did not appear")
		case <-time.After(200 * time.Millisecond):
		}
	}
	selectPool := map[string]string{"example.com/pool": "terraform"}
	tolerate := []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
	pods := []struct {
		name     string
		selector map[string]string
		tol      []corev1.Toleration
		node     string // "" stays Pending
	}{
		{"tolerant", selectPool, tolerate, tainted},
		{"plain", nil, nil, kubelet.DefaultNodeName},
		{"intolerant", selectPool, nil, ""},
		{"nowhere", map[string]string{"example.com/pool": "gpu"}, tolerate, ""},
	}
	for _, p := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, NodeSelector: p.selector, Tolerations: p.tol,
				Containers: []corev1.Container{{Name: "main", Image: image, Command: []string{testimage.ProgramPath, "--message=on-" + p.name}}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if p.node == "" {
			continue
		}
		for {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, p.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase == corev1.PodSucceeded {
				if got.Spec.NodeName != p.node {
					t.Errorf("pod %s ran on %q, want %q", p.name, got.Spec.NodeName, p.node)
				}
				break
			}
			if got.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod %s failed: %+v", p.name, got.Status)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s did not finish: %+v", p.name, got.Status)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if _, err := e.Logs(ns, "tolerant", "main"); err != nil {
		t.Errorf("the log of a pod on the extra Node: %v", err)
	}
	// Both bound pods have run to the end: a kubelet that would bind the
	// others has had every chance to.
	for _, p := range pods {
		if p.node != "" {
			continue
		}
		got, err := cs.CoreV1().Pods(ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "" || got.Status.Phase != corev1.PodPending {
			t.Errorf("pod %s was bound to %q (%s); no Node admits it", p.name, got.Spec.NodeName, got.Status.Phase)
		}
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, tainted, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["example.com/pool"] != "terraform" || len(node.Spec.Taints) != 1 || !strings.Contains(node.Spec.Taints[0].ToString(), "example.com/pool") {
		t.Errorf("extra Node %s: labels %v, taints %v", tainted, node.Labels, node.Spec.Taints)
	}
}

// pushPodprog pushes the test image (package testimage) to the
// environment's registry as captf/podprog:test and returns its reference
// by tag.
func pushPodprog(ctx context.Context, t testing.TB, e *env.Env) string {
	t.Helper()
	img, err := testimage.Image()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.PushImage(ctx, "captf/podprog:test", img); err != nil {
		t.Fatal(err)
	}
	return e.ImageRef("captf/podprog:test")
}
