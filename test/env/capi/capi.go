package capi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	bootstrapsetup "sigs.k8s.io/cluster-api/bootstrap/kubeadm/setup"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controlplane/kubeadm/reconcilers/kubeadmcontrolplane"
	controlplanesetup "sigs.k8s.io/cluster-api/controlplane/kubeadm/setup"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinepool"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	topologycluster "sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster"
	topologymachinedeployment "sigs.k8s.io/cluster-api/core/reconcilers/topology/machinedeployment"
	topologymachineset "sigs.k8s.io/cluster-api/core/reconcilers/topology/machineset"
	coresetup "sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/index"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/admission"
)

// Module is the Cluster API Go module whose controllers and CRDs run.
const Module = "sigs.k8s.io/cluster-api"

// ModuleDir returns the folder of the pinned Cluster API module in the Go
// module cache.
func ModuleDir() (string, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("failed to locate the %s module: %w", Module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("the %s module is not downloaded (run go mod download)", Module)
	}
	return dir, nil
}

// ModuleVersion returns the version of the pinned Cluster API module, the
// version the local environment's Cluster API runs (v1.14.2).
func ModuleVersion() (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	_, v, ok := strings.Cut(filepath.Base(dir), "@")
	if !ok {
		return "", fmt.Errorf("no version in %s", dir)
	}
	return v, nil
}

// CRDSet is a folder of CRDs with the labels the provider's kustomization
// adds to them (the Cluster API contract labels).
type CRDSet struct {
	Path   string
	Labels map[string]string
}

// CRDs returns the CRD folders of the pinned Cluster API module (core,
// kubeadm bootstrap, kubeadm control plane) with their contract labels.
func CRDs() ([]CRDSet, error) {
	dir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	contract := map[string]string{"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2"}
	return []CRDSet{
		{Path: filepath.Join(dir, "core", "config", "crd", "bases")},
		{Path: filepath.Join(dir, "bootstrap", "kubeadm", "config", "crd", "bases"), Labels: contract},
		{Path: filepath.Join(dir, "controlplane", "kubeadm", "config", "crd", "bases"), Labels: contract},
	}, nil
}

// InstallCRDs installs the CRDs found in paths (files or folders) and waits
// until they are served.
func InstallCRDs(cfg *rest.Config, paths ...string) error {
	sets := make([]CRDSet, 0, len(paths))
	for _, p := range paths {
		sets = append(sets, CRDSet{Path: p})
	}
	return InstallCRDSets(cfg, sets...)
}

