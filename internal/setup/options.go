package setup

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
)

// Names fixed by the reference (reference-facts §4, §9).
const (
	// LeaderElectionID is the leader-election Lease, in the manager's
	// namespace.
	LeaderElectionID = "controller-leader-election-captf"
	// ManagerImageEnv names the environment variable --runner-image
	// defaults to; without it, the image of the manager's own Pod is used
	// (resolveRunnerImage).
	ManagerImageEnv = "CAPTF_MANAGER_IMAGE"
	// EventSource is the reporting controller of every event the manager
	// emits (the runner reports as captf.io/runner).
	EventSource = "captf.io/manager"
	// MaxStateBackups is the most backups status.stateBackups can list.
	MaxStateBackups = 16
	// metricsCertDir holds a mounted diagnostics certificate; without one
	// the manager serves a self-signed certificate.
	metricsCertDir = "/tmp/k8s-metrics-server/serving-certs"
)

// Options configure the manager: one field per flag of reference-facts §4
// (the logging flags excepted, see Command), plus a few fields for callers
// that run the manager in-process.
type Options struct {
	// Workers per controller (--<kind>-concurrency).
	TerraformClusterConcurrency         int
	TerraformMachineConcurrency         int
	TerraformMachinePoolConcurrency     int
	TerraformMachineTemplateConcurrency int

	// DriftDefaultInterval is the drift interval when neither the object nor
	// its cluster's defaults set one.
	DriftDefaultInterval time.Duration
	// StateBackups is how many state backups each object keeps (0: take
	// none; existing ones are kept).
	StateBackups int
	// ClusterOperationGate keeps a TerraformCluster's apply, destroy or
	// restore from overlapping its machines' and pools' (the per-Cluster
	// write Lease).
	ClusterOperationGate bool
	// RunnerEvents makes Jobs' runners emit progress events.
	RunnerEvents bool
	// RunnerImage provides /runner to each Job's init container; empty
	// means $CAPTF_MANAGER_IMAGE.
	RunnerImage string

	// Namespace restricts the watched namespaces: one, or several
	// separated by commas ("" = all; see Namespaces). The
	// TerraformClusterIdentity is always watched cluster-wide.
	Namespace string
	// ExcludeNamespaces, with Namespace unset, leaves these namespaces out
	// of every namespaced cache, so nothing in them is reconciled (in-process
	// callers: another manager, scoped with Namespace, owns them).
	ExcludeNamespaces []string
	// SyncPeriod is the minimum cache resync and the orphan-sweep interval.
	SyncPeriod time.Duration
	// WatchFilter, when set, restricts reconciles to objects labeled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilter string

	// KubeAPIQPS and KubeAPIBurst bound the manager's own API requests per
	// second (client-side token bucket); a QPS of 0 leaves them to the API
	// server's priority and fairness alone.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// Leader election (Lease LeaderElectionID).
	LeaderElect              bool
	LeaderElectionNamespace  string
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration

	// DiagnosticsAddress serves /metrics (and, when secure, /debug/pprof/
	// and PUT /debug/flags/v); "0" disables it.
	DiagnosticsAddress string
	// InsecureDiagnostics serves diagnostics over plain HTTP without
	// authentication or authorization.
	InsecureDiagnostics bool
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string
	// ProfilerAddress, when set, serves pprof without authentication.
	ProfilerAddress string

	// Webhook server (started only when a webhook is registered).
	// WebhookHost is the address it binds ("" = every interface; in-process
	// callers such as the local environment bind 127.0.0.1); it has no flag.
	WebhookHost     string
	WebhookPort     int
	WebhookCertDir  string
	WebhookCertName string
	WebhookKeyName  string

	// TLS of the webhook and diagnostics servers.
	TLSMinVersion       string
	TLSCipherSuites     []string
	TLSCurvePreferences []int32

	// AllowPrivateRegistries lets TerraformMachineTemplate image inspection
	// reach registries on addresses that are not public (loopback,
	// private, shared, link-local and the other special-purpose blocks;
	// refused by default: the image is chosen by whoever creates the
	// template).
	AllowPrivateRegistries bool

	// Kubeconfig is read by Command only (out-of-cluster use).
	Kubeconfig string

	// Logger, when set, is the manager's logger (in-process callers); the
	// command uses the global klog logger.
	Logger logr.Logger
	// SkipControllerNameValidation lets more than one manager run in one
	// process (tests, the local environment); controller names are
	// otherwise unique per process.
	SkipControllerNameValidation bool
	// InsecureRegistries reads image metadata (TerraformMachineTemplate
	// capacity) over plain HTTP from any registry. Loopback and private
	// registries are always tried over plain HTTP; this is for tests.
	InsecureRegistries bool
}

