// Command controller is cert-manager's controller as CAPTF's local
// environment runs it: the controllers, issuers, informers, metrics and
// health endpoints are cert-manager's own packages at the version pinned in
// this module's go.mod; this file only reads the flags cert-manager's
// Deployment passes (--cluster-resource-namespace, --leader-election-*,
// --acme-http01-solver-image, --controllers, --feature-gates, --v…) over
// cert-manager's defaults, and starts the controllers under leader
// election. A --config file is not read: the manifest CAPTF renders sets
// none. The Venafi issuer is left out (see controllers.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	config "github.com/cert-manager/cert-manager/internal/apis/config/controller"
	shared "github.com/cert-manager/cert-manager/internal/apis/config/shared"
	"github.com/cert-manager/cert-manager/internal/controller/feature"
	"github.com/cert-manager/cert-manager/internal/pem"
	controller "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
)

// leaseName is the Lease the controller holds while it leads; the chart's
// leader-election Role names it.
const leaseName = "cert-manager-controller"

func main() {
	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := configure(os.Args[1:])
	if err == nil {
		err = run(ctx, cfg)
	}
	logf.FlushLogs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager controller: %v\n", err)
		os.Exit(1)
	}
}

// configure builds the configuration from cert-manager's defaults
// (defaultConfig) and the flags.
func configure(args []string) (*config.ControllerConfiguration, error) {
	cfg := defaultConfig()
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	addFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := logf.ValidateAndApply(&cfg.Logging); err != nil {
		return nil, err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(cfg.FeatureGates); err != nil {
		return nil, fmt.Errorf("feature gates: %w", err)
	}
	return cfg, nil
}

// defaultConfig holds cert-manager's documented defaults for every setting
// this entrypoint reads. (cert-manager's own defaulting package also
// registers the Venafi issuer, whose client library the module proxy does
// not serve, so the values are stated here.)
func defaultConfig() *config.ControllerConfiguration {
	limits := pem.DefaultSizeLimits()
	c := &config.ControllerConfiguration{
		KubernetesAPIQPS:         20,
		KubernetesAPIBurst:       50,
		ClusterResourceNamespace: "kube-system",
		LeaderElectionConfig: config.LeaderElectionConfig{
			LeaderElectionConfig: shared.LeaderElectionConfig{
				Enabled: true, Namespace: "kube-system",
				LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second,
			},
			HealthzTimeout: 20 * time.Second,
		},
		Controllers:                     []string{"*"},
		ClusterIssuerAmbientCredentials: true,
		CopiedAnnotationPrefixes:        []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
		NumberOfConcurrentWorkers:       5,
		MaxConcurrentChallenges:         60,
		MetricsListenAddress:            "0.0.0.0:9402",
		HealthzListenAddress:            "0.0.0.0:9403",
		PprofAddress:                    "localhost:6060",
		IngressShimConfig: config.IngressShimConfig{
			DefaultIssuerKind:                 "Issuer",
			DefaultIssuerGroup:                "cert-manager.io",
			DefaultAutoCertificateAnnotations: []string{"kubernetes.io/tls-acme"},
		},
		ACMEHTTP01Config: config.ACMEHTTP01Config{
			SolverImage:                 "quay.io/jetstack/cert-manager-acmesolver:" + util.AppVersion,
			SolverResourceRequestCPU:    "10m",
			SolverResourceRequestMemory: "64Mi",
			SolverResourceLimitsCPU:     "100m",
			SolverResourceLimitsMemory:  "64Mi",
			SolverRunAsNonRoot:          true,
		},
		ACMEDNS01Config: config.ACMEDNS01Config{CheckRetryPeriod: 10 * time.Second},
		PEMSizeLimitsConfig: config.PEMSizeLimitsConfig{
			MaxCertificateSize: limits.MaxCertificateSize, MaxPrivateKeySize: limits.MaxPrivateKeySize,
			MaxChainLength: limits.MaxChainLength, MaxBundleSize: limits.MaxBundleSize,
		},
		CertificateRequestMinimumBackoffDuration: time.Hour,
		CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
	}
	logsapi.SetRecommendedLoggingConfiguration(&c.Logging)
	return c
}

func addFlags(fs *pflag.FlagSet, c *config.ControllerConfiguration) {
	fs.StringVar(&c.KubeConfig, "kubeconfig", c.KubeConfig, "kubeconfig file; in-cluster configuration when empty")
	//nolint:staticcheck // the chart may still pass it
	fs.StringVar(&c.APIServerHost, "master", c.APIServerHost, "API server address, overriding the kubeconfig's")
	fs.Float32Var(&c.KubernetesAPIQPS, "kube-api-qps", c.KubernetesAPIQPS, "client QPS when API Priority and Fairness is off")
	fs.IntVar(&c.KubernetesAPIBurst, "kube-api-burst", c.KubernetesAPIBurst, "client burst when API Priority and Fairness is off")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "watch only this namespace (all when empty)")
	fs.StringVar(&c.ClusterResourceNamespace, "cluster-resource-namespace", c.ClusterResourceNamespace, "namespace of the Secrets ClusterIssuers refer to")

	fs.BoolVar(&c.LeaderElectionConfig.Enabled, "leader-elect", c.LeaderElectionConfig.Enabled, "run the controllers only while holding the leader Lease")
	fs.StringVar(&c.LeaderElectionConfig.Namespace, "leader-election-namespace", c.LeaderElectionConfig.Namespace, "namespace of the leader Lease")
	fs.DurationVar(&c.LeaderElectionConfig.LeaseDuration, "leader-election-lease-duration", c.LeaderElectionConfig.LeaseDuration, "leader Lease duration")
	fs.DurationVar(&c.LeaderElectionConfig.RenewDeadline, "leader-election-renew-deadline", c.LeaderElectionConfig.RenewDeadline, "leader Lease renew deadline")
	fs.DurationVar(&c.LeaderElectionConfig.RetryPeriod, "leader-election-retry-period", c.LeaderElectionConfig.RetryPeriod, "leader Lease retry period")
	fs.DurationVar(&c.LeaderElectionConfig.HealthzTimeout, "leader-election-healthz-timeout", c.LeaderElectionConfig.HealthzTimeout, "how long past the Lease the liveness check tolerates a lost leader election")

	fs.StringSliceVar(&c.Controllers, "controllers", c.Controllers, "controllers to run: '*' for the defaults, 'name' to add one, '-name' to remove one")
	fs.IntVar(&c.NumberOfConcurrentWorkers, "concurrent-workers", c.NumberOfConcurrentWorkers, "workers per controller")
	fs.IntVar(&c.MaxConcurrentChallenges, "max-concurrent-challenges", c.MaxConcurrentChallenges, "ACME challenges processed at once")
	fs.BoolVar(&c.IssuerAmbientCredentials, "issuer-ambient-credentials", c.IssuerAmbientCredentials, "Issuers may use ambient credentials")
	fs.BoolVar(&c.ClusterIssuerAmbientCredentials, "cluster-issuer-ambient-credentials", c.ClusterIssuerAmbientCredentials, "ClusterIssuers may use ambient credentials")
	fs.BoolVar(&c.EnableCertificateOwnerRef, "enable-certificate-owner-ref", c.EnableCertificateOwnerRef, "make a Certificate the owner of its Secret")
	fs.StringSliceVar(&c.CopiedAnnotationPrefixes, "copied-annotation-prefixes", c.CopiedAnnotationPrefixes, "annotation prefixes copied from a Certificate to its requests")
	fs.BoolVar(&c.GatewayAPIConfig.Enabled, "enable-gateway-api", c.GatewayAPIConfig.Enabled, "run the Gateway API certificate shim")

	fs.StringVar(&c.IngressShimConfig.DefaultIssuerName, "default-issuer-name", c.IngressShimConfig.DefaultIssuerName, "issuer of Ingresses annotated for automatic certificates")
	fs.StringVar(&c.IngressShimConfig.DefaultIssuerKind, "default-issuer-kind", c.IngressShimConfig.DefaultIssuerKind, "kind of that issuer")
	fs.StringVar(&c.IngressShimConfig.DefaultIssuerGroup, "default-issuer-group", c.IngressShimConfig.DefaultIssuerGroup, "group of that issuer")
	fs.StringSliceVar(&c.IngressShimConfig.DefaultAutoCertificateAnnotations, "auto-certificate-annotations", c.IngressShimConfig.DefaultAutoCertificateAnnotations, "annotations that ask for an automatic certificate")
	fs.StringSliceVar(&c.IngressShimConfig.ExtraCertificateAnnotations, "extra-certificate-annotations", c.IngressShimConfig.ExtraCertificateAnnotations, "annotations copied to certificates made by the shim")

	fs.StringVar(&c.ACMEHTTP01Config.SolverImage, "acme-http01-solver-image", c.ACMEHTTP01Config.SolverImage, "image of the ACME HTTP-01 solver pods")
	fs.StringVar(&c.ACMEHTTP01Config.SolverResourceRequestCPU, "acme-http01-solver-resource-request-cpu", c.ACMEHTTP01Config.SolverResourceRequestCPU, "solver CPU request")
	fs.StringVar(&c.ACMEHTTP01Config.SolverResourceRequestMemory, "acme-http01-solver-resource-request-memory", c.ACMEHTTP01Config.SolverResourceRequestMemory, "solver memory request")
	fs.StringVar(&c.ACMEHTTP01Config.SolverResourceLimitsCPU, "acme-http01-solver-resource-limits-cpu", c.ACMEHTTP01Config.SolverResourceLimitsCPU, "solver CPU limit")
	fs.StringVar(&c.ACMEHTTP01Config.SolverResourceLimitsMemory, "acme-http01-solver-resource-limits-memory", c.ACMEHTTP01Config.SolverResourceLimitsMemory, "solver memory limit")
	fs.BoolVar(&c.ACMEHTTP01Config.SolverRunAsNonRoot, "acme-http01-solver-run-as-non-root", c.ACMEHTTP01Config.SolverRunAsNonRoot, "solver pods run as non-root")
	fs.StringVar(&c.ACMEHTTP01Config.SolverRuntimeClassName, "acme-http01-solver-runtime-class-name", c.ACMEHTTP01Config.SolverRuntimeClassName, "solver pods' runtime class")
	fs.StringSliceVar(&c.ACMEHTTP01Config.SolverNameservers, "acme-http01-solver-nameservers", c.ACMEHTTP01Config.SolverNameservers, "nameservers of the HTTP-01 self check")
	fs.StringToStringVar(&c.ACMEHTTP01Config.SolverExtraLabels, "acme-http01-solver-extra-labels", c.ACMEHTTP01Config.SolverExtraLabels, "extra labels of the solver resources")
	fs.StringSliceVar(&c.ACMEDNS01Config.RecursiveNameservers, "dns01-recursive-nameservers", c.ACMEDNS01Config.RecursiveNameservers, "nameservers of the DNS-01 self check")
	fs.BoolVar(&c.ACMEDNS01Config.RecursiveNameserversOnly, "dns01-recursive-nameservers-only", c.ACMEDNS01Config.RecursiveNameserversOnly, "use only the recursive nameservers for the DNS-01 self check")
	fs.DurationVar(&c.ACMEDNS01Config.CheckRetryPeriod, "dns01-check-retry-period", c.ACMEDNS01Config.CheckRetryPeriod, "time between DNS-01 propagation checks")

	fs.StringVar(&c.MetricsListenAddress, "metrics-listen-address", c.MetricsListenAddress, "address of the Prometheus endpoint; '0' turns it off")
	fs.StringVar(&c.HealthzListenAddress, "healthz-listen-address", c.HealthzListenAddress, "address of the /livez endpoint; '0' turns it off")
	fs.DurationVar(&c.CertificateRequestMinimumBackoffDuration, "certificate-request-minimum-backoff-duration", c.CertificateRequestMinimumBackoffDuration, "first backoff after a failed request")
	fs.DurationVar(&c.CertificateRequestMaximumBackoffDuration, "certificate-request-maximum-backoff-duration", c.CertificateRequestMaximumBackoffDuration, "longest backoff after failed requests")
	fs.Var(cliflag.NewMapStringBool(&c.FeatureGates), "feature-gates", "feature gates (key=value pairs): "+strings.Join(utilfeature.DefaultFeatureGate.KnownFeatures(), ", "))
	logf.AddFlags(&c.Logging, fs)
}

