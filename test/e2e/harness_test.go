package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

var logger = logr.Discard()

// managerLog keeps everything CAPTF's managers log, at every verbosity, for
// the checks that no secret value reaches a log.
var managerLog = &syncBuffer{}

// captfLogger is the managers' logger: into managerLog, and to stderr too
// with CAPTF_E2E_LOG set.
var captfLogger logr.Logger

// The scenarios share one environment (control plane, Cluster API, kubelet,
// registry, images) and one manager watching every namespace but
// restartNamespace, whose scenario runs managers of its own. Each scenario
// works in a namespace of its own with a TerraformClusterIdentity of its
// own; those that need the manager or its metrics to themselves do not run
// in parallel.
var shared struct {
	once   sync.Once
	err    error
	dir    string
	e      *env.Env
	c      client.Client
	images framework.Images
	// writes counts the shared manager's API writes, passes its passes.
	writes *framework.Writes
	passes *framework.Passes
	// audit records what the shared manager, which runs as its own
	// ServiceAccount with the shipped RBAC, asks the API server.
	audit *framework.Audit
	stop  context.CancelFunc
	done  chan error
}

// restartNamespace is left to TestManagerRestartMidBringUp's managers.
const restartNamespace = "team-restart"

func TestMain(m *testing.M) {
	flag.Parse()
	// The scenarios spend most of their time waiting for Jobs and Cluster
	// API: run them all at once unless -parallel says otherwise.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "16")
	}
	sink := io.Writer(managerLog)
	if os.Getenv("CAPTF_E2E_LOG") != "" {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
		sink = io.MultiWriter(managerLog, os.Stderr)
	}
	// Every verbosity: the per-pass messages are where a leaked value
	// would show.
	captfLogger = zap.New(zap.UseDevMode(true), zap.Level(zapcore.Level(-4)), zap.WriteTo(sink))
	ctrl.SetLogger(logger)
	code := m.Run()
	if shared.e != nil {
		shared.stop()
		if err := <-shared.done; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "the shared manager: %v\n", err)
		}
		if err := shared.e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the local environment: %v\n", err)
			code = max(code, 1)
		}
	}
	if shared.dir != "" {
		if code != 0 || os.Getenv("CAPTF_E2E_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "local environment kept for inspection in %s (logs under controlplane/logs and kubelet/pods)\n", shared.dir)
		} else {
			_ = os.RemoveAll(shared.dir)
		}
	}
	os.Exit(code)
}

