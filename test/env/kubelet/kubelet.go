package kubelet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/podnet"
)

// DefaultNodeName is the name of the Node the kubelet registers.
const DefaultNodeName = "captf-env"

// Options configure the kubelet.
type Options struct {
	// Config is the client configuration the kubelet uses (the environment
	// passes the admin configuration). Required.
	Config *rest.Config
	// APIServerPort is the API server's port on 127.0.0.1, given to pods as
	// KUBERNETES_SERVICE_PORT. Required.
	APIServerPort int
	// Dir is the kubelet's data folder (unpacked images, pod folders and
	// logs). Required.
	Dir string
	// NodeName defaults to DefaultNodeName.
	NodeName string
	// KubernetesVersion is reported in the Node's status (informational).
	KubernetesVersion string
	// Logger receives the kubelet's progress messages.
	Logger logr.Logger
	// APIServerHost is the API server's address, given to pods as
	// KUBERNETES_SERVICE_HOST (default 127.0.0.1).
	APIServerHost string
	// PodNetwork, when set, gives every pod that is not hostNetwork a
	// network namespace and an address of its own on this network (see
	// package test/env/podnet); the Node's address, the pods' hostIP and
	// the log server's address are then the network's host address.
	PodNetwork *podnet.Network
	// Labels are added to the Node's (kubernetes.io/hostname, os and arch).
	Labels map[string]string
	// Taints are the Node's taints: a pod that does not tolerate one of
	// effect NoSchedule or NoExecute is not bound to it.
	Taints []corev1.Taint
	// ImagesFrom is another kubelet of the same environment whose pulled
	// and unpacked images this one uses, so that a second Node unpacks no
	// image twice (Dir may then be the same folder: pod folders are named
	// by the pod's UID).
	ImagesFrom *Kubelet
}

// Kubelet runs the pods bound to its Node as processes on this machine.
type Kubelet struct {
	opts   Options
	cs     kubernetes.Interface
	images *imageStore
	lister corelisters.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	log    logr.Logger
	// node is the Node as registered, which unbound pods are matched
	// against (schedulable).
	node *corev1.Node

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	logs *logServer

	mu     sync.Mutex
	pods   map[types.UID]*podWorker
	byName map[string]*podWorker // namespace/name → latest worker
}

// Start registers the Node and begins binding and running pods.
func Start(ctx context.Context, opts Options) (*Kubelet, error) {
	if opts.Config == nil || opts.Dir == "" || opts.APIServerPort == 0 {
		return nil, errors.New("kubelet: Options.Config, Options.Dir and Options.APIServerPort are required")
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.APIServerHost == "" {
		opts.APIServerHost = "127.0.0.1"
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kubelet: failed to build client: %w", err)
	}
	for _, d := range []string{"images", "pods"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("kubelet: failed to create data folder: %w", err)
		}
	}
	images := newImageStore(filepath.Join(opts.Dir, "images"))
	if opts.ImagesFrom != nil {
		images = opts.ImagesFrom.images
	}
	k := &Kubelet{
		opts:   opts,
		cs:     cs,
		images: images,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet"}),
		log:    opts.Logger,
		pods:   map[types.UID]*podWorker{},
		byName: map[string]*podWorker{},
	}
	if k.logs, err = k.startLogServer(); err != nil {
		return nil, fmt.Errorf("kubelet: failed to serve pod logs: %w", err)
	}
	if err := k.registerNode(ctx); err != nil {
		k.logs.stop()
		return nil, err
	}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods()
	k.lister = inf.Lister()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: enqueue,
	}); err != nil {
		k.cancel()
		k.logs.stop()
		return nil, fmt.Errorf("kubelet: failed to watch pods: %w", err)
	}
	factory.Start(k.ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			k.cancel()
			k.logs.stop()
			factory.Shutdown()
			return nil, errors.New("kubelet: pod cache did not sync")
		}
	}
	for range 4 {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			for k.processNext() {
			}
		}()
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		<-k.ctx.Done()
		k.queue.ShutDown()
		factory.Shutdown()
	}()
	return k, nil
}

// NodeName is the name of the kubelet's Node.
func (k *Kubelet) NodeName() string { return k.opts.NodeName }

// HostIP is the Node's address: the pod network's host address, or
// 127.0.0.1 without a pod network.
func (k *Kubelet) HostIP() string {
	if k.opts.PodNetwork != nil {
		return k.opts.PodNetwork.HostIP.String()
	}
	return "127.0.0.1"
}

// Stop kills every running pod process (SIGTERM, SIGKILL after two
// seconds) and stops watching.
func (k *Kubelet) Stop() error {
	k.cancel()
	k.logs.stop()
	k.mu.Lock()
	workers := make([]*podWorker, 0, len(k.pods))
	for _, w := range k.pods {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	for _, w := range workers {
		<-w.done
	}
	k.wg.Wait()
	return nil
}

// LogPath returns the log file of a container of the latest pod with that
// namespace and name run by this kubelet.
func (k *Kubelet) LogPath(namespace, pod, container string) (string, error) {
	k.mu.Lock()
	w, ok := k.byName[namespace+"/"+pod]
	k.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("pod %s/%s was not run by this kubelet", namespace, pod)
	}
	return w.logPath(container), nil
}

