package env

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/capi"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/controlplane"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/kubelet"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/podnet"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/registry"
)

// Options choose the parts of the environment. The zero value starts etcd
// and kube-apiserver only.
type Options struct {
	// ControllerManager starts kube-controller-manager (Jobs get Pods,
	// owners garbage-collect dependents, namespaces finish deleting,
	// ServiceAccounts and the root CA ConfigMap appear). Implied by CAPI and
	// Kubelet.
	ControllerManager bool
	// CAPI runs Cluster API's core, kubeadm bootstrap and kubeadm
	// control-plane controllers in-process, with their CRDs and their
	// admission webhooks (served on 127.0.0.1 with a generated CA).
	CAPI bool
	// NoCAPIWebhooks leaves Cluster API's admission webhooks out: nothing
	// is then defaulted or validated beyond the CRD schemas (see package
	// test/env/capi for what callers must then set).
	NoCAPIWebhooks bool
	// Kubelet runs the process kubelet (registers Node captf-env and runs
	// the pods scheduled to it). Requires root.
	Kubelet bool
	// ExtraNodes, with Kubelet, are further Nodes, each run by a kubelet of
	// its own beside the first, sharing its images and data folder. A pod
	// is bound to a Node whose labels and taints its nodeSelector, required
	// node affinity and tolerations admit (package test/env/kubelet). None
	// by default: one Node.
	ExtraNodes []Node
	// Registry serves a loopback OCI registry.
	Registry bool
	// PodNetwork gives the environment a network of its own (package
	// test/env/podnet: a bridge and a /24 of 198.18.0.0/15) and each pod
	// that is not hostNetwork a network namespace and address on it, and
	// makes the cluster route to pods: the API server serves on the
	// network's host address only (Env.APIServerHost; its certificate
	// names it; 127.0.0.1 no longer answers), which the host and the pods
	// reach, and resolves Services to their endpoints
	// (--enable-aggregator-routing, so admission webhooks and aggregated
	// APIs behind a Service are called at a ready pod's address); the
	// controller manager also runs the Deployment, ReplicaSet, Endpoints
	// and EndpointSlice controllers (PodNetworkControllers). The kubelet
	// runs the pods' probes either way. Implies ControllerManager;
	// requires root.
	PodNetwork bool
	// ExtraControllers are kube-controller-manager controllers run beside
	// controlplane.DefaultControllers (and PodNetworkControllers), such as
	// "pod-garbage-collector-controller". Implies ControllerManager.
	ExtraControllers []string
	// Separate runs the registry, Cluster API's controllers and the
	// kubelet in a child process, test/env/cmd/captf-env built without
	// -race into <Dir>/bin unless EnvBinary names one (go build
	// -trimpath, with the go command on PATH, from the repository holding
	// the working directory), against
	// the control plane this process starts; Start returns once the child
	// reports them ready. A race-instrumented test binary then spends the
	// race detector on its own code only. Env.Kubelet and Env.CAPI are nil
	// in this mode; Logs, PushImage and the rest work alike. The child's
	// output (and the components' logs, when Logger is set) goes to
	// <Dir>/logs/captf-env.log.
	Separate bool
	// EnvBinary, with Separate, is a captf-env built beforehand
	// (BuildEnvBinary); default: Start builds it into <Dir>/bin. A first
	// build on a machine takes minutes, which a caller with a short bound
	// on Start spends before it.
	EnvBinary string
	// Kubeconfig, when set, is the admin kubeconfig of a running control
	// plane to use instead of starting one (the child of Separate does
	// this); Stop then leaves the control plane alone and ControlPlane is
	// nil.
	Kubeconfig string

	// APIServerArgs are extra kube-apiserver flags (--name=value), e.g.
	// an audit policy and log. Ignored with Kubeconfig, whose control
	// plane is already running.
	APIServerArgs []string

	// CRDPaths are extra CRD files or folders to install (e.g. CAPTF's
	// config/crd/bases), before Manager starts.
	CRDPaths []string
	// Manager, when set, runs in its own goroutine once everything else is
	// up (e.g. the CAPTF manager in-process); its context ends at Stop, and
	// Stop waits for it to return.
	Manager func(ctx context.Context, e *Env) error
	// ManagerCommand, when set, runs as a process once everything else is
	// up (see StartProcess: KUBECONFIG points at the admin kubeconfig, and
	// CAPTF_ENV_REGISTRY names the registry); Stop sends it SIGTERM. The
	// first element is the binary.
	ManagerCommand []string

	// Dir is the data folder; default a new temporary folder that Stop
	// removes unless KeepDir is set.
	Dir     string
	KeepDir bool
	// Logger receives the in-process components' logs (default discarded).
	Logger logr.Logger
}