// startShared brings up the environment, pushes the images and starts the
// shared manager.
func startShared() error {
	r, err := tools.RepoRoot()
	if err != nil {
		return err
	}
	// CAPTF_E2E_KEEP=<dir> keeps the environment's folder (logs, pods);
	// it is kept too when a scenario fails.
	shared.dir = os.Getenv("CAPTF_E2E_KEEP")
	if shared.dir == "" {
		if shared.dir, err = os.MkdirTemp("", "captf-e2e-"); err != nil {
			return err
		}
	}
	tmp := filepath.Join(shared.dir, "build")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	runnerBin, err := framework.BuildRunner(tmp)
	if err != nil {
		return err
	}
	crds, err := framework.RenderedCRDs(r, tmp)
	if err != nil {
		return err
	}
	// captf-env is built before the start's bound, as the runner is: its
	// first build on a machine compiles Cluster API and the Kubernetes
	// libraries and would take minutes of that bound.
	envBin, err := env.BuildEnvBinary(context.Background(), tmp)
	if err != nil {
		return err
	}
	if shared.audit, err = framework.NewAudit(filepath.Join(shared.dir, "audit"), framework.ManagerUser); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The registry, Cluster API and the kubelet run in a child process
	// built without -race: the race detector is spent on CAPTF's manager
	// and the scenarios alone. Their logs (with CAPTF_E2E_LOG) are in
	// env/logs/captf-env.log.
	// A second Node, labelled and tainted, for runner pod placement
	// (placement_test.go): a kubelet of its own in the same child, which
	// binds only the pods that tolerate its taint, so the other scenarios'
	// pods all stay on the first Node.
	e, err := env.Start(ctx, env.Options{
		CAPI: true, Kubelet: true, Registry: true, Separate: true, EnvBinary: envBin, Logger: logger,
		ExtraNodes: []env.Node{poolNode},
		// Pod garbage collection ends the pods of a Node that is gone
		// (TestFaultNodeLost), as in any cluster.
		ExtraControllers: []string{"pod-garbage-collector-controller"},
		CRDPaths:         []string{crds}, Dir: filepath.Join(shared.dir, "env"), KeepDir: true,
		APIServerArgs: shared.audit.APIServerArgs(),
	})
	if err != nil {
		return fmt.Errorf("failed to start the local environment: %w", err)
	}
	shared.e = e
	if shared.images, err = framework.PushImages(ctx, r, e, runnerBin); err != nil {
		return err
	}
	if err := framework.RunnerClusterRole(ctx, r, e.Client); err != nil {
		return err
	}
	// The shared manager is not the admin: it runs as its ServiceAccount
	// bound to config/rbac's roles only, so a right they miss fails the
	// scenarios, and TestMachinePoolAndDeletion checks they hold none it
	// does not use (rbac_test.go).
	asManager, err := framework.ManagerIdentity(ctx, r, e)
	if err != nil {
		return err
	}
	if shared.c, err = client.New(e.Config, client.Options{Scheme: scheme()}); err != nil {
		return err
	}
	shared.writes, shared.passes = &framework.Writes{}, framework.NewPasses()
	o := managerOptions(shared.images.Runner)
	o.Logger = shared.passes.Logger(o.Logger)
	o.ExcludeNamespaces = excludedNamespaces()
	mctx, stop := context.WithCancel(context.Background())
	shared.stop, shared.done = stop, make(chan error, 1)
	go func() {
		shared.done <- framework.RunObservedManager(mctx, e, o, framework.Observe{Writes: shared.writes, Config: asManager})
	}()
	// Every scenario's writes go through CAPTF's admission webhooks.
	return framework.WaitForWebhooks(ctx, shared.c, 2*time.Minute)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// managerOptions are framework.ManagerOptions with the managers' logger.
func managerOptions(runnerImage string) setup.Options {
	o := framework.ManagerOptions(runnerImage)
	o.Logger = captfLogger
	return o
}

// world is a scenario's view of the shared environment: its namespace and
// identity, and the shared manager's counters.
type world struct {
	t      *testing.T
	e      *env.Env
	c      client.Client
	images framework.Images
	// ns is the scenario's namespace, identity the name of its
	// TerraformClusterIdentity (and of the identity's Secret).
	ns, identity string
	// writes counts the shared manager's API writes, passes its passes.
	writes *framework.Writes
	passes *framework.Passes
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme,
		controlplanev1.AddToScheme, infrav1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// root is the repository root.
func root(t testing.TB) string {
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// start returns the scenario's world in namespace ns, bringing the shared
// environment up first if no scenario did yet. The Quick Start's namespace
// team-a uses the book's identity aws-prod; any other ns uses aws-<ns>.
func start(t *testing.T, ns string) *world {
	t.Helper()
	shared.once.Do(func() { shared.err = startShared() })
	if shared.err != nil {
		t.Fatalf("the shared environment did not start: %v", shared.err)
	}
	identity := "aws-" + ns
	if ns == "team-a" {
		identity = "aws-prod"
	}
	return &world{t: t, e: shared.e, c: shared.c, images: shared.images, ns: ns, identity: identity,
		writes: shared.writes, passes: shared.passes}
}

// quickStart is the book's Quick Start in the scenario's namespace.
func (w *world) quickStart() framework.QuickStart {
	return framework.QuickStart{Root: root(w.t), Client: w.c, Images: w.images, Namespace: w.ns, Cluster: "my-cluster", Identity: w.identity}
}

func (w *world) create(ctx context.Context, objs ...client.Object) {
	w.t.Helper()
	if err := framework.Apply(ctx, w.c, objs...); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) namespace(ctx context.Context, name string) {
	w.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// eventually polls cond until it holds or the timeout passes.
func (w *world) eventually(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) {
	w.t.Helper()
	if last, ok := framework.WaitFor(ctx, timeout, cond); !ok {
		w.dump(ctx)
		w.t.Fatalf("timed out waiting for %s: %s", what, last)
	}
}

// ready reports an object's Ready condition.
func ready(o interface{ GetConditions() []metav1.Condition }) (bool, string) {
	c := conditionOf(o, infrav1.ReadyCondition)
	if c.Type == "" {
		return false, "no Ready condition"
	}
	return c.Status == metav1.ConditionTrue, fmt.Sprintf("Ready=%s/%s: %s", c.Status, c.Reason, c.Message)
}

// dump logs what the scenario's objects look like, for a failure.
func (w *world) dump(ctx context.Context) {
	var tcs infrav1.TerraformClusterList
	_ = w.c.List(ctx, &tcs, client.InNamespace(w.ns))
	for _, o := range tcs.Items {
		w.t.Logf("TerraformCluster %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var tms infrav1.TerraformMachineList
	_ = w.c.List(ctx, &tms, client.InNamespace(w.ns))
	for _, o := range tms.Items {
		w.t.Logf("TerraformMachine %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var tmps infrav1.TerraformMachinePoolList
	_ = w.c.List(ctx, &tmps, client.InNamespace(w.ns))
	for _, o := range tmps.Items {
		w.t.Logf("TerraformMachinePool %s/%s: %s", o.Namespace, o.Name, conds(o.Status.Conditions))
	}
	var jobs batchv1.JobList
	_ = w.c.List(ctx, &jobs, client.InNamespace(w.ns))
	for _, j := range jobs.Items {
		w.t.Logf("Job %s/%s: active=%d succeeded=%d failed=%d", j.Namespace, j.Name, j.Status.Active, j.Status.Succeeded, j.Status.Failed)
	}
	var pods corev1.PodList
	_ = w.c.List(ctx, &pods, client.InNamespace(w.ns))
	for _, p := range pods.Items {
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
				logs, _ := w.e.Logs(p.Namespace, p.Name, cs.Name)
				w.t.Logf("pod %s container %s exited %d: %s\n%s", p.Name, cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Message, tail(logs, 3000))
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func conds(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s/%s(%s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " ")
}

// logReactions logs how long the manager took from each Job's completion
// to its next step on the same object, as the timeline saw it.
func logReactions(t *testing.T, tl *framework.Timeline) []framework.Reaction {
	rs := tl.Reactions()
	for _, r := range rs {
		t.Logf("  %-36s %-44s finished -> %-8s %v", r.Job.Owner, r.Job.Name, r.Next, r.Delay.Round(time.Millisecond))
	}
	t.Logf("Job completion to the next Job's creation, to Ready or to the object's removal (%d samples): p50 %v, p95 %v, max %v",
		len(rs), framework.Percentile(rs, 0.5).Round(time.Millisecond),
		framework.Percentile(rs, 0.95).Round(time.Millisecond), framework.Percentile(rs, 1).Round(time.Millisecond))
	return rs
}

// identityFor creates the namespaces and the scenario's identity allowed in
// ns (templates/identity.yaml).
func (w *world) identityFor(ctx context.Context, ns string) {
	w.t.Helper()
	w.namespace(ctx, "captf-system")
	w.namespace(ctx, ns)
	objs, err := framework.Template(root(w.t), "identity.yaml", map[string]string{"TERRAFORM_IDENTITY_NAME": w.identity, "NAMESPACE": ns})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, o := range objs {
		w.create(ctx, o)
	}
}

// clusterObjects are a Cluster with no control-plane object and its
// TerraformCluster on the no-op cluster image with the scenario's identity;
// tune adjusts the TerraformCluster's spec.
func (w *world) clusterObjects(ns, name string, tune func(*infrav1.TerraformClusterSpec)) (*clusterv1.Cluster, *infrav1.TerraformCluster) {
	tc := &infrav1.TerraformCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
		Spec: infrav1.TerraformClusterSpec{
			WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: w.images.Cluster}},
			IdentityRef:   &infrav1.IdentityReference{Name: w.identity},
		},
	}
	if tune != nil {
		tune(&tc.Spec)
	}
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformCluster", Name: name}},
	}, tc
}

// assertNoSecret fails the test for every place a sentinel secret value
// shows up where the Security Model says none may: the Terraform* objects
// (status, annotations), the events, the Jobs and pods (a Job refers to
// Secrets, never inlines them), what the managers logged since logFrom, and
// what the Jobs' containers printed.
func (w *world) assertNoSecret(ctx context.Context, ns string, logFrom int, sentinels ...string) {
	w.t.Helper()
	places := map[string]string{"the managers' log": managerLog.String()[logFrom:]}
	// The log is shared with the other scenarios: it must hold what the
	// managers logged about this one's objects.
	if !strings.Contains(places["the managers' log"], `"`+ns+`"`) {
		w.t.Errorf("the managers logged nothing about namespace %s to look into", ns)
	}
	add := func(what string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			w.t.Fatal(err)
		}
		places[what] = string(b)
	}
	lists := map[string]client.ObjectList{
		"TerraformClusters": &infrav1.TerraformClusterList{}, "TerraformMachines": &infrav1.TerraformMachineList{},
		"TerraformMachinePools": &infrav1.TerraformMachinePoolList{}, "events": &eventsv1.EventList{},
		"core events": &corev1.EventList{}, "Jobs": &batchv1.JobList{}, "Leases": &coordinationv1.LeaseList{},
	}
	for what, l := range lists {
		if err := w.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			w.t.Fatal(err)
		}
		add(what, l)
	}
	var pods corev1.PodList
	if err := w.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		w.t.Fatal(err)
	}
	add("pods", &pods)
	for _, p := range pods.Items {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			if logs, err := w.e.Logs(ns, p.Name, c.Name); err == nil {
				places["the log of "+p.Name+"/"+c.Name] = logs
			}
		}
	}
	for what, text := range places {
		for _, s := range sentinels {
			if strings.Contains(text, s) {
				w.t.Errorf("a secret value (%s) is in %s", s, what)
			}
		}
	}
	w.t.Logf("no secret value in %d places (objects, events, Jobs, pods, the managers' log, %d container logs)", len(places), len(places)-len(lists)-2)
}

// conditionOf returns the condition typ of o, the zero condition when unset.
func conditionOf(o interface{ GetConditions() []metav1.Condition }, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(o.GetConditions(), typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// eventCounts counts, by reason, the events on objects of kind in ns; an
// event recorded as a series counts each time it occurred.
func (w *world) eventCounts(ctx context.Context, ns, kind string) map[string]int {
	w.t.Helper()
	var evs eventsv1.EventList
	if err := w.c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		w.t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range evs.Items {
		if e.Regarding.Kind != kind {
			continue
		}
		if e.Series != nil {
			n[e.Reason] += int(e.Series.Count)
		} else {
			n[e.Reason]++
		}
	}
	return n
}

// gzipJSON encodes v as the kubernetes backend stores a state: gzip JSON.
func gzipJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gunzipJSON decodes what gzipJSON encodes into v.
func gunzipJSON(b []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// touch patches an annotation no input renders onto o, so that it is
// reconciled again.
func (w *world) touch(ctx context.Context, o client.Object) {
	w.t.Helper()
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		w.t.Fatal(err)
	}
	p := client.MergeFrom(o.DeepCopyObject().(client.Object))
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["example.com/touched"] = time.Now().Format(time.RFC3339Nano)
	o.SetAnnotations(ann)
	if err := w.c.Patch(ctx, o, p); err != nil {
		w.t.Fatal(err)
	}
}

// settle is the counted wait that replaces "nothing happens for a while":
// n times, it touches every object of touch and waits until the shared
// manager finished one more pass over each of watch. It returns the writes
// the shared manager made into the namespace meanwhile, and how many of the
// passes decided no operation.
func (w *world) settle(ctx context.Context, n int, touch []client.Object, watch []framework.Object) (writes []string, none int) {
	w.t.Helper()
	before := len(w.writes.In(w.ns))
	done, decidedNone := map[framework.Object]int{}, 0
	for _, o := range watch {
		done[o] = w.passes.Done(o)
		decidedNone += w.passes.Decided(o, "none")
	}
	for round := 1; round <= n; round++ {
		for _, o := range touch {
			w.touch(ctx, o)
		}
		w.eventually(ctx, 3*time.Minute, fmt.Sprintf("pass %d of %d over each object", round, n), func() (bool, string) {
			for _, o := range watch {
				if got := w.passes.Done(o) - done[o]; got < round {
					return false, fmt.Sprintf("%d passes over %s %s", got, o.Kind, o.Name)
				}
			}
			return true, ""
		})
	}
	for _, o := range watch {
		none += w.passes.Decided(o, "none")
	}
	return w.writes.In(w.ns)[before:], none - decidedNone
}

// obj names a Terraform* object of the scenario's namespace for Passes.
func (w *world) obj(kind, name string) framework.Object {
	return framework.Object{Kind: kind, Namespace: w.ns, Name: name}
}
