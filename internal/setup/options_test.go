package setup

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

const image = "registry.example/captf/manager:v0.1.0"

func valid() Options {
	o := DefaultOptions()
	o.RunnerImage = image
	return o
}

// TestDefaultsAreTheReferenceFlags checks the defaults of reference-facts
// §4 as the flag set shows them.
func TestDefaultsAreTheReferenceFlags(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	for flag, want := range map[string]string{
		"cluster-operation-gate":               "true",
		"drift-default-interval":               "30m0s",
		"runner-events":                        "true",
		"runner-image":                         "",
		"state-backups":                        "5",
		"namespace":                            "",
		"sync-period":                          "10m0s",
		"kube-api-qps":                         "100",
		"kube-api-burst":                       "200",
		"terraformcluster-concurrency":         "10",
		"terraformmachine-concurrency":         "10",
		"terraformmachinepool-concurrency":     "10",
		"terraformmachinetemplate-concurrency": "10",
		"watch-filter":                         "",
		"leader-elect":                         "false",
		"leader-elect-lease-duration":          "15s",
		"leader-elect-renew-deadline":          "10s",
		"leader-elect-retry-period":            "2s",
		"webhook-cert-dir":                     "/tmp/k8s-webhook-server/serving-certs/",
		"webhook-cert-name":                    "tls.crt",
		"webhook-key-name":                     "tls.key",
		"webhook-port":                         "9443",
		"diagnostics-address":                  ":8443",
		"insecure-diagnostics":                 "false",
		"tls-cipher-suites":                    "[]",
		"tls-curve-preferences":                "[]",
		"tls-min-version":                      "VersionTLS12",
		"health-addr":                          ":9440",
		"profiler-address":                     "",
		"kubeconfig":                           "",
	} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Errorf("--%s is not defined", flag)
			continue
		}
		if f.DefValue != want {
			t.Errorf("--%s defaults to %q, want %q", flag, f.DefValue, want)
		}
	}
}

func TestFlagsParse(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--terraformmachine_concurrency=3", // underscores are accepted as dashes
		"--drift-default-interval=1h", "--state-backups=0", "--cluster-operation-gate=false",
		"--runner-events=false", "--runner-image=" + image, "--namespace=tenant", "--sync-period=1m",
		"--watch-filter=blue", "--leader-elect", "--tls-curve-preferences=29,23",
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.TerraformMachineConcurrency != 3 || o.DriftDefaultInterval != time.Hour || o.StateBackups != 0 ||
		o.ClusterOperationGate || o.RunnerEvents || o.RunnerImage != image || o.Namespace != "tenant" ||
		o.SyncPeriod != time.Minute || o.WatchFilter != "blue" || !o.LeaderElect || len(o.TLSCurvePreferences) != 2 {
		t.Errorf("parsed %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid flags refused: %v", err)
	}
}

func TestRunnerImageDefaultsToTheManagerImage(t *testing.T) {
	t.Setenv(ManagerImageEnv, image)
	o := DefaultOptions()
	o.Complete()
	if o.RunnerImage != image {
		t.Errorf("runner image %q, want $%s", o.RunnerImage, ManagerImageEnv)
	}
	o = DefaultOptions()
	o.RunnerImage = "other.example/runner:v2"
	o.Complete()
	if o.RunnerImage != "other.example/runner:v2" {
		t.Errorf("--runner-image overridden by the environment: %q", o.RunnerImage)
	}
}

