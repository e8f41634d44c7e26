package framework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The labels a Workload puts on the Nodes and static pods it plays, naming
// the Cluster they belong to.
const (
	WorkloadNamespaceLabel = "e2e.captf.io/namespace"
	WorkloadClusterLabel   = "e2e.captf.io/cluster"
)

// The kubeadm static pods of a control-plane Node, in the order kubeadm
// writes their manifests; etcd only with a managed (stacked) etcd.
var (
	staticPodComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	etcdComponent       = "etcd"
)

// nodeRoleControlPlane is the label and taint kubeadm puts on a
// control-plane Node.
const nodeRoleControlPlane = "node-role.kubernetes.io/control-plane"

// WorkloadOptions configure a Workload.
type WorkloadOptions struct {
	// WorkersOnly registers no Node for control-plane Machines. With a
	// managed etcd, KubeadmControlPlane dials the etcd member of every
	// control-plane Node it finds through a port-forward to its etcd pod,
	// which no played kubelet serves (and which Cluster API v1.14.2's
	// dialer does racily when several are open at once).
	WorkersOnly bool
	// ManagedEtcd also plays the etcd static pod on control-plane Nodes
	// (a KubeadmControlPlane without external etcd).
	ManagedEtcd bool
	// KubernetesVersion is the kubelet version the Nodes report (default
	// v1.36.3).
	KubernetesVersion string
	// Interval between passes (default one second).
	Interval time.Duration
}

// Workload plays the kubelets of a Cluster's workload cluster on an API
// server that stands in for it (in the end-to-end environment, the
// environment's own): once a Machine of the Cluster has a providerID, it
// registers a Ready Node of the Machine's name with that providerID, as the
// kubelet of a real machine would; for a control-plane Machine the Node
// carries kubeadm's control-plane label and taint, and kube-system holds its
// running, Ready static pods (the mirror pods kubeadm's manifests give),
// which is what KubeadmControlPlane inspects before it scales or rolls out.
// The Node goes when its Machine is deleting (Cluster API usually deletes
// it itself once the infrastructure is gone), its pods with it.
//
// The pods are bound to their Node from the start and marked as mirror
// pods: the environment's process kubelet runs only pods bound to its own
// Node, and a Machine's drain skips mirror pods. Their grace period is zero
// and their owner is their Node, so they go when the Node goes.
type Workload struct {
	c           client.Client
	ns, cluster string
	opts        WorkloadOptions

	mu      sync.Mutex
	lastErr error

	cancel context.CancelFunc
	done   chan struct{}
}

// NewWorkload returns the Workload of Cluster ns/cluster, writing Nodes and
// pods with c, without starting it (see Sync and Start).
func NewWorkload(c client.Client, ns, cluster string, opts WorkloadOptions) *Workload {
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = "v1.36.3"
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	return &Workload{c: c, ns: ns, cluster: cluster, opts: opts}
}

