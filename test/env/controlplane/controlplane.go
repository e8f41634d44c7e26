package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// DefaultControllers are the kube-controller-manager controllers the
// environment runs: enough for Jobs to get Pods, for owners to garbage-collect
// their dependents, for namespaces to finish deleting, and for pods to find
// their ServiceAccount and the kube-root-ca.crt ConfigMap.
var DefaultControllers = []string{
	"job-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"ttl-after-finished-controller",
}

// Options configure a control plane.
type Options struct {
	// Dir is the data folder (etcd data, certificates, logs, kubeconfig).
	// Required.
	Dir string
	// ControllerManager also starts kube-controller-manager.
	ControllerManager bool
	// Controllers overrides DefaultControllers.
	Controllers []string
	// APIServerArgs are extra kube-apiserver flags (--name=value).
	APIServerArgs []string
	// ControllerManagerArgs are extra kube-controller-manager flags.
	ControllerManagerArgs []string
	// Address is the one address the API server serves on, advertises and
	// names in its certificate (default 127.0.0.1). The environment's pod
	// network sets its host address on the bridge, which the host and the
	// pods reach alike.
	Address string
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	Dir  string
	PKI  *PKI
	Host string // https://<Options.Address>:<port>
	Port int
	// Config is the admin (system:masters) client configuration.
	Config *rest.Config
	// KubeconfigPath is the admin kubeconfig file.
	KubeconfigPath string

	Etcd, APIServer, ControllerManager *Process
	// EtcdURL is etcd's client URL (plain HTTP on loopback).
	EtcdURL string
}

// ClientQPS and ClientBurst are the client rate limits of the environment's
// admin config, shared by everything in it (the kubelet, Cluster API, the
// tests' clients).
const (
	ClientQPS   = 200
	ClientBurst = 400
)

// Start generates certificates, starts etcd and kube-apiserver (and
// kube-controller-manager when asked) and waits until the API server is
// ready (and, with the controller manager, until the default namespace has
// its ServiceAccount and root CA ConfigMap). On error everything started is
// stopped.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	// Ports are picked free but bound only by the child: another process
	// may take one in between. Such a start is retried on fresh ports.
	for attempt := 1; ; attempt++ {
		cp, err := start(ctx, opts)
		if err == nil || attempt == 3 || !errors.Is(err, errPortTaken) {
			return cp, err
		}
		if rerr := os.RemoveAll(filepath.Join(opts.Dir, "etcd")); rerr != nil {
			return nil, fmt.Errorf("failed to clear etcd data before retrying: %w", rerr)
		}
	}
}

var errPortTaken = errors.New("a port was taken by another process")

// pickPort chooses the ports of a start (replaced in tests).
var pickPort = FreePort

