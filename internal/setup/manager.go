package setup

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformclusteridentity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachinetemplate"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/watches"
)

// New builds the manager from cfg and o: caches, servers, leader election,
// every controller and the orphan sweep. Start it with mgr.Start(ctx). o is
// completed (RunnerImage from $CAPTF_MANAGER_IMAGE, else from the manager's
// own Pod) and validated first; cfg is copied, never modified.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	mgr, _, err := build(ctx, cfg, o)
	return mgr, err
}

// build is New, also returning what the controllers were wired with.
func build(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, Wiring, error) {
	o.Complete()
	if err := o.resolveRunnerImage(ctx, cfg); err != nil {
		return nil, Wiring{}, err
	}
	if err := o.Validate(); err != nil {
		return nil, Wiring{}, fmt.Errorf("invalid manager options: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = clientRate(o)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "captf-manager/" + BuildVersion()
	}
	tlsOpt, err := o.tlsOptions()
	if err != nil {
		return nil, Wiring{}, err
	}
	scheme := NewScheme()
	gate := &secretGate{}
	mopts := ctrl.Options{
		Scheme: scheme,
		Cache:  cacheOptions(o, gate),
		// Lists by the labels that name an object's Jobs, pods, Secrets
		// and Leases are answered from indexes (labelindex.go); the
		// Secret transform reads the workloads through it
		// (secretcache.go).
		NewCache: gate.newCache,
		Client: client.Options{Cache: &client.CacheOptions{
			// Never cached: read live through the manager's client.
			DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Namespace{}},
		}},
		Metrics:                       diagnosticsOptions(o, tlsOpt),
		HealthProbeBindAddress:        o.HealthAddr,
		PprofBindAddress:              o.ProfilerAddress,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaseDuration:                 ptr.To(o.LeaderElectLeaseDuration),
		RenewDeadline:                 ptr.To(o.LeaderElectRenewDeadline),
		RetryPeriod:                   ptr.To(o.LeaderElectRetryPeriod),
		LeaderElectionReleaseOnCancel: true,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:     o.WebhookHost,
			Port:     o.WebhookPort,
			CertDir:  o.WebhookCertDir,
			CertName: o.WebhookCertName,
			KeyName:  o.WebhookKeyName,
			TLSOpts:  []func(*tls.Config){tlsOpt},
		}),
		Controller: config.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)},
	}
	if o.Logger.GetSink() != nil {
		mopts.Logger = o.Logger
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, Wiring{}, fmt.Errorf("failed to create the manager: %w", err)
	}
	if o.HealthAddr != "0" {
		if err := errors.Join(
			mgr.AddHealthzCheck("ping", healthz.Ping),
			mgr.AddReadyzCheck("ping", healthz.Ping),
		); err != nil {
			return nil, Wiring{}, fmt.Errorf("failed to add the health checks: %w", err)
		}
	}
	variables, err := newVariablesCache(cfg, mgr, o)
	if err != nil {
		return nil, Wiring{}, err
	}
	// The indexes through which variablesFrom sources and identities wake
	// the objects that use them.
	if err := watches.AddIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, Wiring{}, err
	}
	metrics.SetBuildInfo(BuildVersion(), BuildCommit(), contract.Version)
	metrics.SetActiveJobsReader(watches.Shard{Filter: o.WatchFilter}.Jobs(mgr.GetCache()))

	memo := identity.NewServiceAccountMemo()
	if err := memo.Watch(ctx, mgr.GetCache()); err != nil {
		return nil, Wiring{}, err
	}
	clients, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, Wiring{}, fmt.Errorf("failed to create the client of the identities' source Secrets: %w", err)
	}
	w := Wiring{
		Options:         o,
		Live:            mgr.GetAPIReader(),
		Variables:       variables,
		Recorder:        mgr.GetEventRecorder(EventSource),
		ServiceAccounts: memo,
		Sources:         identity.NewSourceWatch(ctx, clients, mgr.GetAPIReader()),
	}
	if err := terraformclusteridentity.Setup(ctx, mgr, terraformclusteridentity.Options{
		WatchFilter: o.WatchFilter,
		SyncPeriod:  o.SyncPeriod,
		Live:        w.Live,
		Recorder:    w.Recorder,
		Sources:     w.Sources,
	}); err != nil {
		return nil, Wiring{}, err
	}
	if err := terraformmachinetemplate.Setup(ctx, mgr, terraformmachinetemplate.Options{
		WatchFilter:            o.WatchFilter,
		Concurrency:            o.TerraformMachineTemplateConcurrency,
		Live:                   w.Live,
		Recorder:               w.Recorder,
		InsecureRegistries:     o.InsecureRegistries,
		AllowPrivateRegistries: o.AllowPrivateRegistries,
		UserAgent:              "captf-manager/" + BuildVersion(),
	}); err != nil {
		return nil, Wiring{}, err
	}
	for _, setup := range WorkloadControllers {
		if err := setup(ctx, mgr, w); err != nil {
			return nil, Wiring{}, err
		}
	}
	if o.WebhookPort != 0 && len(Webhooks) > 0 {
		for _, register := range Webhooks {
			if err := register(mgr, w); err != nil {
				return nil, Wiring{}, err
			}
		}
		if o.HealthAddr != "0" {
			if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
				return nil, Wiring{}, fmt.Errorf("failed to add the webhook readiness check: %w", err)
			}
		}
	}
	if err := mgr.Add(newSweeper(mgr, o)); err != nil {
		return nil, Wiring{}, fmt.Errorf("failed to add the orphan sweep: %w", err)
	}
	return mgr, w, nil
}