// Node is a further Node of the environment (Options.ExtraNodes).
type Node struct {
	// Name of the Node; required and unique.
	Name string `json:"name"`
	// Labels are added to the Node's standard ones.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints of the Node.
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// PodNetworkControllers are the kube-controller-manager controllers
// Options.PodNetwork adds to controlplane.DefaultControllers: Deployments
// get ReplicaSets and ReplicaSets pods, and Services get Endpoints and the
// EndpointSlices the API server routes webhook calls by.
var PodNetworkControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"endpoints-controller",
	"endpointslice-controller",
}

// Env is a running environment.
type Env struct {
	// Dir is the data folder (certificates, etcd, logs, pods).
	Dir string
	// Config is the admin (system:masters) client configuration.
	Config *rest.Config
	// KubeconfigPath is the admin kubeconfig file.
	KubeconfigPath string
	// APIServerHost and APIServerPort are the API server's address and
	// port: 127.0.0.1, or the pod network's host address.
	APIServerHost string
	APIServerPort int
	// PodNetwork is the environment's pod network (Options.PodNetwork),
	// nil without one.
	PodNetwork *podnet.Network
	// Registry is host:port of the loopback registry ("" without one).
	Registry string
	// Client is a controller-runtime client with the Kubernetes and
	// Cluster API types; Clientset a client-go clientset.
	Client    client.Client
	Clientset kubernetes.Interface

	ControlPlane *controlplane.ControlPlane
	// Kubelet and CAPI are the in-process components (nil with
	// Options.Separate, whose child process runs them).
	Kubelet *kubelet.Kubelet
	CAPI    *capi.CAPI
	// ExtraKubelets run Options.ExtraNodes, in order (none with
	// Options.Separate).
	ExtraKubelets []*kubelet.Kubelet
	// EnvBinary is the captf-env binary the child process of
	// Options.Separate runs ("" otherwise); its push-images command builds
	// and pushes CAPTF's images outside the calling process.
	EnvBinary string
	reg       *registry.Registry
	child     *controlplane.Process

	opts      Options
	ownDir    bool
	stopOnce  sync.Once
	stopErr   error
	mgrCancel context.CancelFunc
	mgrDone   chan error
	procMu    sync.Mutex
	processes []*controlplane.Process
}