// enabledControllers resolves the --controllers list: '*' stands for
// cert-manager's default set, '-name' removes a controller, 'name' adds
// one; the feature-gated controllers join the set when their gate is on.
func enabledControllers(cfg *config.ControllerConfiguration) (sets.Set[string], error) {
	known := sets.New(allControllers...)
	enabled := sets.New[string]()
	for _, name := range cfg.Controllers {
		switch {
		case name == "*":
			enabled.Insert(defaultControllers...)
		case strings.HasPrefix(name, "-"):
			if !known.Has(strings.TrimPrefix(name, "-")) {
				return nil, fmt.Errorf("unknown controller %q", name)
			}
		case known.Has(name):
			enabled.Insert(name)
		default:
			return nil, fmt.Errorf("unknown controller %q", name)
		}
	}
	if utilfeature.DefaultFeatureGate.Enabled(feature.ExperimentalCertificateSigningRequestControllers) {
		enabled.Insert(csrControllers...)
	}
	if cfg.GatewayAPIConfig.Enabled {
		enabled.Insert(gatewayShim)
	}
	for _, name := range cfg.Controllers {
		if strings.HasPrefix(name, "-") {
			enabled.Delete(strings.TrimPrefix(name, "-"))
		}
	}
	if cfg.Namespace != "" {
		// A namespaced controller has no cluster-scoped informers.
		enabled.Delete(clusterScoped...)
	}
	return enabled, nil
}

