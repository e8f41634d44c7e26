package framework

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/envtest"
)

// TestDesiredWorkload: a Node for every Machine that has a providerID and
// is not deleting, named after it; the kubeadm static pods on control-plane
// Machines only, etcd's with a managed etcd only.
func TestDesiredWorkload(t *testing.T) {
	now := metav1.Now()
	machine := func(name, providerID string, cp, deleting bool) clusterv1.Machine {
		m := clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		m.Spec.ProviderID = providerID
		if cp {
			m.Labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		if deleting {
			m.DeletionTimestamp = &now
			m.Finalizers = []string{"f"}
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		machines    []clusterv1.Machine
		workersOnly bool
		managedEtcd bool
		want        map[string][]string // node → static pod components
	}{
		{"no providerID yet: no Node", []clusterv1.Machine{machine("w", "", false, false)}, false, false, map[string][]string{}},
		{"a worker: a Node, no static pods", []clusterv1.Machine{machine("w", "p://w", false, false)}, false, false, map[string][]string{"w": nil}},
		{"a deleting Machine: no Node", []clusterv1.Machine{machine("w", "p://w", false, true)}, false, false, map[string][]string{}},
		{"a control plane with external etcd: three static pods", []clusterv1.Machine{machine("cp", "p://cp", true, false)}, false, false,
			map[string][]string{"cp": {"kube-apiserver", "kube-controller-manager", "kube-scheduler"}}},
		{"a control plane with managed etcd: etcd too", []clusterv1.Machine{machine("cp", "p://cp", true, false)}, false, true,
			map[string][]string{"cp": {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"}}},
		{"workers only: no Node for a control-plane Machine", []clusterv1.Machine{machine("cp", "p://cp", true, false), machine("w", "p://w", false, false)}, true, true,
			map[string][]string{"w": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := desiredWorkload(tc.machines, tc.workersOnly, tc.managedEtcd)
			if len(got) != len(tc.want) {
				t.Fatalf("Nodes %v, want %v", got, tc.want)
			}
			for name, comps := range tc.want {
				m, ok := got[name]
				if !ok || !slices.Equal(m.components, comps) || m.controlPlane != (comps != nil) {
					t.Errorf("Node %s: %+v, want static pods %v", name, m, comps)
				}
			}
		})
	}
}

// TestWorkloadOnAPIServer: on a real API server, a pass registers a Ready
// Node with the Machine's providerID (control-plane label and taint on a
// control-plane Machine) and running, Ready mirror pods bound to it with
// the labels KubeadmControlPlane's cache selects; a deleting Machine's Node
// and pods go.
func TestWorkloadOnAPIServer(t *testing.T) {
	dir, err := capi.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	env, cfg, err := envtest.Start(filepath.Join(dir, "core", "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clusterv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns, cluster = "team-w", "wl"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	newMachine := func(name string, cp bool) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}, Finalizers: []string{"test.captf.io/hold"}}}
		if cp {
			m.Labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		m.Spec.ClusterName = cluster
		m.Spec.Bootstrap.DataSecretName = ptrTo("none")
		m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "TerraformMachine", Name: name}
		m.Spec.ProviderID = "noop:///" + ns + "/" + name
		if err := c.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cp, worker := newMachine("wl-cp-1", true), newMachine("wl-md-1", false)
	w := NewWorkload(c, ns, cluster, WorkloadOptions{})
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	for _, m := range []*clusterv1.Machine{cp, worker} {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: m.Name}, n); err != nil {
			t.Fatalf("the Node of Machine %s: %v", m.Name, err)
		}
		if n.Spec.ProviderID != m.Spec.ProviderID {
			t.Errorf("Node %s providerID %q, want the Machine's %q", n.Name, n.Spec.ProviderID, m.Spec.ProviderID)
		}
		// What Cluster API's NodeReady and NodeHealthy read.
		conds := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for _, c := range n.Status.Conditions {
			conds[c.Type] = c.Status
		}
		if want := map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue,
			corev1.NodeMemoryPressure: corev1.ConditionFalse, corev1.NodeDiskPressure: corev1.ConditionFalse,
			corev1.NodePIDPressure: corev1.ConditionFalse}; !maps.Equal(conds, want) {
			t.Errorf("Node %s conditions %v, want %v", n.Name, conds, want)
		}
		_, label := n.Labels[nodeRoleControlPlane]
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == nodeRoleControlPlane && t.Effect == corev1.TaintEffectNoSchedule
		})
		if isCP := m == cp; label != isCP || tainted != isCP {
			t.Errorf("Node %s control-plane label %v, taint %v; want both %v", n.Name, label, tainted, isCP)
		}
	}
	// What KubeadmControlPlane's cache selects in kube-system.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"tier": "control-plane"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
		ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
		if p.Status.Phase != corev1.PodRunning || !ready {
			t.Errorf("pod %s phase %s, Ready %v; want Running and Ready", p.Name, p.Status.Phase, ready)
		}
		if p.Spec.NodeName != cp.Name || p.Labels["component"]+"-"+cp.Name != p.Name {
			t.Errorf("pod %s on Node %q, component %q; want bound to %s and named <component>-<node>", p.Name, p.Spec.NodeName, p.Labels["component"], cp.Name)
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
			t.Errorf("pod %s is no mirror pod: a drain would evict it", p.Name)
		}
	}
	sort.Strings(names)
	if want := []string{"kube-apiserver-wl-cp-1", "kube-controller-manager-wl-cp-1", "kube-scheduler-wl-cp-1"}; !slices.Equal(names, want) {
		t.Errorf("static pods %v, want %v", names, want)
	}

	// Deleting the control-plane Machine takes its Node and pods away.
	if err := c.Delete(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{WorkloadClusterLabel: cluster}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Name != worker.Name {
		t.Errorf("Nodes after the control-plane Machine began deleting: %d, want only %s", len(nodes.Items), worker.Name)
	}
	if err := c.List(ctx, &pods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"tier": "control-plane"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d static pods left after their Node went", len(pods.Items))
	}
}