// Start brings the environment up. On error, whatever was started is
// stopped again.
func Start(ctx context.Context, opts Options) (e *Env, err error) {
	if opts.CAPI || opts.Kubelet || opts.PodNetwork || len(opts.ExtraControllers) > 0 {
		opts.ControllerManager = true
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	e = &Env{opts: opts, Dir: opts.Dir}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "captf-env-"); err != nil {
			return nil, fmt.Errorf("env: failed to create data folder: %w", err)
		}
		e.ownDir = true
	} else if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("env: failed to create data folder: %w", err)
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
			e = nil
		}
	}()

	if opts.Registry && !opts.Separate {
		if e.reg, err = registry.Start(); err != nil {
			return e, err
		}
		e.Registry = e.reg.Host
	}
	if opts.Kubeconfig != "" {
		if e.Config, e.APIServerHost, e.APIServerPort, err = attach(opts.Kubeconfig); err != nil {
			return e, err
		}
		e.KubeconfigPath = opts.Kubeconfig
		if opts.PodNetwork {
			// The process that started the control plane made the
			// network, and serves the API server on its host address.
			if e.PodNetwork, err = podnet.Attach(net.ParseIP(e.APIServerHost)); err != nil {
				return e, fmt.Errorf("env: the control plane of %s has no pod network: %w", opts.Kubeconfig, err)
			}
		}
	} else {
		cpOpts := controlplane.Options{
			Dir:               filepath.Join(e.Dir, "controlplane"),
			ControllerManager: opts.ControllerManager,
		}
		if opts.PodNetwork {
			if e.PodNetwork, err = podnet.Create(); err != nil {
				return e, fmt.Errorf("env: %w", err)
			}
			cpOpts.Address = e.PodNetwork.HostIP.String()
			cpOpts.APIServerArgs = []string{"--enable-aggregator-routing=true"}
			cpOpts.Controllers = append(slices.Clone(controlplane.DefaultControllers), PodNetworkControllers...)
		}
		if len(opts.ExtraControllers) > 0 {
			if cpOpts.Controllers == nil {
				cpOpts.Controllers = slices.Clone(controlplane.DefaultControllers)
			}
			cpOpts.Controllers = append(cpOpts.Controllers, opts.ExtraControllers...)
		}
		cpOpts.APIServerArgs = append(cpOpts.APIServerArgs, opts.APIServerArgs...)
		if e.ControlPlane, err = controlplane.Start(ctx, cpOpts); err != nil {
			return e, err
		}
		e.Config, e.KubeconfigPath, e.APIServerPort = e.ControlPlane.Config, e.ControlPlane.KubeconfigPath, e.ControlPlane.Port
		e.APIServerHost = cpOpts.Address
		if e.APIServerHost == "" {
			e.APIServerHost = "127.0.0.1"
		}
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Config); err != nil {
		return e, fmt.Errorf("env: failed to build clientset: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: capi.Scheme()}); err != nil {
		return e, fmt.Errorf("env: failed to build client: %w", err)
	}

	if opts.Separate {
		if err := e.startChild(ctx); err != nil {
			return e, err
		}
	}

	// Cluster API and the kubelet start side by side.
	var wg sync.WaitGroup
	var capiErr, kubeletErr error
	if opts.CAPI && !opts.Separate {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.CAPI, capiErr = capi.Start(ctx, capi.Options{
				Config: e.Config, Logger: opts.Logger, NoWebhooks: opts.NoCAPIWebhooks, Dir: filepath.Join(e.Dir, "capi"),
			})
		}()
	}
	if opts.Kubelet && !opts.Separate {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Kubelet, kubeletErr = kubelet.Start(ctx, kubelet.Options{
				Config:            e.Config,
				APIServerHost:     e.APIServerHost,
				APIServerPort:     e.APIServerPort,
				PodNetwork:        e.PodNetwork,
				Dir:               filepath.Join(e.Dir, "kubelet"),
				KubernetesVersion: serverVersion(e.Clientset),
				Logger:            opts.Logger.WithName("kubelet"),
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(capiErr, kubeletErr); err != nil {
		return e, err
	}
	if e.Kubelet != nil {
		if err := e.startExtraKubelets(ctx); err != nil {
			return e, err
		}
	}
	if len(opts.CRDPaths) > 0 {
		if err := capi.InstallCRDs(e.Config, opts.CRDPaths...); err != nil {
			return e, err
		}
	}

	if opts.Manager != nil {
		mctx, cancel := context.WithCancel(context.Background())
		e.mgrCancel, e.mgrDone = cancel, make(chan error, 1)
		go func() { e.mgrDone <- opts.Manager(mctx, e) }()
	}
	if len(opts.ManagerCommand) > 0 {
		if _, err := e.StartProcess("manager", opts.ManagerCommand); err != nil {
			return e, err
		}
	}
	return e, nil
}

// startExtraKubelets runs a kubelet for each of Options.ExtraNodes beside
// the first, with its client, pod network, data folder and images.
func (e *Env) startExtraKubelets(ctx context.Context) error {
	first := e.Kubelet
	for _, n := range e.opts.ExtraNodes {
		if n.Name == "" || n.Name == first.NodeName() {
			return fmt.Errorf("env: an extra Node needs a name of its own (got %q)", n.Name)
		}
		k, err := kubelet.Start(ctx, kubelet.Options{
			Config:            e.Config,
			APIServerHost:     e.APIServerHost,
			APIServerPort:     e.APIServerPort,
			PodNetwork:        e.PodNetwork,
			Dir:               filepath.Join(e.Dir, "kubelet"),
			NodeName:          n.Name,
			Labels:            n.Labels,
			Taints:            n.Taints,
			ImagesFrom:        first,
			KubernetesVersion: serverVersion(e.Clientset),
			Logger:            e.opts.Logger.WithName("kubelet").WithValues("node", n.Name),
		})
		if err != nil {
			return err
		}
		e.ExtraKubelets = append(e.ExtraKubelets, k)
	}
	return nil
}

func serverVersion(cs kubernetes.Interface) string {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return ""
	}
	return v.GitVersion
}

// ForTest starts an environment for a test and stops it when the test ends.
// It fails the test if the environment does not start.
func ForTest(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("failed to start the local environment: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() && e.ownDir {
			e.opts.KeepDir = true
			t.Logf("local environment kept for inspection in %s (logs under controlplane/logs and kubelet/pods)", e.Dir)
		}
		if err := e.Stop(); err != nil {
			t.Errorf("failed to stop the local environment: %v", err)
		}
	})
	return e
}

