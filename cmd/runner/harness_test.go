package main_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	captfenvtest "github.com/captf-io/cluster-api-provider-terraform/test/envtest"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The runner binary under test, built once by TestMain with CGO_ENABLED=0,
// -trimpath and stripped symbols exactly as the image build does (and so
// from the build cache of any clone).
var runnerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "captf-runner-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBin = filepath.Join(dir, "runner")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", runnerBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the runner:", err)
		os.Exit(1)
	}
	code := m.Run()
	if envShared != nil {
		_ = envShared.env.Stop()
		_ = os.RemoveAll(envShared.dir)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// apiEnv is one kube-apiserver and etcd from hack/tools, shared by the
// package's tests.
type apiEnv struct {
	env        *ctrlenvtest.Environment
	dir        string
	client     client.Client
	kubeconfig string
}

var (
	envOnce   sync.Once
	envErr    error
	envShared *apiEnv
	nsSeq     atomic.Int64
)

func sharedAPI(t testing.TB) *apiEnv {
	t.Helper()
	envOnce.Do(func() { envShared, envErr = startAPI() })
	if envErr != nil {
		t.Fatalf("envtest: %v", envErr)
	}
	return envShared
}

// startAPI starts envtest on the pinned binaries. Kubernetes 1.37 refuses
// --advertise-address=127.0.0.1 unless the endpoint reconciler is off.
func startAPI() (*apiEnv, error) {
	dir, err := os.MkdirTemp("", "captf-runner-envtest-")
	if err != nil {
		return nil, err
	}
	env, cfg, err := captfenvtest.Start()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kubeconfig, err := captfenvtest.AdminKubeconfig(env, dir)
	if err != nil {
		return nil, err
	}
	return &apiEnv{env: env, dir: dir, client: c, kubeconfig: kubeconfig}, nil
}

// fixture is one Terraform* object's Job layout under a temp dir that
// mirrors the fixed paths: <dir>/module (the image's /captf/module),
// <dir>/providers (an empty mirror: nothing is ever downloaded),
// <dir>/work (emptied before every run, like a new pod's emptyDir) and
// <dir>/config (the per-run Secret).
type fixture struct {
	t        *testing.T
	api      *apiEnv
	rt       tools.Runtime
	bin      string
	role     contract.Role
	kind     infrav1.WorkloadKind
	dir      string
	ns, name string
	uid      string
	suffix   string

	// leakRoot adds a root variable "probe" that only has a default and is
	// forwarded to the module, so a leaked TF_VAR_probe would reach it.
	leakRoot bool
	// bootstrap is the machine role's bootstrap data.
	bootstrap string
}

func newFixture(t *testing.T, role contract.Role) *fixture {
	t.Helper()
	return newFixtureOn(t, role, tools.OpenTofu)
}

// onRuntimes runs test once per runtime (OpenTofu, Terraform), each as a
// parallel subtest named after the runtime's image tag suffix.
func onRuntimes(t *testing.T, test func(t *testing.T, rt tools.Runtime)) {
	for _, rt := range tools.Runtimes() {
		t.Run(rt.Tag, func(t *testing.T) {
			t.Parallel()
			test(t, rt)
		})
	}
}

// newFixtureOn is newFixture with the runtime rt at the image's
// /captf/runtime.
func newFixtureOn(t *testing.T, role contract.Role, rt tools.Runtime) *fixture {
	t.Helper()
	api := sharedAPI(t)
	bin, err := rt.Path()
	if err != nil {
		t.Fatalf("%s: %v", rt.Binary, err)
	}
	repo, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kind := role.Kind()
	f := &fixture{
		t: t, api: api, rt: rt, bin: bin, role: role, kind: kind, dir: t.TempDir(),
		ns:   fmt.Sprintf("runner-%d-%d", time.Now().UnixNano()%100000, nsSeq.Add(1)),
		name: "obj-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")),
		uid:  fmt.Sprintf("uid-%d", nsSeq.Add(1)),
	}
	if len(f.name) > 40 {
		f.name = f.name[:40]
	}
	f.name = strings.TrimRight(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, f.name), "-")
	if f.suffix, err = state.Suffix(f.ns, kind, f.name); err != nil {
		t.Fatal(err)
	}
	if err := api.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(f.dir, "module")
	if err := os.CopyFS(module, os.DirFS(filepath.Join(repo, "modules", "noop", string(role)))); err != nil {
		t.Fatal(err)
	}
	extra, err := os.ReadFile(filepath.Join("testdata", "extra", "runner_test_extra.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(module, "runner_test_extra.tf"), extra, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"providers", "config"} {
		if err := os.MkdirAll(filepath.Join(f.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// render renders the role's inputs with the given user variables (inline
// JSON) into <dir>/config and returns the inputs hash.
func (f *fixture) render(vars string) string {
	f.t.Helper()
	common := inputs.Common{
		Cluster: inputs.ObjectRef{Name: "c1", Namespace: f.ns},
		Object:  inputs.ObjectRef{Name: f.name, Namespace: f.ns},
	}
	var in inputs.RoleInputs
	switch f.role {
	case contract.RoleCluster:
		in = &inputs.ClusterInputs{Common: common, KubernetesVersion: "v1.36.2"}
	case contract.RoleMachine:
		in = &inputs.MachineInputs{Common: common, MachineName: f.name, BootstrapData: []byte(f.bootstrap),
			BootstrapFormat: "cloud-config", KubernetesVersion: "v1.36.2", ClusterOutputs: json.RawMessage(`{}`)}
	}
	v, err := inputs.ResolveVariables(f.role, nil, []byte(vars))
	if err != nil {
		f.t.Fatalf("variables: %v", err)
	}
	r, err := inputs.Render(inputs.Request{Image: "registry.test/noop:v1", Inputs: in, Variables: v})
	if err != nil {
		f.t.Fatalf("render: %v", err)
	}
	mainTF := r.MainTF
	if f.leakRoot {
		var doc map[string]any
		if err := json.Unmarshal(mainTF, &doc); err != nil {
			f.t.Fatal(err)
		}
		doc["variable"].(map[string]any)["probe"] = map[string]any{"type": "string", "default": "unset"}
		doc["module"].(map[string]any)["role"].(map[string]any)["probe"] = "${var.probe}"
		if mainTF, err = json.Marshal(doc); err != nil {
			f.t.Fatal(err)
		}
	}
	cfg := filepath.Join(f.dir, "config")
	if err := os.WriteFile(filepath.Join(cfg, contract.MainFile), mainTF, 0o440); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, contract.TFVarsFile), r.TFVars, 0o440); err != nil {
		f.t.Fatal(err)
	}
	return r.Hash
}

func (f *fixture) jobName(op string) string { return "captf-job-" + op }

// baseEnv is the Job's environment as the runner sees it, minus the
// kubelet's service variables.
func (f *fixture) baseEnv() []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"KUBE_NAMESPACE=" + f.ns,
		"CHECKPOINT_DISABLE=1",
		"TMPDIR=" + f.t.TempDir(),
		"HOME=/nonexistent",
	}
}