// StartWorkload starts the Workload of Cluster ns/cluster: a pass every
// Interval until Stop.
func StartWorkload(c client.Client, ns, cluster string, opts WorkloadOptions) *Workload {
	w := NewWorkload(c, ns, cluster, opts)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.opts.Interval)
		defer t.Stop()
		for {
			if err := w.Sync(ctx); ctx.Err() == nil {
				w.mu.Lock()
				w.lastErr = err
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// Stop ends the passes. The Nodes stay, as a workload cluster's do while
// its machines run: removing them would make the Machines unhealthy.
func (w *Workload) Stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
}

// Err returns the error of the latest pass (nil when it succeeded), for a
// failing test to show. A pass that fails, on a conflict with Cluster API
// writing the same Node for instance, is made again at the next one.
func (w *Workload) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

func (w *Workload) selector() client.MatchingLabels {
	return client.MatchingLabels{WorkloadNamespaceLabel: w.ns, WorkloadClusterLabel: w.cluster}
}

// Sync makes one pass: a Node (and static pods) for every Machine of the
// Cluster that has a providerID and is not deleting, and none for any
// other.
func (w *Workload) Sync(ctx context.Context) error {
	var machines clusterv1.MachineList
	if err := w.c.List(ctx, &machines, client.InNamespace(w.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: w.cluster}); err != nil {
		return fmt.Errorf("workload %s/%s: failed to list Machines: %w", w.ns, w.cluster, err)
	}
	var nodes corev1.NodeList
	if err := w.c.List(ctx, &nodes, w.selector()); err != nil {
		return fmt.Errorf("workload %s/%s: failed to list Nodes: %w", w.ns, w.cluster, err)
	}
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace(metav1.NamespaceSystem), w.selector()); err != nil {
		return fmt.Errorf("workload %s/%s: failed to list pods: %w", w.ns, w.cluster, err)
	}
	want := desiredWorkload(machines.Items, w.opts.WorkersOnly, w.opts.ManagedEtcd)
	have := map[string]*corev1.Node{}
	for i := range nodes.Items {
		have[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var errs []error
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := want[name]
		node, err := w.registerNode(ctx, m, have[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m.controlPlane {
			errs = append(errs, w.ensureStaticPods(ctx, node, m.components, pods.Items))
		}
	}
	for name, node := range have {
		if _, ok := want[name]; !ok {
			errs = append(errs, w.deleteNode(ctx, node))
		}
	}
	// Pods whose Node is gone (deleted by Cluster API, or above).
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := want[p.Spec.NodeName]; !ok {
			errs = append(errs, w.deletePod(ctx, p))
		}
	}
	return errors.Join(errs...)
}

// workloadMachine is what a Node is made from.
type workloadMachine struct {
	name, providerID string
	controlPlane     bool
	// components are the static pods of a control-plane Node.
	components []string
}

// desiredWorkload: the Nodes the Machines call for, by Node name (the
// Machine's name, as kubeadm's default node name is the host's): every
// Machine with a providerID that is not deleting (but control-plane ones
// when workersOnly).
func desiredWorkload(machines []clusterv1.Machine, workersOnly, managedEtcd bool) map[string]workloadMachine {
	out := map[string]workloadMachine{}
	for i := range machines {
		m := &machines[i]
		if m.Spec.ProviderID == "" || !m.DeletionTimestamp.IsZero() {
			continue
		}
		wm := workloadMachine{name: m.Name, providerID: m.Spec.ProviderID}
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			if workersOnly {
				continue
			}
			wm.controlPlane = true
			wm.components = append([]string(nil), staticPodComponents...)
			if managedEtcd {
				wm.components = append(wm.components, etcdComponent)
			}
		}
		out[m.Name] = wm
	}
	return out
}

// staticPodName is the name of a mirror pod: the manifest's name, a dash
// and the Node's name.
func staticPodName(component, node string) string { return component + "-" + node }

// registerNode creates the Node of m unless it exists (node) and reports
// it Ready unless it is.
func (w *Workload) registerNode(ctx context.Context, m workloadMachine, node *corev1.Node) (*corev1.Node, error) {
	if node != nil && nodeReady(node) {
		return node, nil
	}
	if node == nil {
		var err error
		if node, err = w.createNode(ctx, m); err != nil {
			return nil, err
		}
	}
	// Cluster API writes the Node too (labels, annotations): read it again
	// on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.c.Get(ctx, client.ObjectKey{Name: m.name}, node); err != nil {
			return err
		}
		node.Status = w.nodeStatus(m)
		return w.c.Status().Update(ctx, node)
	})
	if err != nil {
		return nil, fmt.Errorf("workload %s/%s: failed to report Node %s Ready: %w", w.ns, w.cluster, m.name, err)
	}
	return node, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *Workload) createNode(ctx context.Context, m workloadMachine) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.name,
			Labels: map[string]string{
				"kubernetes.io/hostname": m.name,
				"kubernetes.io/os":       "linux",
				WorkloadNamespaceLabel:   w.ns,
				WorkloadClusterLabel:     w.cluster,
			},
		},
		Spec: corev1.NodeSpec{ProviderID: m.providerID},
	}
	if m.controlPlane {
		node.Labels[nodeRoleControlPlane] = ""
		node.Spec.Taints = []corev1.Taint{{Key: nodeRoleControlPlane, Effect: corev1.TaintEffectNoSchedule}}
	}
	if err := w.c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("workload %s/%s: failed to register Node %s: %w", w.ns, w.cluster, m.name, err)
	}
	return node, nil
}