// Stop stops everything in reverse order and removes the data folder when
// Start created it (and KeepDir is not set). It is safe to call twice.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		e.procMu.Lock()
		procs := e.processes
		e.processes = nil
		e.procMu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			errs = append(errs, procs[i].Stop(30*time.Second))
		}
		if e.mgrCancel != nil {
			e.mgrCancel()
			if err := <-e.mgrDone; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("manager: %w", err))
			}
		}
		if e.child != nil {
			errs = append(errs, e.stopChild())
		}
		for i := len(e.ExtraKubelets) - 1; i >= 0; i-- {
			errs = append(errs, e.ExtraKubelets[i].Stop())
		}
		if e.Kubelet != nil {
			errs = append(errs, e.Kubelet.Stop())
		}
		if e.CAPI != nil {
			errs = append(errs, e.CAPI.Stop())
		}
		if e.ControlPlane != nil {
			errs = append(errs, e.ControlPlane.Stop())
		}
		if e.reg != nil {
			errs = append(errs, e.reg.Stop())
		}
		if e.PodNetwork != nil {
			// Last: pods and the API server are gone. A network this
			// process attached to is left to the one that made it.
			errs = append(errs, e.PodNetwork.Close())
		}
		if e.ownDir && !e.opts.KeepDir {
			if err := os.RemoveAll(e.Dir); err != nil {
				errs = append(errs, fmt.Errorf("failed to remove %s: %w", e.Dir, err))
			}
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// ProcessEnv returns the variables a process run against the environment
// gets: KUBECONFIG, CAPTF_ENV_REGISTRY (host:port, when there is a
// registry) and CAPTF_ENV_DIR.
func (e *Env) ProcessEnv() []string {
	vars := []string{"KUBECONFIG=" + e.KubeconfigPath, "CAPTF_ENV_DIR=" + e.Dir}
	if e.Registry != "" {
		vars = append(vars, "CAPTF_ENV_REGISTRY="+e.Registry)
	}
	return vars
}

// StartProcess runs argv (binary first) as a process against the
// environment, with ProcessEnv added to its environment and its output in
// <Dir>/logs/<name>.log; Stop sends it SIGTERM (SIGKILL after 30 s) before
// stopping anything else.
func (e *Env) StartProcess(name string, argv []string) (*controlplane.Process, error) {
	return e.StartProcessWithEnv(name, argv, nil)
}

// StartProcessWithEnv is StartProcess with vars (KEY=VALUE) added to the
// process's environment after ProcessEnv.
func (e *Env) StartProcessWithEnv(name string, argv, vars []string) (*controlplane.Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("env: StartProcess needs a command")
	}
	p, err := controlplane.StartProcessEnv(name, argv[0], argv[1:], filepath.Join(e.Dir, "logs"), append(e.ProcessEnv(), vars...))
	if err != nil {
		return nil, err
	}
	e.procMu.Lock()
	e.processes = append(e.processes, p)
	e.procMu.Unlock()
	return p, nil
}