// TestValidate: "the manager refuses to start on an invalid combination".
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Options)
		flag   string // "" = valid
	}{
		{"the defaults with a runner image are valid", func(*Options) {}, ""},
		{"refuses to start if neither --runner-image nor $CAPTF_MANAGER_IMAGE resolves", func(o *Options) { o.RunnerImage = "" }, "--runner-image"},
		{"refuses a runner image that is not a valid reference", func(o *Options) { o.RunnerImage = "Registry/UPPER:tag" }, "--runner-image"},
		{"a digest reference is a valid runner image", func(o *Options) {
			o.RunnerImage = "registry.example/captf/manager@sha256:" + strings.Repeat("a", 64)
		}, ""},
		{"concurrency below 1 is refused", func(o *Options) { o.TerraformMachinePoolConcurrency = 0 }, "--terraformmachinepool-concurrency"},
		{"a non-positive drift default is refused (drift is disabled per object)", func(o *Options) { o.DriftDefaultInterval = 0 }, "--drift-default-interval"},
		{"--state-backups 0 takes none and is valid", func(o *Options) { o.StateBackups = 0 }, ""},
		{"negative --state-backups is refused", func(o *Options) { o.StateBackups = -1 }, "--state-backups"},
		{"more backups than status.stateBackups lists (16) is refused", func(o *Options) { o.StateBackups = 17 }, "--state-backups"},
		{"an invalid --namespace is refused", func(o *Options) { o.Namespace = "Not_A_Namespace" }, "--namespace"},
		{"a non-positive --sync-period is refused", func(o *Options) { o.SyncPeriod = 0 }, "--sync-period"},
		{"--kube-api-qps 0 leaves throttling to the API server and is valid", func(o *Options) { o.KubeAPIQPS, o.KubeAPIBurst = 0, 0 }, ""},
		{"a negative --kube-api-qps is refused", func(o *Options) { o.KubeAPIQPS = -1 }, "--kube-api-qps"},
		{"a --kube-api-burst below 1 with a QPS is refused", func(o *Options) { o.KubeAPIBurst = 0 }, "--kube-api-burst"},
		{"a --watch-filter that is no label value is refused", func(o *Options) { o.WatchFilter = "a b" }, "--watch-filter"},
		{"leader election needs renew deadline above retry period", func(o *Options) {
			o.LeaderElect = true
			o.LeaderElectRenewDeadline = time.Second
		}, "--leader-elect-renew-deadline"},
		{"leader election needs lease duration above renew deadline", func(o *Options) {
			o.LeaderElect = true
			o.LeaderElectLeaseDuration = 5 * time.Second
		}, "--leader-elect-lease-duration"},
		{"lease timings are not checked without leader election", func(o *Options) { o.LeaderElectLeaseDuration = time.Second }, ""},
		{"a webhook port out of range is refused", func(o *Options) { o.WebhookPort = 70000 }, "--webhook-port"},
		{"--insecure-diagnostics with diagnostics off is refused", func(o *Options) {
			o.InsecureDiagnostics = true
			o.DiagnosticsAddress = "0"
		}, "--insecure-diagnostics"},
		{"health and diagnostics on one address are refused", func(o *Options) { o.HealthAddr = ":8443" }, "--health-addr"},
		{"an unknown TLS version is refused", func(o *Options) { o.TLSMinVersion = "VersionTLS99" }, "--tls-min-version"},
		{"an unknown cipher suite is refused", func(o *Options) { o.TLSCipherSuites = []string{"TLS_NOPE"} }, "--tls-cipher-suites"},
		{"an unknown curve is refused", func(o *Options) { o.TLSCurvePreferences = []int32{12345} }, "--tls-curve-preferences"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := valid()
			c.change(&o)
			err := o.Validate()
			switch {
			case c.flag == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.flag != "" && err == nil:
				t.Errorf("accepted")
			case c.flag != "" && !strings.Contains(err.Error(), c.flag+":"):
				t.Errorf("error %q does not name %s", err, c.flag)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	o := valid()
	o.RunnerImage = ""
	o.StateBackups = -1
	o.SyncPeriod = 0
	err := o.Validate()
	for _, f := range []string{"--runner-image", "--state-backups", "--sync-period"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
}

// childEnv marks a test binary run as the manager command: it runs
// Command with the newline-separated arguments in childArgsEnv until
// SIGTERM, prints "RESULT: <error>" and exits 0.
const (
	childEnv     = "CAPTF_SETUP_TEST_CHILD"
	childArgsEnv = "CAPTF_SETUP_TEST_ARGS"
)

func runChild() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cmd := Command()
	cmd.SetArgs(strings.Split(os.Getenv(childArgsEnv), "\n"))
	err := cmd.ExecuteContext(ctx)
	fmt.Fprintf(os.Stderr, "RESULT: %v\n", err)
	os.Exit(0)
}

// child returns the command running this test binary as the manager.
func child(testName string, env []string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^"+testName+"$")
	c.Env = append(os.Environ(), childEnv+"=1", childArgsEnv+"="+strings.Join(args, "\n"))
	c.Env = append(c.Env, env...)
	return c
}

// TestCommandLogsEveryFlag: "the manager logs each parsed flag at start
// (FLAG: --name="value")" and refuses to start on invalid flags. The
// command runs in a child process, whose stderr is the log.
func TestCommandLogsEveryFlag(t *testing.T) {
	b, err := child("TestCommandLogsEveryFlag", []string{ManagerImageEnv + "="}, "--state_backups=3", "--sync-period=2m").CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	out := string(b)
	for _, line := range []string{
		`FLAG: --state-backups="3"`, `FLAG: --sync-period="2m0s"`, `FLAG: --v="2"`,
		`FLAG: --leader-elect="false"`, `FLAG: --logging-format="text"`, `FLAG: --runner-image=""`,
	} {
		if !strings.Contains(out, line) {
			t.Errorf("log lacks %s", line)
		}
	}
	if !strings.Contains(out, "RESULT: refusing to start: --runner-image:") {
		t.Errorf("started without a runner image:\n%s", out)
	}
}

// TestCommandReadsItsOwnPod: the shipped Deployment sets no --runner-image,
// only $POD_NAMESPACE and $POD_NAME; the command must get past its flag
// checks to read that Pod for its image (here from an API server that is
// not there, so the read is what fails).
func TestCommandReadsItsOwnPod(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := child("TestCommandReadsItsOwnPod", []string{ManagerImageEnv + "=", PodNameEnv + "=manager-0", PodNamespaceEnv + "=captf-system"},
		"--kubeconfig="+kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	out := string(b)
	if !strings.Contains(out, "RESULT: --runner-image is not set: failed to read the manager's own Pod captf-system/manager-0") {
		t.Errorf("the command did not read its own Pod for the runner image:\n%s", out)
	}
}

func TestCommandVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out bytes.Buffer
		cmd := Command()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "contract v1alpha1") {
			t.Errorf("%v printed %q", args, out.String())
		}
	}
}