// DefaultOptions are the flag defaults of reference-facts §4.
func DefaultOptions() Options {
	return Options{
		TerraformClusterConcurrency:         10,
		TerraformMachineConcurrency:         10,
		TerraformMachinePoolConcurrency:     10,
		TerraformMachineTemplateConcurrency: 10,
		DriftDefaultInterval:                30 * time.Minute,
		StateBackups:                        5,
		ClusterOperationGate:                true,
		RunnerEvents:                        true,
		SyncPeriod:                          10 * time.Minute,
		KubeAPIQPS:                          100,
		KubeAPIBurst:                        200,
		LeaderElectLeaseDuration:            15 * time.Second,
		LeaderElectRenewDeadline:            10 * time.Second,
		LeaderElectRetryPeriod:              2 * time.Second,
		DiagnosticsAddress:                  ":8443",
		HealthAddr:                          ":9440",
		WebhookPort:                         9443,
		WebhookCertDir:                      "/tmp/k8s-webhook-server/serving-certs/",
		WebhookCertName:                     "tls.crt",
		WebhookKeyName:                      "tls.key",
		TLSMinVersion:                       "VersionTLS12",
	}
}

// AddFlags registers the manager's own flags on fs, bound to o (whose
// current values are the defaults shown).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.TerraformClusterConcurrency, "terraformcluster-concurrency", o.TerraformClusterConcurrency,
		"TerraformClusters reconciled at once")
	fs.IntVar(&o.TerraformMachineConcurrency, "terraformmachine-concurrency", o.TerraformMachineConcurrency,
		"TerraformMachines reconciled at once")
	fs.IntVar(&o.TerraformMachinePoolConcurrency, "terraformmachinepool-concurrency", o.TerraformMachinePoolConcurrency,
		"TerraformMachinePools reconciled at once")
	fs.IntVar(&o.TerraformMachineTemplateConcurrency, "terraformmachinetemplate-concurrency", o.TerraformMachineTemplateConcurrency,
		"TerraformMachineTemplates reconciled at once")
	fs.DurationVar(&o.DriftDefaultInterval, "drift-default-interval", o.DriftDefaultInterval,
		"drift interval when neither the object nor its cluster's defaults set one (a pool's 0 also falls back here)")
	fs.IntVar(&o.StateBackups, "state-backups", o.StateBackups,
		fmt.Sprintf("state backups kept per object, 0 to %d; 0 takes none (existing backups are kept and stay restorable)", MaxStateBackups))
	fs.BoolVar(&o.ClusterOperationGate, "cluster-operation-gate", o.ClusterOperationGate,
		"keep a TerraformCluster's apply, destroy or restore from overlapping its machines' and pools' (per-Cluster write Lease)")
	fs.BoolVar(&o.RunnerEvents, "runner-events", o.RunnerEvents,
		"runners emit RunStarted, Step*, PlanSummary, ResourcesChanged and RunFinished events")
	fs.StringVar(&o.RunnerImage, "runner-image", o.RunnerImage,
		"image whose /runner each Job's init container copies (default $"+ManagerImageEnv+", else the image of the manager's own container, read from its Pod $"+PodNamespaceEnv+"/$"+PodNameEnv+"); the manager refuses to start without a valid image reference")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"watch only this namespace, or these comma-separated namespaces (TerraformClusterIdentity is always cluster-wide); also limits the orphan sweep")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod,
		"minimum cache resync period; also the orphan-sweep interval")
	fs.StringVar(&o.WatchFilter, "watch-filter", o.WatchFilter,
		"reconcile only objects labeled cluster.x-k8s.io/watch-filter=<value>, however they are woken (their Jobs, Secrets, identities and variables sources included); the orphan sweep ignores it")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"API requests per second the manager sustains (client-side); 0 leaves throttling to the API server's priority and fairness")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"API requests the manager may send at once above --kube-api-qps")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"elect a leader with the Lease "+LeaderElectionID+" in the manager's namespace")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-elect-namespace", o.LeaderElectionNamespace,
		"namespace of the leader-election Lease (default: the manager's own namespace in-cluster)")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", o.LeaderElectLeaseDuration,
		"how long non-leaders wait before trying to take an unrenewed lead")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", o.LeaderElectRenewDeadline,
		"how long the leader keeps retrying a renewal before giving up the lead")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", o.LeaderElectRetryPeriod,
		"wait between leader-election attempts")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "directory of the webhook serving certificate")
	fs.StringVar(&o.WebhookCertName, "webhook-cert-name", o.WebhookCertName, "webhook certificate file name")
	fs.StringVar(&o.WebhookKeyName, "webhook-key-name", o.WebhookKeyName, "webhook key file name")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "webhook server port (0: no webhook server)")
	fs.StringVar(&o.DiagnosticsAddress, "diagnostics-address", o.DiagnosticsAddress,
		"address of /metrics (plus /debug/pprof/ and PUT /debug/flags/v when secure); 0 disables it")
	fs.BoolVar(&o.InsecureDiagnostics, "insecure-diagnostics", o.InsecureDiagnostics,
		"serve diagnostics over plain HTTP without authentication or authorization")
	fs.StringSliceVar(&o.TLSCipherSuites, "tls-cipher-suites", o.TLSCipherSuites,
		"cipher suites of the webhook and diagnostics servers (default: Go's); possible values: "+joinComma(cliflag.TLSCipherPossibleValues()))
	fs.Int32SliceVar(&o.TLSCurvePreferences, "tls-curve-preferences", o.TLSCurvePreferences,
		"numeric Go tls.CurveID values of the webhook and diagnostics servers, in preference order (default: Go's)")
	fs.StringVar(&o.TLSMinVersion, "tls-min-version", o.TLSMinVersion,
		"minimum TLS version of the webhook and diagnostics servers; possible values: "+joinComma(cliflag.TLSPossibleVersions()))
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "address of /healthz and /readyz; 0 disables them")
	fs.StringVar(&o.ProfilerAddress, "profiler-address", o.ProfilerAddress, "address of an unauthenticated pprof server (default off)")
	fs.BoolVar(&o.AllowPrivateRegistries, "allow-private-registries", o.AllowPrivateRegistries,
		"let TerraformMachineTemplate image inspection reach registries on addresses that are not public (loopback, private, shared, link-local and the other special-purpose blocks)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file, out of cluster only (also $KUBECONFIG)")
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// Complete fills what the flags leave to the environment: RunnerImage from
// $CAPTF_MANAGER_IMAGE.
func (o *Options) Complete() {
	if o.RunnerImage == "" {
		o.RunnerImage = os.Getenv(ManagerImageEnv)
	}
}