// PushImage pushes img to the loopback registry under repo (with a tag,
// e.g. "captf/noop-cluster:dev") and returns <registry>/<repo>@sha256:….
func (e *Env) PushImage(ctx context.Context, repo string, img v1.Image) (string, error) {
	if e.reg != nil {
		return e.reg.Push(ctx, repo, img)
	}
	if e.Registry == "" {
		return "", errors.New("env: started without a registry")
	}
	return registry.PushTo(ctx, e.Registry, repo, img)
}

// ImageRef returns the reference of repo in the loopback registry.
func (e *Env) ImageRef(repo string) string { return e.Registry + "/" + repo }

// Logs returns the output of a container of a pod the kubelet ran (the
// latest pod of that namespace and name).
func (e *Env) Logs(namespace, pod, container string) (string, error) {
	if e.Kubelet != nil {
		out, err := e.Kubelet.Logs(namespace, pod, container)
		for _, k := range e.ExtraKubelets {
			if err == nil {
				break
			}
			if _, lerr := k.LogPath(namespace, pod, container); lerr == nil {
				out, err = k.Logs(namespace, pod, container)
			}
		}
		return out, err
	}
	if e.child == nil || !e.opts.Kubelet {
		return "", errors.New("env: started without a kubelet")
	}
	return e.childLogs(namespace, pod, container)
}

// Pids returns the process ids of the environment's child processes
// (control plane, manager process, running containers; with
// Options.Separate, the captf-env process, whose containers are its own
// children).
func (e *Env) Pids() []int {
	var pids []int
	if e.ControlPlane != nil {
		pids = append(pids, e.ControlPlane.Pids()...)
	}
	if e.child != nil {
		pids = append(pids, e.child.Pid())
	}
	e.procMu.Lock()
	for _, p := range e.processes {
		pids = append(pids, p.Pid())
	}
	e.procMu.Unlock()
	if e.Kubelet != nil {
		pids = append(pids, e.Kubelet.Pids()...)
	}
	for _, k := range e.ExtraKubelets {
		pids = append(pids, k.Pids()...)
	}
	return pids
}

// RSS returns the resident memory in bytes of the environment's processes
// and of the calling process (which hosts Cluster API, the kubelet and the
// registry, unless Options.Separate moved them to the child process), each
// from /proc/<pid>/status.
func (e *Env) RSS() (total int64, perProcess map[string]int64, err error) {
	perProcess = map[string]int64{}
	pids := append([]int{os.Getpid()}, e.Pids()...)
	for _, pid := range pids {
		name, rss, err := procRSS(pid)
		if errors.Is(err, os.ErrNotExist) {
			continue // exited meanwhile
		}
		if err != nil {
			return 0, nil, err
		}
		key := name + "/" + strconv.Itoa(pid)
		if pid == os.Getpid() {
			key = "self(" + name + ")"
		}
		perProcess[key] = rss
		total += rss
	}
	return total, perProcess, nil
}

func procRSS(pid int) (string, int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return "", 0, fmt.Errorf("failed to read status of process %d: %w", pid, err)
	}
	defer f.Close()
	var name string
	var rss int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				rss = kb * 1024
			}
		}
	}
	return name, rss, nil
}
