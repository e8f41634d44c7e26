package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
)

// poolNode is the shared environment's second Node: a node pool kept for
// Terraform runs, labelled and tainted so that only pods that select and
// tolerate it run there.
var poolNode = env.Node{
	Name:   "captf-env-pool",
	Labels: map[string]string{"example.com/pool": "terraform"},
	Taints: []corev1.Taint{{Key: "example.com/pool", Value: "terraform", Effect: corev1.TaintEffectNoSchedule}},
}

// TestRunnerPodPlacement follows the Tuning Jobs page's "Where runner pods
// run": three TerraformClusters, one Node tainted for Terraform runs.
//   - placed selects the pool's label and tolerates its taint, with a
//     PriorityClass and pod labels and annotations: its apply pod runs on
//     the pool Node, with the PriorityClass's priority and the labels and
//     annotations beside CAPTF's, and the cluster becomes Ready;
//   - elsewhere tolerates the taint but selects the first Node by hostname:
//     its pod runs there (the selector is honoured, not only the taint);
//   - intolerant selects the pool without tolerating its taint: its pod is
//     never bound while the other two run to the end (the taint is
//     honoured), and, deleted, it goes without a destroy (no state).
func TestRunnerPodPlacement(t *testing.T) {
	t.Parallel()
	const ns = "team-place"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "captf-e2e-infra"}, Value: 1000,
		Description: "Terraform runs of the placement scenario"}
	w.create(ctx, pc)
	t.Cleanup(func() { _ = w.c.Delete(context.Background(), pc) })

	toleratePool := []corev1.Toleration{{Key: "example.com/pool", Operator: corev1.TolerationOpEqual, Value: "terraform", Effect: corev1.TaintEffectNoSchedule}}
	policies := map[string]*infrav1.JobPolicy{
		"placed": {
			NodeSelector:      poolNode.Labels,
			Tolerations:       toleratePool,
			PriorityClassName: pc.Name,
			PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"team": "platform"},
				Annotations: map[string]string{"example.com/cost-center": "c-17"}},
		},
		"elsewhere": {
			NodeSelector: map[string]string{"kubernetes.io/hostname": kubelet.DefaultNodeName},
			Tolerations:  toleratePool,
		},
		// Its apply Job ends at its deadline: it never runs.
		"intolerant": {NodeSelector: poolNode.Labels, ActiveDeadlineSeconds: ptr.To[int64](90), LockTimeoutSeconds: ptr.To[int32](10)},
	}
	for _, name := range []string{"placed", "elsewhere", "intolerant"} {
		cluster, tc := w.clusterObjects(ns, name, func(s *infrav1.TerraformClusterSpec) { s.Jobs = policies[name] })
		w.create(ctx, cluster, tc)
	}

	applyPod := func(name string) (*corev1.Pod, string) {
		var pods corev1.PodList
		if err := w.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: "TerraformCluster", infrav1.OwnerNameLabel: name, infrav1.OpLabel: string(infrav1.OperationApply)}); err != nil {
			return nil, err.Error()
		}
		if len(pods.Items) == 0 {
			return nil, "no apply pod of " + name
		}
		return &pods.Items[0], ""
	}
	// intolerant's apply pod is looked at on every poll while the others
	// run: on a loaded machine its Job may reach its deadline, and its pod
	// be deleted, before they are Ready.
	var intolerantSeen bool
	var intolerantBound string
	watchIntolerant := func() {
		if pod, _ := applyPod("intolerant"); pod != nil {
			intolerantSeen = true
			if pod.Spec.NodeName != "" {
				intolerantBound = pod.Spec.NodeName
			}
		}
	}
	for _, c := range []struct{ name, node string }{{"placed", poolNode.Name}, {"elsewhere", kubelet.DefaultNodeName}} {
		tc := &infrav1.TerraformCluster{}
		w.eventually(ctx, 5*time.Minute, c.name+" to be Ready", func() (bool, string) {
			watchIntolerant()
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.name}, tc); err != nil {
				return false, err.Error()
			}
			return ready(tc)
		})
		pod, why := applyPod(c.name)
		if pod == nil {
			t.Fatal(why)
		}
		if pod.Spec.NodeName != c.node {
			t.Errorf("the apply pod of %s ran on %q, want %q", c.name, pod.Spec.NodeName, c.node)
		}
		if c.name != "placed" {
			continue
		}
		if pod.Spec.PriorityClassName != pc.Name || pod.Spec.Priority == nil || *pod.Spec.Priority != pc.Value {
			t.Errorf("the apply pod of placed has priorityClassName %q, priority %v; want %s, %d", pod.Spec.PriorityClassName, pod.Spec.Priority, pc.Name, pc.Value)
		}
		if pod.Labels["team"] != "platform" || pod.Annotations["example.com/cost-center"] != "c-17" {
			t.Errorf("the apply pod of placed lacks the policy's labels or annotations: %v, %v", pod.Labels, pod.Annotations)
		}
		if pod.Labels[infrav1.ManagedLabel] != "true" || pod.Annotations[infrav1.SafeToEvictAnnotation] != "false" {
			t.Errorf("the apply pod of placed lost CAPTF's own labels or annotations: %v, %v", pod.Labels, pod.Annotations)
		}
	}

	// Both others have run to the end: the pool Node's kubelet has had
	// every chance to bind intolerant's pod.
	w.eventually(ctx, time.Minute, "an apply pod of intolerant", func() (bool, string) {
		watchIntolerant()
		return intolerantSeen, "no apply pod of intolerant"
	})
	if pod, _ := applyPod("intolerant"); pod != nil && (pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending) {
		t.Errorf("the apply pod of intolerant, which does not tolerate the pool's taint, was bound to %q (%s)", pod.Spec.NodeName, pod.Status.Phase)
	}
	if intolerantBound != "" {
		t.Errorf("the apply pod of intolerant, which does not tolerate the pool's taint, was bound to %q", intolerantBound)
	}

	// Gone without a destroy: its apply never ran, so there is no state.
	if err := w.c.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "intolerant", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 4*time.Minute, "intolerant to be deleted", func() (bool, string) {
		err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "intolerant"}, &infrav1.TerraformCluster{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there: %v", err)
	})
}