// Validate refuses invalid values and combinations, naming each flag at
// fault.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	for flag, n := range map[string]int{
		"terraformcluster-concurrency":         o.TerraformClusterConcurrency,
		"terraformmachine-concurrency":         o.TerraformMachineConcurrency,
		"terraformmachinepool-concurrency":     o.TerraformMachinePoolConcurrency,
		"terraformmachinetemplate-concurrency": o.TerraformMachineTemplateConcurrency,
	} {
		if n < 1 {
			bad(flag, "must be at least 1, got %d", n)
		}
	}
	if o.DriftDefaultInterval <= 0 {
		bad("drift-default-interval", "must be positive, got %s (disable drift per object with intervalSeconds: 0)", o.DriftDefaultInterval)
	}
	if o.StateBackups < 0 || o.StateBackups > MaxStateBackups {
		bad("state-backups", "must be between 0 and %d (status.stateBackups lists at most %d), got %d", MaxStateBackups, MaxStateBackups, o.StateBackups)
	}
	if o.RunnerImage == "" {
		if !ownPodNamed() {
			bad("runner-image", "not set, $%s is empty and $%s/$%s name no Pod: Jobs need an image providing /runner", ManagerImageEnv, PodNamespaceEnv, PodNameEnv)
		}
	} else if _, err := name.ParseReference(o.RunnerImage); err != nil {
		bad("runner-image", "%q is not a valid image reference: %v", o.RunnerImage, err)
	}
	for _, ns := range o.Namespaces() {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			bad("namespace", "%q is not a valid namespace name: %s", ns, msgs[0])
		}
	}
	if o.SyncPeriod <= 0 {
		bad("sync-period", "must be positive, got %s", o.SyncPeriod)
	}
	if o.KubeAPIQPS < 0 {
		bad("kube-api-qps", "must be 0 (no client-side limit) or positive, got %g", o.KubeAPIQPS)
	}
	if o.KubeAPIQPS > 0 && o.KubeAPIBurst < 1 {
		bad("kube-api-burst", "must be at least 1 with --kube-api-qps=%g, got %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.WatchFilter != "" {
		if msgs := validation.IsValidLabelValue(o.WatchFilter); len(msgs) > 0 {
			bad("watch-filter", "%q is not a valid label value: %s", o.WatchFilter, msgs[0])
		}
	}
	if o.LeaderElect {
		switch {
		case o.LeaderElectRetryPeriod <= 0:
			bad("leader-elect-retry-period", "must be positive, got %s", o.LeaderElectRetryPeriod)
		case o.LeaderElectRenewDeadline <= o.LeaderElectRetryPeriod:
			bad("leader-elect-renew-deadline", "must be longer than --leader-elect-retry-period (%s), got %s", o.LeaderElectRetryPeriod, o.LeaderElectRenewDeadline)
		case o.LeaderElectLeaseDuration <= o.LeaderElectRenewDeadline:
			bad("leader-elect-lease-duration", "must be longer than --leader-elect-renew-deadline (%s), got %s", o.LeaderElectRenewDeadline, o.LeaderElectLeaseDuration)
		}
	}
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		bad("webhook-port", "must be a port number (0 for none), got %d", o.WebhookPort)
	}
	if o.WebhookPort != 0 && (o.WebhookCertName == "" || o.WebhookKeyName == "") {
		bad("webhook-cert-name", "the webhook certificate and key file names must be set")
	}
	if o.InsecureDiagnostics && o.DiagnosticsAddress == "0" {
		bad("insecure-diagnostics", "set while --diagnostics-address=0 disables diagnostics")
	}
	if o.DiagnosticsAddress != "0" && o.DiagnosticsAddress != "" && o.DiagnosticsAddress == o.HealthAddr {
		bad("health-addr", "must differ from --diagnostics-address (%s)", o.DiagnosticsAddress)
	}
	if _, err := o.tlsOptions(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tlsOptions turns the TLS flags into a tls.Config mutator for the webhook
// and diagnostics servers. HTTP/2 is not offered.
func (o *Options) tlsOptions() (func(*tls.Config), error) {
	minVersion, err := cliflag.TLSVersion(o.TLSMinVersion)
	if err != nil {
		return nil, fmt.Errorf("--tls-min-version: %w", err)
	}
	var suites []uint16
	if len(o.TLSCipherSuites) > 0 {
		if suites, err = cliflag.TLSCipherSuites(o.TLSCipherSuites); err != nil {
			return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
		}
	}
	var curves []tls.CurveID
	if len(o.TLSCurvePreferences) > 0 {
		if curves, err = cliflag.TLSCurvePreferences(o.TLSCurvePreferences); err != nil {
			return nil, fmt.Errorf("--tls-curve-preferences: %w", err)
		}
	}
	return func(c *tls.Config) {
		c.MinVersion = minVersion
		if len(suites) > 0 {
			c.CipherSuites = suites
		}
		if len(curves) > 0 {
			c.CurvePreferences = curves
		}
		c.NextProtos = []string{"http/1.1"}
	}, nil
}

// Namespaces are the namespaces --namespace names, sorted, each once; none
// when it is empty (every namespace).
func (o Options) Namespaces() []string {
	var out []string
	for _, ns := range strings.Split(o.Namespace, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}