// Logs returns what a container of the pod wrote to stdout and stderr.
func (k *Kubelet) Logs(namespace, pod, container string) (string, error) {
	p, err := k.LogPath(namespace, pod, container)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("failed to read log of %s/%s container %s: %w", namespace, pod, container, err)
	}
	return string(b), nil
}

// Pids returns the process ids of the containers running now.
func (k *Kubelet) Pids() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var pids []int
	for _, w := range k.pods {
		pids = append(pids, w.pids()...)
	}
	return pids
}

func (k *Kubelet) registerNode(ctx context.Context) error {
	version := k.opts.KubernetesVersion
	if version == "" {
		version = "v0.0.0"
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	labels := maps.Clone(k.opts.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["kubernetes.io/hostname"] = k.opts.NodeName
	labels["kubernetes.io/os"] = "linux"
	labels["kubernetes.io/arch"] = runtime.GOARCH
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(k.opts.Taints)},
	}
	_, err := k.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubelet: failed to register Node %s: %w", k.opts.NodeName, err)
	}
	now := metav1.Now()
	for range 5 {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, k.opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kubelet: failed to read Node %s: %w", k.opts.NodeName, err)
		}
		n.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "process kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: k.HostIP()},
				{Type: corev1.NodeHostName, Address: k.opts.NodeName},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(k.logs.port)}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: version, OperatingSystem: "linux", Architecture: runtime.GOARCH,
				ContainerRuntimeVersion: "captf-env://1",
			},
		}
		n, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("kubelet: failed to report Node %s ready: %w", k.opts.NodeName, err)
		}
		// The API server's TaintNodesByCondition admission taints a new
		// Node node.kubernetes.io/not-ready:NoSchedule; the node lifecycle
		// controller, which this environment does not run, removes it once
		// the Node is Ready. Pods are bound by their tolerations
		// (schedulable), so it is removed here, as that controller would.
		kept := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if len(kept) != len(n.Spec.Taints) {
			n.Spec.Taints = kept
			n, err = k.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("kubelet: failed to remove the not-ready taint of Node %s: %w", k.opts.NodeName, err)
			}
		}
		k.node = n
		return nil
	}
	return fmt.Errorf("kubelet: Node %s kept changing while reporting it ready", k.opts.NodeName)
}

func (k *Kubelet) processNext() bool {
	key, shutdown := k.queue.Get()
	if shutdown {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(key); err != nil {
		k.log.Error(err, "Failed to sync pod", "pod", key)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

func (k *Kubelet) sync(key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone from the API (force-deleted): stop whatever still runs.
		k.mu.Lock()
		w := k.byName[key]
		k.mu.Unlock()
		if w != nil {
			w.markDeleted(-1)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp != nil || !k.schedulable(pod) {
			return nil
		}
		return k.bind(pod)
	}
	if pod.Spec.NodeName != k.opts.NodeName {
		return nil
	}
	k.mu.Lock()
	w, running := k.pods[pod.UID]
	if !running {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			k.mu.Unlock()
			if pod.DeletionTimestamp != nil {
				return k.forceDelete(pod.Namespace, pod.Name, pod.UID)
			}
			return nil
		}
		if k.ctx.Err() != nil {
			k.mu.Unlock()
			return nil
		}
		w = newPodWorker(k, pod)
		k.pods[pod.UID] = w
		k.byName[key] = w
		k.mu.Unlock()
		go w.run(pod.DeepCopy())
		return nil
	}
	k.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := int64(-1)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		w.markDeleted(grace)
		select {
		case <-w.done:
			return k.forceDelete(pod.Namespace, pod.Name, pod.UID)
		default:
		}
	}
	return nil
}

// schedulable reports whether an unbound pod may be bound to this Node, by
// the scheduler's own predicates from k8s.io/component-helpers: its
// nodeSelector and required node affinity match the Node
// (nodeaffinity.GetRequiredNodeAffinity), and it tolerates every taint of
// effect NoSchedule or NoExecute (FindMatchingUntoleratedTaint, as the
// scheduler's TaintToleration filter asks). A pod no Node admits stays
// Pending, unbound, as with the scheduler. With several kubelets, each
// binds the pods it admits; a pod two admit goes to the first to bind.
func (k *Kubelet) schedulable(pod *corev1.Pod) bool {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(k.node)
	if err != nil {
		k.log.V(1).Info("Not binding pod: its node affinity does not parse", "pod", pod.Namespace+"/"+pod.Name, "error", err.Error())
		return false
	}
	if !ok {
		return false
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(k.log, k.node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		k.log.V(1).Info("Not binding pod: it does not tolerate a taint", "pod", pod.Namespace+"/"+pod.Name, "taint", taint.ToString())
	}
	return !untolerated
}

func (k *Kubelet) bind(pod *corev1.Pod) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.opts.NodeName},
	}
	err := k.cs.CoreV1().Pods(pod.Namespace).Bind(k.ctx, b, metav1.CreateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to bind pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	k.log.V(1).Info("Bound pod", "pod", pod.Namespace+"/"+pod.Name, "node", k.opts.NodeName)
	return nil
}

// forceDelete removes a pod whose processes have exited (grace 0), as the
// kubelet does once a deleted pod has terminated.
func (k *Kubelet) forceDelete(ns, name string, uid types.UID) error {
	zero := int64(0)
	err := k.cs.CoreV1().Pods(ns).Delete(k.ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || k.ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to delete terminated pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// retryDelay waits d, or less if ctx or stop ends first; it reports whether
// the full delay passed.
func retryDelay(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}