// args are the golden Job's runner arguments, adapted to the fixture's
// directories, the test's tofu and kubeconfig.
func (f *fixture) args(op string, extra ...string) []string {
	a := []string{
		"run", "--op", op,
		"--bin=" + f.bin,
		"--image=registry.test/noop:v1",
		"--module=" + filepath.Join(f.dir, "module"),
		"--providers=" + filepath.Join(f.dir, "providers"),
		"--workdir=" + filepath.Join(f.dir, "work"),
		"--config=" + filepath.Join(f.dir, "config"),
		"--result=" + filepath.Join(f.dir, "termination-log"),
		"--lock-timeout=10s",
		"--stop-timeout=30s",
		"--backend-config=secret_suffix=" + f.suffix,
		"--backend-config=namespace=" + f.ns,
		"--backend-config=config_path=" + f.api.kubeconfig,
		fmt.Sprintf(`--backend-config=labels={"captf.io/managed"="true","captf.io/owner-name"=%q,"clusterctl.cluster.x-k8s.io/move"=""}`, f.name),
		fmt.Sprintf("--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/%s/%s/%s/%s", f.kind, f.ns, f.name, f.uid),
		"--job-name=" + f.jobName(op),
	}
	return append(a, extra...)
}

// runOut is what one runner process did.
type runOut struct {
	code   int
	doc    *result.Document
	raw    []byte
	stdout string
	stderr string
	took   time.Duration
}