// nodeStatus is what a healthy kubelet reports for its Node.
func (w *Workload) nodeStatus(m workloadMachine) corev1.NodeStatus {
	now := metav1.Now()
	return corev1.NodeStatus{
		Phase: corev1.NodeRunning,
		// Ready, and none of the pressures Cluster API's NodeHealthy
		// summarizes with it (a condition not reported leaves the Machine's
		// NodeHealthy Unknown, so the Machine never becomes available).
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID",
				LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		// No InternalIP: nothing can dial this kubelet (a port-forward to
		// one of its pods fails at once).
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: m.name}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:  w.opts.KubernetesVersion,
			OperatingSystem: "linux", Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.0.0",
		},
	}
}

func (w *Workload) ensureStaticPods(ctx context.Context, node *corev1.Node, components []string, pods []corev1.Pod) error {
	exists := map[string]*corev1.Pod{}
	for i := range pods {
		exists[pods[i].Name] = &pods[i]
	}
	var errs []error
	for _, comp := range components {
		p := exists[staticPodName(comp, node.Name)]
		switch {
		case p == nil:
			errs = append(errs, w.createStaticPod(ctx, node, comp))
		case p.Status.Phase != corev1.PodRunning && p.DeletionTimestamp.IsZero():
			errs = append(errs, w.reportRunning(ctx, p))
		}
	}
	return errors.Join(errs...)
}

func (w *Workload) createStaticPod(ctx context.Context, node *corev1.Node, component string) error {
	zero := int64(0)
	name := staticPodName(component, node.Name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{
				"tier": "control-plane", "component": component,
				WorkloadNamespaceLabel: w.ns, WorkloadClusterLabel: w.cluster,
			},
			Annotations: map[string]string{
				corev1.MirrorPodAnnotationKey: "captf-e2e-" + component,
				"kubernetes.io/config.source": "file",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptrTo(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  ptrTo(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Containers: []corev1.Container{{
				Name:  component,
				Image: "registry.k8s.io/" + component + ":" + w.opts.KubernetesVersion,
			}},
		},
	}
	if component == etcdComponent {
		pod.Spec.Containers[0].Image = "registry.k8s.io/etcd:3.6.5-0"
	}
	if err := w.c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("workload %s/%s: failed to create static pod %s: %w", w.ns, w.cluster, name, err)
	}
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return fmt.Errorf("workload %s/%s: failed to read static pod %s: %w", w.ns, w.cluster, name, err)
	}
	return w.reportRunning(ctx, pod)
}

// reportRunning writes the status the kubelet reports for a started,
// healthy static pod.
func (w *Workload) reportRunning(ctx context.Context, pod *corev1.Pod) error {
	component := pod.Labels["component"]
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: component, Ready: true, Started: ptrTo(true), Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if err := w.c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("workload %s/%s: failed to report static pod %s running: %w", w.ns, w.cluster, pod.Name, err)
	}
	return nil
}

func (w *Workload) deleteNode(ctx context.Context, node *corev1.Node) error {
	if err := w.c.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("workload %s/%s: failed to delete Node %s: %w", w.ns, w.cluster, node.Name, err)
	}
	return nil
}

func (w *Workload) deletePod(ctx context.Context, p *corev1.Pod) error {
	if err := w.c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("workload %s/%s: failed to delete static pod %s: %w", w.ns, w.cluster, p.Name, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
