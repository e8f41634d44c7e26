// Command cainjector is cert-manager's CA injector as CAPTF's local
// environment runs it: the reconcilers that copy a CA bundle into webhook
// configurations, APIServices and CRD conversion settings are cert-manager's
// own (pkg/controller/cainjector) at the version pinned in this module's
// go.mod; this file reads the flags and --config file cert-manager's
// Deployment passes, fills the rest from cert-manager's defaults and runs
// them in a controller-runtime manager under leader election.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	cliflag "k8s.io/component-base/cli/flag"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	config "github.com/cert-manager/cert-manager/internal/apis/config/cainjector"
	configscheme "github.com/cert-manager/cert-manager/internal/apis/config/cainjector/scheme"
	"github.com/cert-manager/cert-manager/internal/kube"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	configv1alpha1 "github.com/cert-manager/cert-manager/pkg/apis/config/cainjector/v1alpha1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
)

// leaseName is the Lease the injector holds while it leads; the chart's
// leader-election Role names it.
const leaseName = "cert-manager-cainjector-leader-election"

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
		fmt.Fprintf(os.Stderr, "cert-manager cainjector: %v\n", err)
		os.Exit(1)
	}
}

func configure(args []string) (*config.CAInjectorConfiguration, error) {
	scheme, codecs, err := configscheme.NewSchemeAndCodecs()
	if err != nil {
		return nil, err
	}
	pre := pflag.NewFlagSet("config", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.Usage = func() {}
	var configPath string
	pre.StringVar(&configPath, "config", "", "")
	_ = pre.Parse(args)

	cfg := &config.CAInjectorConfiguration{}
	if configPath != "" {
		data, err := os.ReadFile(configPath)
		if err != nil {
			return nil, fmt.Errorf("read the config file: %w", err)
		}
		obj, _, err := codecs.UniversalDecoder().Decode(data, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode the config file %s: %w", configPath, err)
		}
		decoded, ok := obj.(*config.CAInjectorConfiguration)
		if !ok {
			return nil, fmt.Errorf("the config file %s holds a %T, not a CAInjectorConfiguration", configPath, obj)
		}
		cfg = decoded
	} else {
		versioned := &configv1alpha1.CAInjectorConfiguration{}
		scheme.Default(versioned)
		if err := scheme.Convert(versioned, cfg, nil); err != nil {
			return nil, err
		}
	}

	fs := pflag.NewFlagSet("cainjector", pflag.ContinueOnError)
	fs.String("config", "", "path to a CAInjectorConfiguration file, read before the flags")
	fs.StringVar(&cfg.KubeConfig, "kubeconfig", cfg.KubeConfig, "kubeconfig file; in-cluster configuration when empty")
	fs.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "inject only into objects of this namespace (all when empty)")
	fs.StringSliceVar(&cfg.IgnoreNamespaces, "ignore-namespaces", cfg.IgnoreNamespaces, "namespaces whose objects are never injected")
	fs.BoolVar(&cfg.LeaderElectionConfig.Enabled, "leader-elect", cfg.LeaderElectionConfig.Enabled, "run only while holding the leader Lease")
	fs.StringVar(&cfg.LeaderElectionConfig.Namespace, "leader-election-namespace", cfg.LeaderElectionConfig.Namespace, "namespace of the leader Lease")
	fs.DurationVar(&cfg.LeaderElectionConfig.LeaseDuration, "leader-election-lease-duration", cfg.LeaderElectionConfig.LeaseDuration, "leader Lease duration")
	fs.DurationVar(&cfg.LeaderElectionConfig.RenewDeadline, "leader-election-renew-deadline", cfg.LeaderElectionConfig.RenewDeadline, "leader Lease renew deadline")
	fs.DurationVar(&cfg.LeaderElectionConfig.RetryPeriod, "leader-election-retry-period", cfg.LeaderElectionConfig.RetryPeriod, "leader Lease retry period")
	fs.BoolVar(&cfg.EnableDataSourceConfig.Certificates, "enable-certificates-data-source", cfg.EnableDataSourceConfig.Certificates, "inject from Certificates (cert-manager.io/inject-ca-from)")
	fs.BoolVar(&cfg.EnableInjectableConfig.MutatingWebhookConfigurations, "enable-mutatingwebhookconfigurations-injectable", cfg.EnableInjectableConfig.MutatingWebhookConfigurations, "inject into MutatingWebhookConfigurations")
	fs.BoolVar(&cfg.EnableInjectableConfig.ValidatingWebhookConfigurations, "enable-validatingwebhookconfigurations-injectable", cfg.EnableInjectableConfig.ValidatingWebhookConfigurations, "inject into ValidatingWebhookConfigurations")
	fs.BoolVar(&cfg.EnableInjectableConfig.CustomResourceDefinitions, "enable-customresourcedefinitions-injectable", cfg.EnableInjectableConfig.CustomResourceDefinitions, "inject into CRD conversion webhooks")
	fs.BoolVar(&cfg.EnableInjectableConfig.APIServices, "enable-apiservices-injectable", cfg.EnableInjectableConfig.APIServices, "inject into APIServices")
	fs.StringVar(&cfg.MetricsListenAddress, "metrics-listen-address", cfg.MetricsListenAddress, "address of the Prometheus endpoint; '0' turns it off")
	fs.Var(cliflag.NewMapStringBool(&cfg.FeatureGates), "feature-gates", "feature gates (key=value pairs): "+strings.Join(utilfeature.DefaultFeatureGate.KnownFeatures(), ", "))
	logf.AddFlags(&cfg.Logging, fs)
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

func run(ctx context.Context, cfg *config.CAInjectorConfiguration) error {
	log := logf.Log.WithName("cainjector")
	ctrl.SetLogger(log)
	ctx = logf.NewContext(ctx, log)
	log.Info("Starting cert-manager cainjector", "version", util.AppVersion)

	restConfig, err := kube.BuildClientConfig("", cfg.KubeConfig)
	if err != nil {
		return fmt.Errorf("load the client configuration: %w", err)
	}
	restConfig = util.RestConfigWithUserAgent(restConfig, "cainjector")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiregistrationv1.AddToScheme(scheme))
	utilruntime.Must(admissionv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))

	bind := cfg.MetricsListenAddress
	if bind == "" {
		bind = "0"
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: bind},
		HealthProbeBindAddress:        "0",
		LeaderElection:                cfg.LeaderElectionConfig.Enabled,
		LeaderElectionNamespace:       cfg.LeaderElectionConfig.Namespace,
		LeaderElectionID:              leaseName,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &cfg.LeaderElectionConfig.LeaseDuration,
		RenewDeadline:                 &cfg.LeaderElectionConfig.RenewDeadline,
		RetryPeriod:                   &cfg.LeaderElectionConfig.RetryPeriod,
		// Secrets are watched as metadata only and read on demand: the
		// cache never holds a Secret's data.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	if cfg.Namespace != "" {
		opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}}}
	}
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    cfg.Namespace,
		IgnoreNamespaces:             cfg.IgnoreNamespaces,
		EnableCertificatesDataSource: cfg.EnableDataSourceConfig.Certificates,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   cfg.EnableInjectableConfig.MutatingWebhookConfigurations,
			cainjector.ValidatingWebhookConfigurationName: cfg.EnableInjectableConfig.ValidatingWebhookConfigurations,
			cainjector.CustomResourceDefinitionName:       cfg.EnableInjectableConfig.CustomResourceDefinitions,
			cainjector.APIServiceName:                     cfg.EnableInjectableConfig.APIServices,
		},
	}); err != nil {
		return fmt.Errorf("register the injectors: %w", err)
	}
	return mgr.Start(ctx)
}