// portError marks a process's early exit as a port race when its log says
// so.
func portError(p *Process) error {
	err := p.ExitError()
	if strings.Contains(p.LogTail(20), "address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

func start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if opts.Dir == "" {
		return nil, errors.New("controlplane: Options.Dir is required")
	}
	etcdBin, err := tools.Path("etcd")
	if err != nil {
		return nil, fmt.Errorf("failed to locate etcd: %w", err)
	}
	apiBin, err := tools.Path("kube-apiserver")
	if err != nil {
		return nil, fmt.Errorf("failed to locate kube-apiserver: %w", err)
	}
	kcmBin := ""
	if opts.ControllerManager {
		if kcmBin, err = tools.Path("kube-controller-manager"); err != nil {
			return nil, fmt.Errorf("failed to locate kube-controller-manager: %w", err)
		}
	}

	addr := opts.Address
	if addr == "" {
		addr = "127.0.0.1"
	}
	ip := net.ParseIP(addr)
	if ip == nil {
		return nil, fmt.Errorf("controlplane: Options.Address %q is not an IP address", addr)
	}
	pki, err := NewPKI(filepath.Join(opts.Dir, "pki"), ip)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Dir: opts.Dir, PKI: pki}
	defer func() {
		if err != nil {
			_ = cp.Stop()
			cp = nil
		}
	}()
	logDir := filepath.Join(opts.Dir, "logs")

	var ports [3]int
	for i := range ports {
		if ports[i], err = pickPort(); err != nil {
			return cp, err
		}
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	cp.Port = ports[2]
	cp.EtcdURL = etcdURL
	cp.Host = "https://" + net.JoinHostPort(addr, strconv.Itoa(cp.Port))

	cp.Etcd, err = StartProcess("etcd", etcdBin, []string{
		"--name=captf-env",
		"--data-dir=" + filepath.Join(opts.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=captf-env=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, logDir)
	if err != nil {
		return cp, err
	}

	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + addr,
		"--secure-port=" + strconv.Itoa(cp.Port),
		"--advertise-address=" + addr,
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(opts.Dir, "apiserver"),
		"--tls-cert-file=" + pki.ServingCert,
		"--tls-private-key-file=" + pki.ServingKey,
		"--client-ca-file=" + pki.CACert,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.SAPub,
		"--service-account-signing-key-file=" + pki.SAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--profiling=false",
		// The process kubelet's Node names a hostname that does not
		// resolve; pod logs are proxied to its 127.0.0.1 address.
		"--kubelet-preferred-address-types=InternalIP",
	}
	apiArgs = append(apiArgs, opts.APIServerArgs...)
	cp.APIServer, err = StartProcess("kube-apiserver", apiBin, apiArgs, logDir)
	if err != nil {
		return cp, err
	}

	caData, err := pki.CAData()
	if err != nil {
		return cp, fmt.Errorf("failed to read CA: %w", err)
	}
	cp.Config = &rest.Config{
		Host:            cp.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: caData, CertFile: pki.AdminCert, KeyFile: pki.AdminKey},
		QPS:             ClientQPS,
		Burst:           ClientBurst,
	}
	if cp.Config, err = loadCertData(cp.Config); err != nil {
		return cp, err
	}
	cp.KubeconfigPath = filepath.Join(opts.Dir, "kubeconfig")
	if err := WriteKubeconfig(cp.KubeconfigPath, cp.Config, "captf-env"); err != nil {
		return cp, err
	}
	if err := cp.waitReady(ctx); err != nil {
		return cp, err
	}

	if opts.ControllerManager {
		kcmConfig := rest.CopyConfig(cp.Config)
		kcmConfig.TLSClientConfig.CertData, kcmConfig.TLSClientConfig.KeyData = nil, nil
		kcmConfig.TLSClientConfig.CertFile, kcmConfig.TLSClientConfig.KeyFile = pki.KCMCert, pki.KCMKey
		if kcmConfig, err = loadCertData(kcmConfig); err != nil {
			return cp, err
		}
		kcmKubeconfig := filepath.Join(opts.Dir, "controller-manager.kubeconfig")
		if err := WriteKubeconfig(kcmKubeconfig, kcmConfig, "captf-env"); err != nil {
			return cp, err
		}
		controllers := opts.Controllers
		if len(controllers) == 0 {
			controllers = DefaultControllers
		}
		kcmArgs := []string{
			"--kubeconfig=" + kcmKubeconfig,
			"--controllers=" + strings.Join(controllers, ","),
			"--leader-elect=false",
			"--secure-port=0",
			"--service-account-private-key-file=" + pki.SAKey,
			"--root-ca-file=" + pki.CACert,
			"--cluster-name=captf-env",
			"--concurrent-gc-syncs=5",
		}
		kcmArgs = append(kcmArgs, opts.ControllerManagerArgs...)
		if v := os.Getenv("CAPTF_ENV_KCM_V"); v != "" {
			kcmArgs = append(kcmArgs, "--v="+v)
		}
		cp.ControllerManager, err = StartProcess("kube-controller-manager", kcmBin, kcmArgs, logDir)
		if err != nil {
			return cp, err
		}
		if err := cp.waitControllers(ctx); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

func loadCertData(c *rest.Config) (*rest.Config, error) {
	c = rest.CopyConfig(c)
	if c.CertFile != "" {
		b, err := os.ReadFile(c.CertFile)
		if err != nil {
			return nil, fmt.Errorf("failed to read client certificate: %w", err)
		}
		c.CertData, c.CertFile = b, ""
	}
	if c.KeyFile != "" {
		b, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("failed to read client key: %w", err)
		}
		c.KeyData, c.KeyFile = b, ""
	}
	return c, nil
}

// WriteKubeconfig writes a self-contained kubeconfig (certificates embedded)
// for cfg, with one context named name.
func WriteKubeconfig(path string, cfg *rest.Config, name string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("failed to write kubeconfig %s: %w", path, err)
	}
	return nil
}

// waitReady polls /readyz until the API server answers ok.
func (cp *ControlPlane) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("failed to build client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	for {
		var status int
		res := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if res.Error() == nil && status == http.StatusOK {
			return nil
		}
		last = res.Error()
		select {
		case <-cp.Etcd.Exited():
			return portError(cp.Etcd)
		case <-cp.APIServer.Exited():
			return portError(cp.APIServer)
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready (%v); last log lines:\n%s", last, cp.APIServer.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitControllers waits until the default namespace has its ServiceAccount
// and the root CA ConfigMap, the first things pods need.
func (cp *ControlPlane) waitControllers(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("failed to build client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		_, errSA := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		_, errCM := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		if errSA == nil && errCM == nil {
			return nil
		}
		for _, e := range []error{errSA, errCM} {
			if e != nil && !apierrors.IsNotFound(e) && ctx.Err() == nil {
				return fmt.Errorf("failed to check controller-manager readiness: %w", e)
			}
		}
		select {
		case <-cp.ControllerManager.Exited():
			return cp.ControllerManager.ExitError()
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager did not publish the default ServiceAccount and root CA; last log lines:\n%s",
				cp.ControllerManager.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops the controller manager, the API server and etcd, in that order.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, p := range []*Process{cp.ControllerManager, cp.APIServer, cp.Etcd} {
		if p != nil {
			if err := p.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Pids returns the process ids of the running control plane processes.
func (cp *ControlPlane) Pids() []int {
	var pids []int
	for _, p := range []*Process{cp.Etcd, cp.APIServer, cp.ControllerManager} {
		if p != nil {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after grace) and
// starts it again on the same port with the same etcd, then waits until it
// is ready. Clients keep their configuration: only their connections break.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, grace time.Duration) error {
	if err := cp.APIServer.Stop(grace); err != nil {
		return err
	}
	if err := cp.APIServer.Start(); err != nil {
		return err
	}
	return cp.waitReady(ctx)
}

// CompactEtcd compacts etcd's history up to its current revision, as the
// API server's periodic compaction would once enough time passed: no
// earlier revision can be read or watched from etcd afterwards. It returns
// that revision.
func (cp *ControlPlane) CompactEtcd(ctx context.Context) (int64, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	resp, err := c.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}

// StopEtcd stops etcd (SIGTERM, SIGKILL after grace), keeping its data; the
// API server stays up and fails or holds the requests that need storage.
func (cp *ControlPlane) StopEtcd(grace time.Duration) error {
	return cp.Etcd.Stop(grace)
}

// StartEtcd starts a stopped etcd again on its data and ports, then waits
// until the API server is ready on it.
func (cp *ControlPlane) StartEtcd(ctx context.Context) error {
	if err := cp.Etcd.Start(); err != nil {
		return err
	}
	return cp.waitReady(ctx)
}