func contextOptions(cfg *config.ControllerConfiguration) (controller.ContextOptions, error) {
	quantity := func(flag, v string) (resource.Quantity, error) {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return q, fmt.Errorf("%s: %w", flag, err)
		}
		return q, nil
	}
	acme := cfg.ACMEHTTP01Config
	reqCPU, err := quantity("acme-http01-solver-resource-request-cpu", acme.SolverResourceRequestCPU)
	if err != nil {
		return controller.ContextOptions{}, err
	}
	reqMem, err := quantity("acme-http01-solver-resource-request-memory", acme.SolverResourceRequestMemory)
	if err != nil {
		return controller.ContextOptions{}, err
	}
	limCPU, err := quantity("acme-http01-solver-resource-limits-cpu", acme.SolverResourceLimitsCPU)
	if err != nil {
		return controller.ContextOptions{}, err
	}
	limMem, err := quantity("acme-http01-solver-resource-limits-memory", acme.SolverResourceLimitsMemory)
	if err != nil {
		return controller.ContextOptions{}, err
	}
	//nolint:staticcheck // the flag is still honoured
	apiServerHost := cfg.APIServerHost
	return controller.ContextOptions{
		APIServerHost:      apiServerHost,
		Kubeconfig:         cfg.KubeConfig,
		KubernetesAPIQPS:   cfg.KubernetesAPIQPS,
		KubernetesAPIBurst: cfg.KubernetesAPIBurst,
		Namespace:          cfg.Namespace,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        cfg.ClusterResourceNamespace,
			ClusterIssuerAmbientCredentials: cfg.ClusterIssuerAmbientCredentials,
			IssuerAmbientCredentials:        cfg.IssuerAmbientCredentials,
		},
		ACMEOptions: controller.ACMEOptions{
			HTTP01SolverImage:                 acme.SolverImage,
			HTTP01SolverResourceRequestCPU:    reqCPU,
			HTTP01SolverResourceRequestMemory: reqMem,
			HTTP01SolverResourceLimitsCPU:     limCPU,
			HTTP01SolverResourceLimitsMemory:  limMem,
			ACMEHTTP01SolverRunAsNonRoot:      acme.SolverRunAsNonRoot,
			HTTP01SolverRuntimeClassName:      acme.SolverRuntimeClassName,
			HTTP01SolverNameservers:           acme.SolverNameservers,
			HTTP01SolverExtraLabels:           acme.SolverExtraLabels,
			DNS01CheckAuthoritative:           !cfg.ACMEDNS01Config.RecursiveNameserversOnly,
			DNS01Nameservers:                  cfg.ACMEDNS01Config.RecursiveNameservers,
			DNS01CheckRetryPeriod:             cfg.ACMEDNS01Config.CheckRetryPeriod,
		},
		IngressShimOptions: controller.IngressShimOptions{
			DefaultIssuerName:                 cfg.IngressShimConfig.DefaultIssuerName,
			DefaultIssuerKind:                 cfg.IngressShimConfig.DefaultIssuerKind,
			DefaultIssuerGroup:                cfg.IngressShimConfig.DefaultIssuerGroup,
			DefaultAutoCertificateAnnotations: cfg.IngressShimConfig.DefaultAutoCertificateAnnotations,
			ExtraCertificateAnnotations:       cfg.IngressShimConfig.ExtraCertificateAnnotations,
			GatewayAPIExtraProtocols:          sets.New(cfg.GatewayAPIConfig.ExtraProtocols...),
		},
		CertificateOptions: controller.CertificateOptions{
			EnableOwnerRef:                           cfg.EnableCertificateOwnerRef,
			CopiedAnnotationPrefixes:                 cfg.CopiedAnnotationPrefixes,
			CertificateRequestMinimumBackoffDuration: cfg.CertificateRequestMinimumBackoffDuration,
			CertificateRequestMaximumBackoffDuration: cfg.CertificateRequestMaximumBackoffDuration,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: cfg.MaxConcurrentChallenges},
		ConfigOptions: controller.ConfigOptions{
			EnableGatewayAPI:            cfg.GatewayAPIConfig.Enabled,
			EnableGatewayAPIListenerSet: cfg.GatewayAPIConfig.EnableListenerSet,
		},
	}, nil
}