func TestPutVerbosity(t *testing.T) {
	for _, c := range []struct {
		method, body string
		code         int
	}{
		{http.MethodPut, "3", http.StatusOK},
		{http.MethodPut, "not-a-level", http.StatusBadRequest},
		{http.MethodPut, strings.Repeat("9", 100), http.StatusBadRequest},
		{http.MethodGet, "", http.StatusMethodNotAllowed},
	} {
		rec := httptest.NewRecorder()
		putVerbosity(rec, httptest.NewRequest(c.method, "/debug/flags/v", strings.NewReader(c.body)))
		if rec.Code != c.code {
			t.Errorf("%s %q: %d, want %d", c.method, c.body, rec.Code, c.code)
		}
	}
	_, _ = putVerbosityReset()
}

// putVerbosityReset puts -v back to the manager's default.
func putVerbosityReset() (string, error) {
	rec := httptest.NewRecorder()
	putVerbosity(rec, httptest.NewRequest(http.MethodPut, "/debug/flags/v", strings.NewReader("2")))
	return rec.Body.String(), nil
}

// TestClientRate checks the manager's client-side API rate: the flags'
// values, and no client-side limit (QPS -1, controller-runtime's own
// default) when --kube-api-qps is 0.
func TestClientRate(t *testing.T) {
	o := valid()
	if qps, burst := clientRate(o); qps != 100 || burst != 200 {
		t.Fatalf("defaults give QPS %g burst %d, want 100 and 200", qps, burst)
	}
	o.KubeAPIQPS, o.KubeAPIBurst = 0, 0
	if qps, _ := clientRate(o); qps != -1 {
		t.Fatalf("--kube-api-qps=0 gives QPS %g, want -1 (no client-side limit)", qps)
	}
}