// log is the whole pod log (stdout and stderr).
func (r runOut) log() string { return r.stdout + r.stderr }

func (r runOut) steps() string {
	var names []string
	for _, s := range r.doc.Steps {
		names = append(names, s.Name)
	}
	return strings.Join(names, ",")
}

// start starts the runner; the caller waits with finish.
type started struct {
	f              *fixture
	cmd            *exec.Cmd
	stdout, stderr *watchBuffer
	begin          time.Time
}

func (f *fixture) start(env []string, args []string) *started {
	f.t.Helper()
	if err := os.RemoveAll(filepath.Join(f.dir, "work")); err != nil {
		f.t.Fatal(err)
	}
	return f.startRaw(env, args)
}

// startRaw starts the runner with exactly args; the result document is
// expected at <dir>/termination-log.
func (f *fixture) startRaw(env []string, args []string) *started {
	f.t.Helper()
	_ = os.Remove(filepath.Join(f.dir, "termination-log"))
	s := &started{f: f, stdout: &watchBuffer{}, stderr: &watchBuffer{}}
	s.cmd = exec.Command(runnerBin, args...)
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	// Its own process group, so that whatever a run leaves behind (a
	// provisioner's child the runtime orphaned on its way out, a killed
	// run's tree) is cleaned up with the group and nothing else.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.begin = time.Now()
	if err := s.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	pgid := s.cmd.Process.Pid
	f.t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return s
}

// killGroup SIGKILLs the runner and every process of its group at once, as
// a node loss would.
func (s *started) killGroup() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

func (s *started) finish() runOut {
	s.f.t.Helper()
	err := s.cmd.Wait()
	// Anything the run left running in its group goes now.
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	out := runOut{stdout: s.stdout.String(), stderr: s.stderr.String(), took: time.Since(s.begin)}
	out.code = s.cmd.ProcessState.ExitCode()
	if err != nil && out.code < 0 {
		s.f.t.Fatalf("runner did not exit normally: %v\n%s", err, out.log())
	}
	raw, err := os.ReadFile(filepath.Join(s.f.dir, "termination-log"))
	if err != nil {
		s.f.t.Fatalf("no result document: %v\n%s", err, out.log())
	}
	out.raw = raw
	if len(raw) > result.MaxBytes {
		s.f.t.Errorf("result document is %d bytes, over %d", len(raw), result.MaxBytes)
	}
	if out.doc, err = result.Decode(raw); err != nil {
		s.f.t.Fatalf("result document: %v\n%s", err, raw)
	}
	return out
}

// run runs the runner to completion.
func (f *fixture) run(op string, extra ...string) runOut {
	f.t.Helper()
	return f.runEnv(f.baseEnv(), op, extra...)
}

func (f *fixture) runEnv(env []string, op string, extra ...string) runOut {
	f.t.Helper()
	return f.start(env, f.args(op, extra...)).finish()
}

// stepTimes lists the run's steps with their durations.
func stepTimes(r runOut) string {
	var parts []string
	for _, s := range r.doc.Steps {
		parts = append(parts, fmt.Sprintf("%s %.2fs", s.Name, s.Seconds))
	}
	return strings.Join(parts, ", ")
}