// InstallCRDSets installs the CRDs of each set, adding the set's labels, and
// waits until they are all served.
func InstallCRDSets(cfg *rest.Config, sets ...CRDSet) error {
	opts := envtest.CRDInstallOptions{ErrorIfPathMissing: true, PollInterval: 50 * time.Millisecond, MaxTime: time.Minute}
	for _, set := range sets {
		read := envtest.CRDInstallOptions{Paths: []string{set.Path}, ErrorIfPathMissing: true}
		if err := envtest.ReadCRDFiles(&read); err != nil {
			return fmt.Errorf("failed to read CRDs from %s: %w", set.Path, err)
		}
		for _, crd := range read.CRDs {
			if len(set.Labels) > 0 {
				l := crd.GetLabels()
				if l == nil {
					l = map[string]string{}
				}
				for k, v := range set.Labels {
					l[k] = v
				}
				crd.SetLabels(l)
			}
		}
		opts.CRDs = append(opts.CRDs, read.CRDs...)
	}
	// Created side by side: the API server spends most of a CRD's creation
	// rebuilding its OpenAPI documents, and Cluster API has about twenty.
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to build apiextensions client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(6)
	for _, crd := range opts.CRDs {
		g.Go(func() error {
			_, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(gctx, crd, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				existing, gerr := cs.ApiextensionsV1().CustomResourceDefinitions().Get(gctx, crd.Name, metav1.GetOptions{})
				if gerr != nil {
					return fmt.Errorf("failed to read CRD %s: %w", crd.Name, gerr)
				}
				crd.ResourceVersion = existing.ResourceVersion
				_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Update(gctx, crd, metav1.UpdateOptions{})
			}
			if err != nil {
				return fmt.Errorf("failed to install CRD %s: %w", crd.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := envtest.WaitForCRDs(cfg, opts.CRDs, opts); err != nil {
		return fmt.Errorf("CRDs were not served in time: %w", err)
	}
	return nil
}

var starts atomic.Int64

// enableTopology turns Cluster API's ClusterTopology feature gate on, as
// clusterctl init does with CLUSTER_TOPOLOGY=true. The gate is global to
// the process and read by the webhooks as well as the controllers.
var enableTopology = sync.OnceValue(func() error {
	return feature.MutableGates.Set(string(feature.ClusterTopology) + "=true")
})

// Options configure the in-process Cluster API.
type Options struct {
	// Config is the admin client configuration. Required.
	Config *rest.Config
	// Logger receives the controllers' logs (default: discarded).
	Logger logr.Logger
	// SkipCRDs leaves CRD installation to the caller.
	SkipCRDs bool
	// NoWebhooks runs the controllers without Cluster API's admission
	// webhooks (then nothing is defaulted or validated beyond the CRD
	// schemas).
	NoWebhooks bool
	// Dir holds the webhook serving certificates (default: a temporary
	// folder removed by Stop).
	Dir string
}

// CAPI is the running set of Cluster API managers.
type CAPI struct {
	cancel   context.CancelFunc
	done     []chan error
	cleanups []func()
}

// Start installs the CRDs and starts the core, kubeadm bootstrap and kubeadm
// control-plane managers; it returns once their caches have synced.
func Start(ctx context.Context, opts Options) (*CAPI, error) {
	if opts.Config == nil {
		return nil, errors.New("capi: Options.Config is required")
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if !opts.SkipCRDs {
		sets, err := CRDs()
		if err != nil {
			return nil, err
		}
		if err := InstallCRDSets(opts.Config, sets...); err != nil {
			return nil, err
		}
	}
	if err := enableTopology(); err != nil {
		return nil, fmt.Errorf("capi: failed to enable the ClusterTopology feature gate: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &CAPI{cancel: cancel}
	modDir := ""
	if !opts.NoWebhooks {
		var err error
		if modDir, err = ModuleDir(); err != nil {
			cancel()
			return nil, err
		}
		if opts.Dir == "" {
			if opts.Dir, err = os.MkdirTemp("", "captf-env-capi-"); err != nil {
				cancel()
				return nil, fmt.Errorf("capi: failed to create folder: %w", err)
			}
			dir := opts.Dir
			c.cleanups = append(c.cleanups, func() { _ = os.RemoveAll(dir) })
		}
	}
	type provider struct {
		name     string
		cache    func(*runtime.Scheme) ctrl.Options
		setup    func(context.Context, ctrl.Manager) (clustercache.ClusterCache, error)
		webhooks func(ctrl.Manager, clustercache.ClusterCache) error
		manifest string // webhook manifests, relative to the module
	}
	sync := 10 * time.Minute
	// Informer names must be unique in a process: a second environment in
	// the same test binary gets its own suffix.
	suffix := ""
	if n := starts.Add(1); n > 1 {
		suffix = fmt.Sprintf("-%d", n)
	}
	providers := []provider{
		{"capi-core", func(s *runtime.Scheme) ctrl.Options {
			return ctrl.Options{Cache: coresetup.ManagerCacheOptions(s, "capi-core"+suffix, "", sync), Client: coresetup.ManagerClientOptions()}
		}, setupCore, coreWebhooks, "core/config/webhook/manifests.yaml"},
		{"capi-kubeadm-bootstrap", func(s *runtime.Scheme) ctrl.Options {
			return ctrl.Options{Cache: bootstrapsetup.ManagerCacheOptions(s, "capi-kubeadm-bootstrap"+suffix, "", sync), Client: bootstrapsetup.ManagerClientOptions()}
		}, setupBootstrap, bootstrapWebhooks, "bootstrap/kubeadm/config/webhook/manifests.yaml"},
		{"capi-kubeadm-control-plane", func(s *runtime.Scheme) ctrl.Options {
			return ctrl.Options{Cache: controlplanesetup.ManagerCacheOptions(s, "capi-kubeadm-control-plane"+suffix, "", sync), Client: controlplanesetup.ManagerClientOptions()}
		}, setupControlPlane, controlPlaneWebhooks, "controlplane/kubeadm/config/webhook/manifests.yaml"},
	}
	fail := func(err error) (*CAPI, error) {
		_ = c.Stop()
		return nil, err
	}
	mgrs := make([]ctrl.Manager, len(providers))
	ports := make([]int, len(providers))
	cas := make([][]byte, len(providers))
	for i, p := range providers {
		s := Scheme()
		mo := p.cache(s)
		mo.Scheme = s
		mo.Logger = opts.Logger.WithName(p.name)
		mo.Metrics = metricsserver.Options{BindAddress: "0"}
		mo.HealthProbeBindAddress = "0"
		mo.LeaderElection = false
		mo.Controller = config.Controller{SkipNameValidation: ptr.To(true), CacheSyncTimeout: 2 * time.Minute}
		if !opts.NoWebhooks {
			certDir := filepath.Join(opts.Dir, p.name+"-webhook")
			var err error
			if cas[i], err = admission.Certs(certDir); err != nil {
				return fail(err)
			}
			if ports[i], err = admission.FreePort(); err != nil {
				return fail(err)
			}
			mo.WebhookServer = admission.NewServer(certDir, ports[i])
		}
		mgr, err := ctrl.NewManager(opts.Config, mo)
		if err != nil {
			return fail(fmt.Errorf("capi: failed to create the %s manager: %w", p.name, err))
		}
		cc, err := p.setup(runCtx, mgr)
		if err != nil {
			return fail(fmt.Errorf("capi: failed to set up %s: %w", p.name, err))
		}
		if !opts.NoWebhooks {
			if err := p.webhooks(mgr, cc); err != nil {
				return fail(fmt.Errorf("capi: failed to set up the %s webhooks: %w", p.name, err))
			}
		}
		done := make(chan error, 1)
		c.done = append(c.done, done)
		go func() { done <- mgr.Start(runCtx) }()
		mgrs[i] = mgr
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer waitCancel()
	for i, mgr := range mgrs {
		if !mgr.GetCache().WaitForCacheSync(waitCtx) {
			return fail(fmt.Errorf("capi: the %s manager's cache did not sync", providers[i].name))
		}
		if opts.NoWebhooks {
			continue
		}
		if err := admission.WaitServer(waitCtx, mgr.GetWebhookServer(), providers[i].name); err != nil {
			return fail(err)
		}
		mutating, validating, err := admission.Configs(filepath.Join(modDir, providers[i].manifest), providers[i].name, ports[i], cas[i])
		if err != nil {
			return fail(fmt.Errorf("capi: %w", err))
		}
		remove, err := admission.Install(waitCtx, opts.Config, mutating, validating)
		if err != nil {
			return fail(fmt.Errorf("capi: %w", err))
		}
		c.cleanups = append(c.cleanups, remove)
	}
	return c, nil
}

// Stop stops the managers and waits for them to finish.
func (c *CAPI) Stop() error {
	// Webhook configurations go first: their server is about to stop.
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
	c.cleanups = nil
	c.cancel()
	var errs []error
	for _, d := range c.done {
		if err := <-d; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func concurrency(n int) controller.Options { return controller.Options{MaxConcurrentReconciles: n} }

func newClusterCache(ctx context.Context, mgr ctrl.Manager, name string, clientOpts clustercache.ClientOptions, cacheOpts clustercache.CacheOptions) (clustercache.ClusterCache, error) {
	secretClient, err := coresetup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, fmt.Errorf("failed to create secret caching client: %w", err)
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secretClient,
		Cache:        cacheOpts,
		Client:       clientOpts,
	}, concurrency(10))
	if err != nil {
		return nil, fmt.Errorf("failed to create the %s ClusterCache: %w", name, err)
	}
	return cc, nil
}

func setupCore(ctx context.Context, mgr ctrl.Manager) (clustercache.ClusterCache, error) {
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return nil, fmt.Errorf("failed to add indexes: %w", err)
	}
	cc, err := newClusterCache(ctx, mgr, "core",
		coresetup.ClusterCacheClientOptions("capi-core", 20, 30), coresetup.ClusterCacheCacheOptions())
	if err != nil {
		return nil, err
	}
	c, r := mgr.GetClient(), mgr.GetAPIReader()
	if err := (&cluster.Reconciler{Client: c, APIReader: r, ClusterCache: cc,
		RemoteConnectionGracePeriod: 50 * time.Second}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("cluster controller: %w", err)
	}
	if err := (&machine.Reconciler{Client: c, APIReader: r, ClusterCache: cc,
		RemoteConditionsGracePeriod: 5 * time.Minute}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machine controller: %w", err)
	}
	// All preflight checks, as upstream runs by default; a MachineDeployment
	// or MachineSet skips them with the
	// machineset.cluster.x-k8s.io/skip-preflight-checks annotation.
	checks := sets.New(clusterv1.MachineSetPreflightCheckAll)
	if err := (&machineset.Reconciler{Client: c, APIReader: r, ClusterCache: cc, PreflightChecks: checks}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machineset controller: %w", err)
	}
	if err := (&machinedeployment.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machinedeployment controller: %w", err)
	}
	if err := (&machinepool.Reconciler{Client: c, APIReader: r, ClusterCache: cc}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machinepool controller: %w", err)
	}
	if err := (&machinehealthcheck.Reconciler{Client: c, ClusterCache: cc}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machinehealthcheck controller: %w", err)
	}
	// ClusterTopology: the ClusterClass controller and the topology
	// controllers, as upstream runs them with the gate on (no runtime
	// extensions: RuntimeSDK stays off).
	if err := (&clusterclass.Reconciler{Client: c}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("clusterclass controller: %w", err)
	}
	if err := (&topologycluster.Reconciler{Client: c, APIReader: r, ClusterCache: cc}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("cluster topology controller: %w", err)
	}
	if err := (&topologymachinedeployment.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machinedeployment topology controller: %w", err)
	}
	if err := (&topologymachineset.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("machineset topology controller: %w", err)
	}
	return cc, nil
}

func setupBootstrap(ctx context.Context, mgr ctrl.Manager) (clustercache.ClusterCache, error) {
	cc, err := newClusterCache(ctx, mgr, "kubeadm bootstrap",
		bootstrapsetup.ClusterCacheClientOptions("capi-kubeadm-bootstrap", 20, 30), bootstrapsetup.ClusterCacheCacheOptions())
	if err != nil {
		return nil, err
	}
	secretClient, err := bootstrapsetup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, fmt.Errorf("failed to create secret caching client: %w", err)
	}
	if err := (&kubeadmconfig.Reconciler{
		Client: mgr.GetClient(), SecretCachingClient: secretClient, APIReader: mgr.GetAPIReader(),
		ClusterCache: cc, TokenTTL: kubeadmconfig.DefaultTokenTTL,
	}).SetupWithManager(ctx, mgr, concurrency(10)); err != nil {
		return nil, fmt.Errorf("kubeadmconfig controller: %w", err)
	}
	return cc, nil
}

func setupControlPlane(ctx context.Context, mgr ctrl.Manager) (clustercache.ClusterCache, error) {
	cc, err := newClusterCache(ctx, mgr, "kubeadm control plane",
		controlplanesetup.ClusterCacheClientOptions("capi-kubeadm-control-plane", 20, 30), controlplanesetup.ClusterCacheCacheOptions())
	if err != nil {
		return nil, err
	}
	secretClient, err := controlplanesetup.CreateSecretCachingClient(mgr)
	if err != nil {
		return nil, fmt.Errorf("failed to create secret caching client: %w", err)
	}
	if err := (&kubeadmcontrolplane.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), SecretCachingClient: secretClient,
		ClusterCache: cc, EtcdDialTimeout: 10 * time.Second, EtcdCallTimeout: 15 * time.Second,
		EtcdLogger: zap.NewNop(), RemoteConditionsGracePeriod: 5 * time.Minute,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 10, ReconciliationTimeout: 3 * time.Minute}); err != nil {
		return nil, fmt.Errorf("kubeadmcontrolplane controller: %w", err)
	}
	return cc, nil
}