func run(ctx context.Context, cfg *config.ControllerConfiguration) error {
	log := logf.Log.WithName("controller")
	ctx = logf.NewContext(ctx, log)
	log.Info("Starting cert-manager controller", "version", util.AppVersion)

	pem.SetGlobalSizeLimits(pem.NewSizeLimitsFromConfig(cfg.PEMSizeLimitsConfig.MaxCertificateSize,
		cfg.PEMSizeLimitsConfig.MaxPrivateKeySize, cfg.PEMSizeLimitsConfig.MaxChainLength, cfg.PEMSizeLimitsConfig.MaxBundleSize))
	enabled, err := enabledControllers(cfg)
	if err != nil {
		return err
	}
	opts, err := contextOptions(cfg)
	if err != nil {
		return err
	}
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)

	if cfg.MetricsListenAddress != "0" {
		ln, err := net.Listen("tcp", cfg.MetricsListenAddress)
		if err != nil {
			return fmt.Errorf("listen for metrics on %s: %w", cfg.MetricsListenAddress, err)
		}
		serve(g, gctx, base.Metrics.NewServer(ln), ln)
	}
	hz := healthz.NewServer(cfg.LeaderElectionConfig.HealthzTimeout)
	if cfg.HealthzListenAddress != "0" {
		ln, err := net.Listen("tcp", cfg.HealthzListenAddress)
		if err != nil {
			return fmt.Errorf("listen for health checks on %s: %w", cfg.HealthzListenAddress, err)
		}
		g.Go(func() error { return hz.Start(gctx, ln) })
	}

	start := func(ctx context.Context) error {
		return runControllers(ctx, factory, base, enabled, cfg.NumberOfConcurrentWorkers)
	}
	if !cfg.LeaderElectionConfig.Enabled {
		g.Go(func() error { return start(gctx) })
		return g.Wait()
	}
	lock, err := leaseLock(base, cfg.LeaderElectionConfig.Namespace)
	if err != nil {
		return err
	}
	g.Go(func() error {
		// The controllers run while the Lease is held; losing it ends the
		// process, as a restart is the way back to a consistent state.
		defer cancel()
		done := make(chan error, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cfg.LeaderElectionConfig.LeaseDuration,
			RenewDeadline:   cfg.LeaderElectionConfig.RenewDeadline,
			RetryPeriod:     cfg.LeaderElectionConfig.RetryPeriod,
			ReleaseOnCancel: true,
			WatchDog:        hz.LeaderHealthzAdaptor,
			Name:            leaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					done <- start(ctx)
					cancel()
				},
				OnStoppedLeading: cancel,
			},
		})
		if err != nil {
			return err
		}
		le.Run(gctx)
		select {
		case err := <-done:
			return err
		default:
		}
		if parent.Err() == nil {
			return errors.New("lost the leader Lease")
		}
		return nil
	})
	return g.Wait()
}