// mustSucceed fails the test unless the run succeeded.
func (f *fixture) mustSucceed(out runOut, wantSteps string) {
	f.t.Helper()
	if out.code != 0 || out.doc.Error != nil {
		f.t.Fatalf("run failed: exit %d, result %s\n%s", out.code, out.raw, out.log())
	}
	if got := out.steps(); got != wantSteps {
		f.t.Errorf("steps %s, want %s", got, wantSteps)
	}
	for _, s := range out.doc.Steps {
		if s.Seconds <= 0 {
			f.t.Errorf("step %s has no duration", s.Name)
		}
	}
	if out.doc.Runtime.Version != f.rt.Version {
		f.t.Errorf("runtime version %q, want %s's %s", out.doc.Runtime.Version, f.rt.Name, f.rt.Version)
	}
	if out.doc.Image.Ref != "registry.test/noop:v1" || !out.doc.Image.ProvidersMirror {
		f.t.Errorf("image %+v", out.doc.Image)
	}
}

// state reads the object's state through internal/state, as the manager
// does.
func (f *fixture) state() *state.State {
	f.t.Helper()
	st, err := state.Read(context.Background(), f.api.client, f.ns, f.suffix, state.DefaultLimits)
	if err != nil {
		f.t.Fatalf("reading state: %v", err)
	}
	return st
}

// stateSecret returns the base state Secret.
func (f *fixture) stateSecret() *corev1.Secret {
	f.t.Helper()
	var s corev1.Secret
	if err := f.api.client.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: state.SecretName(f.suffix)}, &s); err != nil {
		f.t.Fatalf("state Secret: %v", err)
	}
	return &s
}

// stateDoc decodes the state JSON of the base Secret.
func (f *fixture) stateDoc() map[string]any {
	f.t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(f.stateSecret().Data[state.DataKey]))
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		f.t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		f.t.Fatal(err)
	}
	return doc
}

// attribute returns attributes.<attr> of module.role.terraform_data.<name>.
func (f *fixture) attribute(doc map[string]any, name, attr string) any {
	f.t.Helper()
	for _, r := range doc["resources"].([]any) {
		res := r.(map[string]any)
		if res["module"] == "module.role" && res["type"] == "terraform_data" && res["name"] == name {
			inst := res["instances"].([]any)[0].(map[string]any)
			return inst["attributes"].(map[string]any)[attr]
		}
	}
	f.t.Fatalf("no terraform_data.%s in state", name)
	return nil
}

// tamper changes module.role.terraform_data.<name>'s input in the state
// Secret, as someone editing the infrastructure out of band would make a
// refresh see.
func (f *fixture) tamper(name string, value string) {
	f.t.Helper()
	doc := f.stateDoc()
	for _, r := range doc["resources"].([]any) {
		res := r.(map[string]any)
		if res["module"] == "module.role" && res["type"] == "terraform_data" && res["name"] == name {
			attrs := res["instances"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
			attrs["input"] = map[string]any{"value": value, "type": "string"}
			attrs["output"] = map[string]any{"value": value, "type": "string"}
		}
	}
	doc["serial"] = doc["serial"].(float64) + 1
	raw, err := json.Marshal(doc)
	if err != nil {
		f.t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	s := f.stateSecret()
	s.Data[state.DataKey] = z.Bytes()
	if err := f.api.client.Update(context.Background(), s); err != nil {
		f.t.Fatal(err)
	}
}

// lease returns the state lock Lease.
func (f *fixture) lease() *coordinationv1.Lease {
	f.t.Helper()
	var l coordinationv1.Lease
	if err := f.api.client.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: state.LockLeaseName(f.suffix)}, &l); err != nil {
		f.t.Fatalf("lock Lease: %v", err)
	}
	return &l
}

// events returns the events on the fixture's object, oldest first.
func (f *fixture) events() []eventsv1.Event {
	f.t.Helper()
	var list eventsv1.EventList
	if err := f.api.client.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == f.name {
			out = append(out, e)
		}
	}
	return out
}

// watchBuffer is a concurrency-safe output buffer a test can wait on.
type watchBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the buffer contains s.
func (w *watchBuffer) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(w.String(), s) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("output never showed %q:\n%s", s, w.String())
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o440); err != nil {
		t.Fatal(err)
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