// managedSelector selects what CAPTF owns.
func managedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{infrav1.ManagedLabel: "true"})
}

// defaultNamespaces restricts namespaced caches to --namespace's
// namespaces, or keeps ExcludeNamespaces out of them.
func defaultNamespaces(o Options) map[string]cache.Config {
	if nss := o.Namespaces(); len(nss) > 0 {
		m := make(map[string]cache.Config, len(nss))
		for _, ns := range nss {
			m[ns] = cache.Config{}
		}
		return m
	}
	if len(o.ExcludeNamespaces) == 0 {
		return nil
	}
	var not []fields.Selector
	for _, ns := range o.ExcludeNamespaces {
		not = append(not, fields.OneTermNotEqualSelector("metadata.namespace", ns))
	}
	return map[string]cache.Config{cache.AllNamespaces: {FieldSelector: fields.AndSelectors(not...)}}
}

// cacheOptions: Secrets, Jobs, Pods, Leases, ServiceAccounts and
// RoleBindings only when CAPTF owns them;
// everything namespaced within --namespace; managed fields dropped; Jobs,
// pods and Secrets reduced to what the passes read of them.
func cacheOptions(o Options, gate *secretGate) cache.Options {
	managed := managedSelector()
	return cache.Options{
		SyncPeriod:        ptr.To(o.SyncPeriod),
		DefaultNamespaces: defaultNamespaces(o),
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:        {Label: managed, Transform: gate.transform},
			&batchv1.Job{}:          {Label: managed, Transform: jobTransform},
			&corev1.Pod{}:           {Label: managed, Transform: podTransform},
			&coordinationv1.Lease{}: {Label: managed},
			// The runner ServiceAccount and RoleBinding every pass
			// checks; an override ServiceAccount without the label
			// is read live (identity.getServiceAccount).
			&corev1.ServiceAccount{}: {Label: managed},
			&rbacv1.RoleBinding{}:    {Label: managed},
			// Plan records, for their phases; the change lists stay on
			// the API server (planTransform).
			&infrav1.TerraformPlan{}: {Label: managed, Transform: planTransform},
		},
	}
}

// variablesCache is the second cache; GetCache makes the manager start it
// with its own cache and wait for it to sync before the controllers.
type variablesCache struct{ cache.Cache }

func (v variablesCache) GetCache() cache.Cache { return v.Cache }

// newVariablesCache caches the Secrets and ConfigMaps labeled
// captf.io/variables=true, their data stripped, and adds it to mgr.
func newVariablesCache(cfg *rest.Config, mgr ctrl.Manager, o Options) (cache.Cache, error) {
	c, err := cache.New(cfg, cache.Options{
		HTTPClient:           mgr.GetHTTPClient(),
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		SyncPeriod:           ptr.To(o.SyncPeriod),
		DefaultNamespaces:    defaultNamespaces(o),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{infrav1.VariablesLabel: "true"}),
		DefaultTransform:     StripData,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the variables cache: %w", err)
	}
	if err := mgr.Add(variablesCache{c}); err != nil {
		return nil, fmt.Errorf("failed to add the variables cache: %w", err)
	}
	return c, nil
}

// StripData drops the values of a Secret or ConfigMap (and every object's
// managed fields) before it enters the variables cache: only metadata is
// kept.
func StripData(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Secret:
		o.Data, o.StringData = nil, nil
		o.ManagedFields = nil
	case *corev1.ConfigMap:
		o.Data, o.BinaryData = nil, nil
		o.ManagedFields = nil
	}
	return obj, nil
}

// diagnosticsOptions serve /metrics on --diagnostics-address: HTTPS with
// TokenReview and SubjectAccessReview by default, with /debug/pprof/ and
// PUT /debug/flags/v behind the same checks; plain HTTP and metrics only
// with --insecure-diagnostics.
func diagnosticsOptions(o Options, tlsOpt func(*tls.Config)) metricsserver.Options {
	m := metricsserver.Options{
		BindAddress:   o.DiagnosticsAddress,
		SecureServing: !o.InsecureDiagnostics,
	}
	if o.InsecureDiagnostics {
		return m
	}
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	m.TLSOpts = []func(*tls.Config){tlsOpt}
	m.ExtraHandlers = debugHandlers()
	if _, err := os.Stat(filepath.Join(metricsCertDir, "tls.crt")); err == nil {
		m.CertDir = metricsCertDir
	}
	return m
}

// clientRate is the client-side rate of the manager's API requests:
// --kube-api-qps and --kube-api-burst, or no client-side throttling (QPS
// -1) when --kube-api-qps is 0, leaving the API server's priority and
// fairness alone to apply.
func clientRate(o Options) (float32, int) {
	if o.KubeAPIQPS <= 0 {
		return -1, 0
	}
	return o.KubeAPIQPS, o.KubeAPIBurst
}

// jobTransform caches a Job without its pod template (jobs.ForCache).
func jobTransform(obj any) (any, error) {
	if j, ok := obj.(*batchv1.Job); ok {
		return jobs.ForCache(j), nil
	}
	return cache.TransformStripManagedFields()(obj)
}

// planTransform caches a TerraformPlan without its change list: the
// manager decides phases from the rest and writes the list only once, at
// creation.
func planTransform(obj any) (any, error) {
	if p, ok := obj.(*infrav1.TerraformPlan); ok {
		p.Spec.Changes = nil
	}
	return cache.TransformStripManagedFields()(obj)
}

// podTransform caches a pod without its spec (jobs.PodForCache).
func podTransform(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		return jobs.PodForCache(p), nil
	}
	return cache.TransformStripManagedFields()(obj)
}