// serve runs srv on ln until ctx ends, then shuts it down.
func serve(g *errgroup.Group, ctx context.Context, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown) //nolint:contextcheck // the run's context has ended
	})
}

func leaseLock(base *controller.Context, namespace string) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(base.RESTConfig)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{
			Identity:      host + "_" + string(uuid.NewUUID()),
			EventRecorder: base.Recorder,
		})
}

// runControllers builds the enabled controllers (each registers the
// informers it needs), starts the shared informers, then runs every
// controller until ctx ends.
func runControllers(ctx context.Context, factory *controller.ContextFactory, base *controller.Context, enabled sets.Set[string], workers int) error {
	log := logf.FromContext(ctx)
	names := sets.List(enabled)
	slices.Sort(names)
	type built struct {
		name string
		c    controller.Interface
	}
	var controllers []built
	for _, name := range names {
		construct, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("controller %q is not registered", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("build controller %q: %w", name, err)
		}
		controllers = append(controllers, built{name, c})
	}
	log.Info("Starting shared informers")
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.SharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if base.GatewaySolverEnabled || base.EnableGatewayAPI {
		base.GWShared.Start(ctx.Done())
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, b := range controllers {
		log.Info("Starting controller", "controller", b.name)
		g.Go(func() error {
			if err := b.c.Run(workers, gctx); err != nil {
				return fmt.Errorf("controller %q: %w", b.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}
