//go:build chaos

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
)

// lostNode is the Node the node-loss scenario places its machine's runs
// on: run by a kubelet of the test's own, which the scenario stops as a
// machine that dies stops, and whose label and taint only that
// scenario's pods select and tolerate.
const lostNode = "captf-env-lost"

// TestFaultNodeLost loses the Node running a machine's apply pod while the
// apply is held, its state lock taken: the Node's kubelet stops with its
// pods' processes, and nothing reports on the pod again, which stays
// Running in the API. The Node object is then deleted, as a cloud's node
// controller deletes the Node of an instance that is gone. Pod garbage
// collection fails and deletes the orphaned pod (DisruptionTarget,
// DeletionByPodGC), its Job fails, and CAPTF books the run as interrupted
// (Retries and Backoff: stopped from outside, no backoff). A new instance
// joins under the same name, and the next apply runs there: the lock the
// dead runner left is stale, so it runs with --force-unlock (Terraform
// State). Jobs: the cluster's apply and re-apply, two applies of the
// machine.
func TestFaultNodeLost(t *testing.T) {
	t.Parallel()
	b := newFaultBringUp(t, 51, 1, 0)
	ctx := faultContext(t)
	b.tuneMachine = func(tm *infrav1.TerraformMachine) {
		tm.Spec.Jobs = &infrav1.JobPolicy{
			NodeSelector: map[string]string{"example.com/node": lostNode},
			Tolerations:  []corev1.Toleration{{Key: "example.com/node", Operator: corev1.TolerationOpEqual, Value: lostNode, Effect: corev1.TaintEffectNoSchedule}},
		}
	}
	b.holdRuns("TerraformMachine")
	k := b.startLostNodeKubelet(ctx, 1)
	b.start(ctx)
	owner := "TerraformMachine/" + b.machines[0]
	held := b.heldRun(ctx, "apply")
	if held.pod.Spec.NodeName != lostNode {
		t.Fatalf("the held apply pod runs on %q, want %s", held.pod.Spec.NodeName, lostNode)
	}

	// The machine dies: its kubelet and its pods' processes stop, and
	// nothing reports on them again.
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	// A killed process is gone from /proc once its parent has reaped it.
	b.w.eventually(ctx, 30*time.Second, "the processes of pod "+held.pod.Name+" to end with its Node", func() (bool, string) {
		pids := podProcesses(t, string(held.pod.UID))
		return len(pids) == 0, fmt.Sprintf("processes %v are still there", pids)
	})
	pod := &corev1.Pod{}
	if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.pod), pod); err != nil || pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod %s after its Node was lost: phase %q (%v), want still Running", held.pod.Name, pod.Status.Phase, err)
	}
	l := &coordinationv1.Lease{}
	if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: held.lock}, l); err != nil || !applying(state.LockFromLease(l)) {
		t.Fatalf("the state lock %s is not held by the lost apply (%v)", held.lock, err)
	}
	t.Logf("Node %s lost: its kubelet stopped, pod %s still Running in the API with no process, lock %s held", lostNode, pod.Name, held.lock)
	b.leftHold(ctx)
	b.hold.Release()

	// The instance is gone: its Node is deleted.
	gone := time.Now()
	if err := b.w.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: lostNode}}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{}
	b.w.eventually(ctx, 3*time.Minute, "pod garbage collection to end the lost pod and its Job", func() (bool, string) {
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return false, "pod " + held.pod.Name + " is still there"
		}
		if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.job), job); err != nil {
			return false, err.Error()
		}
		return job.Status.Failed > 0, "Job " + job.Name + " has not failed yet"
	})
	t.Logf("pod %s deleted by pod garbage collection and Job %s failed %v after the Node was deleted", held.pod.Name, job.Name, time.Since(gone).Round(time.Second))

	// A new instance joins under the same name.
	b.startLostNodeKubelet(ctx, 2)
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEndWith(ctx, map[string]string{owner: "apply,apply"}, map[string]bool{held.job.Name: true})
	if err := b.w.c.Get(ctx, client.ObjectKeyFromObject(held.job), job); err == nil && job.Annotations[infrav1.InterruptedAnnotation] != "true" {
		t.Errorf("Job %s is not marked %s", job.Name, infrav1.InterruptedAnnotation)
	}
	if n := b.interruptions(ctx); n != 1 {
		t.Errorf("%d JobInterrupted events, want 1", n)
	}
	if n := b.w.eventCounts(ctx, b.ns, "TerraformMachine")[infrav1.ForceUnlockedEvent]; n != 1 {
		t.Errorf("%d ForceUnlocked events, want 1", n)
	}
}

// startLostNodeKubelet starts a kubelet for Node lostNode in this process,
// on a data folder of its own, as a new instance has a disk of its own
// (stopped, and its Node deleted, when the test ends).
func (b *faultBringUp) startLostNodeKubelet(ctx context.Context, instance int) *kubelet.Kubelet {
	t, e := b.w.t, b.w.e
	k, err := kubelet.Start(ctx, kubelet.Options{
		Config: e.Config, APIServerHost: e.APIServerHost, APIServerPort: e.APIServerPort, PodNetwork: e.PodNetwork,
		Dir:      filepath.Join(e.Dir, "kubelet-"+lostNode+"-"+strconv.Itoa(instance)),
		NodeName: lostNode,
		Labels:   map[string]string{"example.com/node": lostNode},
		Taints:   []corev1.Taint{{Key: "example.com/node", Value: lostNode, Effect: corev1.TaintEffectNoSchedule}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.Stop()
		_ = b.w.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: lostNode}})
	})
	return k
}

// podProcesses returns the processes running chrooted into a pod's folder.
func podProcesses(t *testing.T, uid string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if root, err := os.Readlink(filepath.Join("/proc", e.Name(), "root")); err == nil && strings.Contains(root, uid) {
			out = append(out, pid)
		}
	}
	return out
}
