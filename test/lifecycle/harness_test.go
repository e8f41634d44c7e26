package lifecycle

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformcluster"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachine"
	"github.com/captf-io/cluster-api-provider-terraform/internal/controller/terraformmachinepool"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// The images the objects name; nothing pulls them.
const (
	moduleImage = "registry.example/captf/module:v1"
	runnerImage = "registry.example/captf/manager:v1"
	imageDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

var nsSeq atomic.Int64

// env is one test's world: its namespace, an identity that allows it, the
// flows of the three kinds sharing one controlled clock and one event
// recorder.
type env struct {
	t   *testing.T
	ctx context.Context
	ns  string
	// identity is the TerraformClusterIdentity the objects use.
	identity string
	rec      *recorder

	mu  sync.Mutex
	now time.Time
}

// newEnv creates a namespace, a credentials Secret and an identity that
// allows the namespace. The clock starts at the wall clock (whole seconds:
// the API keeps times to the second) and moves only when the test says.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		t:   t,
		ctx: ctrl.LoggerInto(context.Background(), logr.Discard()),
		ns:  fmt.Sprintf("lc-%d-%d", time.Now().UnixNano()%1000000, nsSeq.Add(1)),
		rec: &recorder{},
		now: time.Now().Truncate(time.Second),
	}
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	e.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "cloud-credentials"},
		Data:       map[string][]byte{"TOKEN": []byte("not-a-real-token")},
	})
	e.identity = e.ns + "-identity"
	id := &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: e.identity},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: e.ns, Name: "cloud-credentials"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{e.ns}},
		},
	}
	e.create(id)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), id) })
	return e
}

// clock is the flows' Clock.
func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// advance moves the clock on.
func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

// flowFor assembles the shared flow for obj's kind the way the manager
// does (internal/setup: the flow's settings, then the kind's adapter
// plugged in), with a live client, the test's recorder and clock.
func (e *env) flowFor(obj client.Object) *lifecycle.Flow {
	f := &lifecycle.Flow{
		Client:    k8s,
		APIReader: k8s,
		Recorder:  e.rec,
		Clock:     e.clock,
		Options: lifecycle.Options{
			RunnerImage:          runnerImage,
			DriftDefaultInterval: 30 * time.Minute,
			StateBackups:         5,
			ClusterOperationGate: true,
			RunnerEvents:         true,
		},
	}
	switch obj.(type) {
	case *infrav1.TerraformCluster:
		f.Adapter = &terraformcluster.Adapter{Client: k8s}
	case *infrav1.TerraformMachine:
		f.Adapter = terraformmachine.NewAdapter(k8s)
	case *infrav1.TerraformMachinePool:
		f.Adapter = terraformmachinepool.NewAdapter(k8s)
	default:
		e.t.Fatalf("no flow for %T", obj)
	}
	return f
}

// outcome of one pass.
type outcome struct {
	Result ctrl.Result
	Err    error
}

// pass runs one reconcile of obj and reads obj back (it stays as it was
// when the object is gone).
func (e *env) pass(obj client.Object) outcome {
	e.t.Helper()
	res, err := e.flowFor(obj).Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	e.refresh(obj)
	return outcome{Result: res, Err: err}
}

// passFailing runs one reconcile of obj whose writes go through funcs
// first (a write funcs fails never reaches the API server: the manager
// died there), and returns its error.
func (e *env) passFailing(obj client.Object, funcs interceptor.Funcs) error {
	e.t.Helper()
	f := e.flowFor(obj)
	c := interceptor.NewClient(k8s.(client.WithWatch), funcs)
	f.Client = c
	_, err := f.Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	e.refresh(obj)
	return err
}

// mustPass runs one reconcile that must not fail.
func (e *env) mustPass(obj client.Object) ctrl.Result {
	e.t.Helper()
	o := e.pass(obj)
	if o.Err != nil {
		e.t.Fatalf("pass of %T %s failed: %v", obj, obj.GetName(), o.Err)
	}
	return o.Result
}

// refresh reads obj back; a gone object is left as it was.
func (e *env) refresh(obj client.Object) {
	e.t.Helper()
	if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("read %T %s: %v", obj, obj.GetName(), err)
	}
}

// gone reports whether obj no longer exists.
func (e *env) gone(obj client.Object) bool {
	e.t.Helper()
	err := k8s.Get(e.ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("read %T %s: %v", obj, obj.GetName(), err)
	}
	return apierrors.IsNotFound(err)
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := k8s.Create(e.ctx, obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// update applies mut to a fresh copy of obj and writes it (spec and
// metadata), retrying on a conflict.
func (e *env) update(obj client.Object, mut func()) {
	e.t.Helper()
	for range 5 {
		e.refresh(obj)
		mut()
		err := k8s.Update(e.ctx, obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.t.Fatalf("update %T %s: %v", obj, obj.GetName(), err)
		}
	}
	e.t.Fatalf("update %T %s: conflicts", obj, obj.GetName())
}

// annotate sets (or, with value "-", removes) an annotation.
func (e *env) annotate(obj client.Object, key, value string) {
	e.t.Helper()
	e.update(obj, func() {
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if value == "-" {
			delete(a, key)
		} else {
			a[key] = value
		}
		obj.SetAnnotations(a)
	})
}

// delete asks the API server to delete obj (its finalizers keep it).
func (e *env) delete(obj client.Object) {
	e.t.Helper()
	if err := k8s.Delete(e.ctx, obj); err != nil {
		e.t.Fatalf("delete %T %s: %v", obj, obj.GetName(), err)
	}
	e.refresh(obj)
}

// ---- Cluster API objects and their Terraform* infrastructure.

// world is a Cluster and its TerraformCluster, owned as Cluster API owns
// them.
type world struct {
	Cluster *clusterv1.Cluster
	TC      *infrav1.TerraformCluster
}

// newCluster creates a Cluster and a TerraformCluster it owns and
// references; mut may change the TerraformCluster before it is created.
func (e *env) newCluster(name string, mut func(*infrav1.TerraformCluster)) *world {
	e.t.Helper()
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformCluster", Name: name,
	}
	e.create(cl)
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.ns, Name: name,
		Labels:          map[string]string{clusterv1.ClusterNameLabel: name},
		OwnerReferences: []metav1.OwnerReference{ownerRef(cl, "Cluster")},
	}}
	tc.Spec.Source.Image = moduleImage
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
	if mut != nil {
		mut(tc)
	}
	e.create(tc)
	return &world{Cluster: cl, TC: tc}
}

func ownerRef(o client.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// provisionedCluster is a world whose cluster infrastructure is in place:
// the TerraformCluster applied (state with exports) and the Cluster's
// status.initialization.infrastructureProvisioned true, as Cluster API
// sets it. Machines and pools build their inputs from it.
func (e *env) provisionedCluster(name string) *world {
	e.t.Helper()
	w := e.newCluster(name, nil)
	e.writeState(w.TC, stateOf(1, clusterOutputs(), "h2:cluster-applied"))
	e.updateStatus(w.Cluster, func() {
		w.Cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	})
	return w
}

// updateStatus applies mut to a fresh copy of obj and writes its status.
func (e *env) updateStatus(obj client.Object, mut func()) {
	e.t.Helper()
	for range 5 {
		e.refresh(obj)
		mut()
		err := k8s.Status().Update(e.ctx, obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.t.Fatalf("update the status of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	e.t.Fatalf("update the status of %T %s: conflicts", obj, obj.GetName())
}

// bootstrapSecret creates a bootstrap data Secret as a bootstrap provider
// writes it.
func (e *env) bootstrapSecret(name string) string {
	e.t.Helper()
	e.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	})
	return name
}

// machineWorld is a Machine and the TerraformMachine it owns.
type machineWorld struct {
	Machine *clusterv1.Machine
	TM      *infrav1.TerraformMachine
}

// newMachine creates a Machine of w's Cluster with bootstrap data and the
// TerraformMachine it owns and references.
func (e *env) newMachine(w *world, name string, mut func(*infrav1.TerraformMachine)) *machineWorld {
	e.t.Helper()
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: w.Cluster.Name},
	}}
	m.Spec.ClusterName = w.Cluster.Name
	m.Spec.Bootstrap.DataSecretName = ptr.To(e.bootstrapSecret(name + "-bootstrap"))
	m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: name,
	}
	m.Spec.Version = "v1.34.1"
	e.create(m)
	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.ns, Name: name,
		Labels:          map[string]string{clusterv1.ClusterNameLabel: w.Cluster.Name},
		OwnerReferences: []metav1.OwnerReference{ownerRef(m, "Machine")},
	}}
	tm.Spec.Source.Image = moduleImage
	tm.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
	if mut != nil {
		mut(tm)
	}
	e.create(tm)
	return &machineWorld{Machine: m, TM: tm}
}

// poolWorld is a MachinePool and the TerraformMachinePool it owns.
type poolWorld struct {
	MachinePool *clusterv1.MachinePool
	TMP         *infrav1.TerraformMachinePool
}

// newPool creates a MachinePool of w's Cluster with replicas, bootstrap
// data, and the TerraformMachinePool it owns and references.
func (e *env) newPool(w *world, name string, replicas int32, mut func(*infrav1.TerraformMachinePool)) *poolWorld {
	e.t.Helper()
	mp := &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: w.Cluster.Name},
	}}
	mp.Spec.ClusterName = w.Cluster.Name
	mp.Spec.Replicas = ptr.To(replicas)
	mp.Spec.Template.Spec.ClusterName = w.Cluster.Name
	mp.Spec.Template.Spec.Version = "v1.34.1"
	mp.Spec.Template.Spec.Bootstrap.DataSecretName = ptr.To(e.bootstrapSecret(name + "-bootstrap"))
	mp.Spec.Template.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachinePool", Name: name,
	}
	e.create(mp)
	tmp := &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{
		Namespace: e.ns, Name: name,
		Labels:          map[string]string{clusterv1.ClusterNameLabel: w.Cluster.Name},
		OwnerReferences: []metav1.OwnerReference{ownerRef(mp, "MachinePool")},
	}}
	tmp.Spec.Source.Image = moduleImage
	tmp.Spec.IdentityRef = &infrav1.IdentityReference{Name: e.identity}
	if mut != nil {
		mut(tmp)
	}
	e.create(tmp)
	return &poolWorld{MachinePool: mp, TMP: tmp}
}

// ---- Jobs.

// jobsOf lists obj's Jobs, oldest first.
func (e *env) jobsOf(obj client.Object) []batchv1.Job {
	e.t.Helper()
	var list batchv1.JobList
	if err := k8s.List(e.ctx, &list, client.InNamespace(e.ns), client.MatchingLabels{
		infrav1.OwnerKindLabel: kindOf(obj), infrav1.OwnerNameLabel: owner.LabelValue(obj.GetName()),
	}); err != nil {
		e.t.Fatalf("list Jobs: %v", err)
	}
	slices.SortFunc(list.Items, func(a, b batchv1.Job) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return list.Items
}

func kindOf(obj client.Object) string {
	if w, ok := obj.(infrav1.Workload); ok {
		return string(w.GetWorkloadKind())
	}
	return fmt.Sprintf("%T", obj)
}

// activeJobs are obj's Jobs that have not finished.
func (e *env) activeJobs(obj client.Object) []batchv1.Job {
	e.t.Helper()
	var out []batchv1.Job
	for _, j := range e.jobsOf(obj) {
		if !jobs.IsFinished(&j) && j.DeletionTimestamp.IsZero() {
			out = append(out, j)
		}
	}
	return out
}

// wantJob asserts obj has exactly one unfinished Job, of operation op, and
// returns it.
func (e *env) wantJob(obj client.Object, op infrav1.Operation) *batchv1.Job {
	e.t.Helper()
	active := e.activeJobs(obj)
	if len(active) != 1 {
		e.t.Fatalf("want one running %s Job of %s, have %d: %v", op, obj.GetName(), len(active), jobNames(active))
	}
	j := &active[0]
	if got := j.Labels[infrav1.OpLabel]; got != string(op) {
		e.t.Fatalf("the running Job %s is a %s, want %s", j.Name, got, op)
	}
	prefix := "captf-" + shortKind(obj) + "-" + obj.GetName() + "-" + string(op) + "-a"
	if len(prefix) <= 57 && !strings.HasPrefix(j.Name, prefix) {
		e.t.Fatalf("Job name %s does not follow captf-<kindshort>-<name>-<operation>-a<attempt>-<hash>", j.Name)
	}
	return j
}

// wantNoJob asserts obj has no unfinished Job.
func (e *env) wantNoJob(obj client.Object) {
	e.t.Helper()
	if active := e.activeJobs(obj); len(active) != 0 {
		e.t.Fatalf("want no running Job of %s, have %v", obj.GetName(), jobNames(active))
	}
}

func jobNames(js []batchv1.Job) []string {
	out := make([]string, 0, len(js))
	for _, j := range js {
		out = append(out, j.Name+"("+j.Labels[infrav1.OpLabel]+")")
	}
	return out
}

func shortKind(obj client.Object) string {
	switch obj.(type) {
	case *infrav1.TerraformCluster:
		return "c"
	case *infrav1.TerraformMachine:
		return "m"
	}
	return "mp"
}

// jobEnd is how a Job the test finishes by hand ended.
type jobEnd string

const (
	// succeeded: Complete; the runner reported no error.
	succeeded jobEnd = "succeeded"
	// failed: Failed (BackoffLimitExceeded); the runner reported a failed
	// step.
	failed jobEnd = "failed"
	// deadline: Failed (DeadlineExceeded), the Job hit
	// activeDeadlineSeconds.
	deadline jobEnd = "deadline"
	// interrupted: Failed; the runner reported it was stopped from outside.
	interrupted jobEnd = "interrupted"
	// blocked: Failed; the runner stopped an apply before a destructive
	// plan.
	blocked jobEnd = "blocked"
)

// doc is the runner's result document for a Job of op that ended as end.
func doc(op infrav1.Operation, end jobEnd) *result.Document {
	d := &result.Document{
		Version: result.Version,
		Op:      op,
		Image:   result.Image{Ref: moduleImage},
		Runtime: result.Runtime{Command: []string{contract.RuntimePath}, Version: "1.10.6"},
		Steps:   []result.Step{{Name: "init", Exit: 0, Seconds: 1.5}},
	}
	step := string(op)
	if op == infrav1.OperationDrift || op == infrav1.OperationRefresh {
		step = "plan"
	}
	switch end {
	case succeeded:
		d.Steps = append(d.Steps, result.Step{Name: step, Exit: 0, Seconds: 4})
		if op == infrav1.OperationDrift {
			d.Drift = &result.Drift{}
		}
	case failed, deadline:
		d.Steps = append(d.Steps, result.Step{Name: step, Exit: 1, Seconds: 4})
		d.Error = &result.Error{Kind: infrav1.RunErrorStep, Step: result.StepName(step), Tail: "Error: the provider refused the request"}
	case interrupted:
		d.Steps = append(d.Steps, result.Step{Name: step, Exit: -1, Seconds: 4})
		d.Error = &result.Error{Kind: infrav1.RunErrorInterrupted, Step: result.StepName(step), Tail: "stopped by SIGTERM"}
	case blocked:
		d.Steps = append(d.Steps, result.Step{Name: "plan", Exit: 2, Seconds: 4})
		d.Error = &result.Error{Kind: infrav1.RunErrorBlocked, Step: result.StepName("plan"), Tail: "the plan deletes or replaces resources"}
		d.Plan = &result.Plan{Hash: "p1:blocked", Destroy: 1, Resources: []string{"module.role.terraform_data.one (delete)"}}
	}
	return d
}

// driftDoc is a drift Job's result document that found drift.
func driftDoc() *result.Document {
	d := doc(infrav1.OperationDrift, succeeded)
	d.Drift = &result.Drift{Detected: true, Change: 1, Resources: []string{"module.role.terraform_data.one"}}
	return d
}

// finishJob finishes the Job by hand, as the Job controller and the
// kubelet would: its runner pod's source container terminates with the
// result document (nil: the default for end) as its termination message,
// then the Job's status gets its terminal conditions and times. The Job
// finishes at the test's clock.
func (e *env) finishJob(job *batchv1.Job, end jobEnd, d *result.Document) {
	e.t.Helper()
	if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(job), job); err != nil {
		e.t.Fatalf("read Job %s: %v", job.Name, err)
	}
	op := infrav1.Operation(job.Labels[infrav1.OpLabel])
	if d == nil {
		d = doc(op, end)
	}
	msg, err := result.Marshal(d)
	if err != nil {
		e.t.Fatal(err)
	}
	e.finishJobMessage(job, end, string(msg))
}

// finishJobMessage finishes the Job as finishJob does, with msg as the
// source container's termination message verbatim (a document the runner
// would not have written, or no document at all).
func (e *env) finishJobMessage(job *batchv1.Job, end jobEnd, msg string) {
	e.t.Helper()
	if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(job), job); err != nil {
		e.t.Fatalf("read Job %s: %v", job.Name, err)
	}
	now := metav1.NewTime(e.clock())
	start := metav1.NewTime(now.Add(-20 * time.Second))
	exit := int32(0)
	if end != succeeded {
		exit = 1
	}
	e.runnerPod(job, &corev1.ContainerStateTerminated{
		ExitCode: exit, Message: msg, StartedAt: start, FinishedAt: now, Reason: map[bool]string{true: "Completed", false: "Error"}[exit == 0],
	})

	job.Status.StartTime = &start
	job.Status.Active = 0
	job.Status.Ready = ptr.To[int32](0)
	switch end {
	case succeeded:
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now})
	default:
		reason := batchv1.JobReasonBackoffLimitExceeded
		if end == deadline {
			reason = batchv1.JobReasonDeadlineExceeded
		}
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now})
	}
	if err := k8s.Status().Update(e.ctx, job); err != nil {
		e.t.Fatalf("finish Job %s: %v", job.Name, err)
	}
}

// runnerPod creates the Job's pod from its template, with the source
// container in the given terminated state (and the runner init container
// done), as the kubelet reports it.
func (e *env) runnerPod(job *batchv1.Job, term *corev1.ContainerStateTerminated) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: job.Namespace, Name: job.Name + "-runner",
		Labels:      map[string]string{},
		Annotations: job.Spec.Template.Annotations,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true),
		}},
	}}
	for k, v := range job.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[batchv1.JobNameLabel] = job.Name
	pod.Labels[batchv1.ControllerUidLabel] = string(job.UID)
	pod.Spec = *job.Spec.Template.Spec.DeepCopy()
	pod.Spec.NodeName = "captf-test-node"
	e.create(pod)
	pod.Status.Phase = corev1.PodSucceeded
	if term.ExitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	for _, c := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: false,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: term.StartedAt, FinishedAt: term.StartedAt,
			}},
		})
	}
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: false}
		if c.Name == jobs.SourceContainer {
			cs.ImageID = moduleImageRepo() + "@" + imageDigest
			cs.State.Terminated = term
		} else {
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: term.StartedAt, FinishedAt: term.FinishedAt}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, cs)
	}
	if err := k8s.Status().Update(e.ctx, pod); err != nil {
		e.t.Fatalf("report the status of pod %s: %v", pod.Name, err)
	}
	return pod
}

func moduleImageRepo() string { return strings.SplitN(moduleImage, ":v", 2)[0] }

// ---- State, as the kubernetes backend writes it.

// tfstate is a state v4 file with the fields CAPTF reads.
type tfstate struct {
	Version          int                 `json:"version"`
	TerraformVersion string              `json:"terraform_version"`
	Serial           uint64              `json:"serial"`
	Lineage          string              `json:"lineage"`
	Outputs          map[string]tfOutput `json:"outputs"`
	Resources        []map[string]any    `json:"resources"`
	CheckResults     any                 `json:"check_results"`
	// inputsHash is the captf.io/inputs-hash annotation of the base Secret
	// ("" for none).
	inputsHash string
}

type tfOutput struct {
	Value any `json:"value"`
	Type  any `json:"type"`
}

// stateOf is a state of serial with the outputs (name → value) and one
// managed resource; inputsHash ("" for none) is what a successful apply's
// adoption records on the base Secret.
func stateOf(serial uint64, outputs map[string]any, inputsHash string) *tfstate {
	s := &tfstate{
		Version: 4, TerraformVersion: "1.10.6", Serial: serial, Lineage: "5f1c8a0e-0000-4000-8000-00000000c4f7",
		Outputs: map[string]tfOutput{}, inputsHash: inputsHash,
		Resources: []map[string]any{{
			"module": "module.role", "mode": "managed", "type": "terraform_data", "name": "one",
			"provider":  `provider["terraform.io/builtin/terraform"]`,
			"instances": []any{map[string]any{"schema_version": 0, "attributes": map[string]any{"id": "one"}}},
		}},
	}
	for k, v := range outputs {
		s.Outputs[k] = tfOutput{Value: v, Type: "dynamic"}
	}
	return s
}

// clusterOutputs are a healthy cluster role's outputs.
func clusterOutputs() map[string]any {
	return map[string]any{
		"control_plane_endpoint": map[string]any{"host": "10.0.0.10", "port": 6443},
		"failure_domains":        []any{map[string]any{"name": "fd-a", "control_plane": true}},
		"exports":                map[string]any{"network": "net-1"},
		"health":                 map[string]any{"state": "running", "healthy": true},
	}
}

// machineOutputs are a machine role's outputs with the health state.
func machineOutputs(health string, healthy bool) map[string]any {
	return map[string]any{
		"provider_id":    "captf://test/instance-1",
		"addresses":      []any{map[string]any{"type": "InternalIP", "address": "10.0.1.5"}},
		"failure_domain": nil,
		"interruptible":  false,
		"health":         map[string]any{"state": health, "healthy": healthy},
	}
}

// poolOutputs are a machinepool role's outputs with replicas instances.
func poolOutputs(replicas int) map[string]any {
	ids := []any{}
	inst := []any{}
	for i := range replicas {
		id := fmt.Sprintf("captf://test/pool-%d", i)
		ids = append(ids, id)
		inst = append(inst, map[string]any{"provider_id": id, "instance_id": fmt.Sprintf("i-%d", i), "state": "running"})
	}
	return map[string]any{
		"provider_id":      "captf://test/pool",
		"provider_id_list": ids,
		"replicas":         replicas,
		"instances":        inst,
		"health":           map[string]any{"state": "running", "healthy": true},
	}
}

// suffixOf is obj's state secret_suffix.
func (e *env) suffixOf(obj client.Object) string {
	e.t.Helper()
	s, err := state.Suffix(obj.GetNamespace(), infrav1.WorkloadKind(kindOf(obj)), obj.GetName())
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// writeState writes obj's state as the kubernetes backend does: one Secret
// tfstate-default-<suffix>, gzip, the backend's labels and CAPTF's owner
// labels (passed to the backend as labels=). An existing state is
// replaced.
func (e *env) writeState(obj client.Object, st *tfstate) {
	e.t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		e.t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	suffix := e.suffixOf(obj)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: obj.GetNamespace(), Name: state.SecretName(suffix),
		Labels: map[string]string{
			state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix, state.BackendWorkspaceLabel: state.Workspace,
			state.BackendManagedByLabel: "terraform",
			infrav1.ManagedLabel:        "true", infrav1.OwnerKindLabel: kindOf(obj), infrav1.OwnerNameLabel: owner.LabelValue(obj.GetName()),
			infrav1.MoveLabel: "",
		},
		Annotations: map[string]string{"encoding": "gzip"},
	}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{state.DataKey: buf.Bytes()}}
	if st.inputsHash != "" {
		s.Annotations[infrav1.InputsHashAnnotation] = st.inputsHash
	}
	if name := obj.GetLabels()[clusterv1.ClusterNameLabel]; name != "" {
		s.Labels[clusterv1.ClusterNameLabel] = name
	}
	_ = k8s.Delete(e.ctx, s.DeepCopy())
	e.create(s)
}

// neverWrittenState leaves obj's base state Secret as the backend creates
// it before it writes the first state into it: its labels, no data.
func (e *env) neverWrittenState(obj client.Object) {
	e.t.Helper()
	e.writeState(obj, stateOf(0, nil, ""))
	s := e.stateSecret(obj)
	s.Data = nil
	if err := k8s.Update(e.ctx, s); err != nil {
		e.t.Fatal(err)
	}
}

// holdLock makes obj's state lock Lease held under id by runner pod pod,
// with the backend's lock info, as the runtime leaves it when killed.
func (e *env) holdLock(obj client.Object, id, pod, operation string) {
	e.t.Helper()
	suffix := e.suffixOf(obj)
	info := fmt.Sprintf(`{"ID":%q,"Operation":%q,"Info":"","Who":"root@%s","Version":"1.12.6","Created":"2026-01-01T00:00:00Z","Path":""}`, id, operation, pod)
	e.create(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.GetNamespace(), Name: state.LockLeaseName(suffix),
			Labels: map[string]string{
				state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix, state.BackendWorkspaceLabel: state.Workspace,
				infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kindOf(obj), infrav1.OwnerNameLabel: owner.LabelValue(obj.GetName()),
			},
			Annotations: map[string]string{state.LockInfoAnnotation: info},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id)},
	})
}

// lock reads obj's state lock.
func (e *env) lock(obj client.Object) state.Lock {
	e.t.Helper()
	l, err := state.ReadLock(e.ctx, k8s, obj.GetNamespace(), e.suffixOf(obj))
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// runnerArgs are the runner container's arguments of a Job.
func runnerArgs(job *batchv1.Job) []string {
	for _, c := range job.Spec.Template.Spec.Containers {
		if len(c.Args) > 0 {
			return c.Args
		}
	}
	return nil
}

// deleteState removes obj's state Secrets, as an operator's mistake would.
func (e *env) deleteState(obj client.Object) {
	e.t.Helper()
	if err := k8s.DeleteAllOf(e.ctx, &corev1.Secret{}, client.InNamespace(e.ns),
		client.MatchingLabels{state.BackendStateLabel: "true", state.BackendSuffixLabel: e.suffixOf(obj)}); err != nil {
		e.t.Fatalf("delete state: %v", err)
	}
}

// stateSecret reads obj's base state Secret (nil when missing).
func (e *env) stateSecret(obj client.Object) *corev1.Secret {
	e.t.Helper()
	return e.secret(state.SecretName(e.suffixOf(obj)))
}

// durable reads obj's durable inputs Secret (nil when missing).
func (e *env) durable(obj client.Object) *corev1.Secret {
	e.t.Helper()
	return e.secret("captf-inputs-" + shortKind(obj) + "-" + obj.GetName())
}

// secretsWithPrefix lists the namespace's Secrets whose name starts with
// prefix.
func (e *env) secretsWithPrefix(prefix string) []corev1.Secret {
	e.t.Helper()
	var list corev1.SecretList
	if err := k8s.List(e.ctx, &list, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	var out []corev1.Secret
	for _, s := range list.Items {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func (e *env) secret(name string) *corev1.Secret {
	e.t.Helper()
	s := &corev1.Secret{}
	err := k8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		e.t.Fatalf("read Secret %s: %v", name, err)
	}
	return s
}

// ---- Assertions.

// conditionOf returns obj's condition of type t (nil when unset).
func conditionOf(obj client.Object, t string) *metav1.Condition {
	w, ok := obj.(infrav1.Workload)
	if !ok {
		return nil
	}
	return meta.FindStatusCondition(w.GetWorkspaceStatus().Conditions, t)
}

// wantCondition asserts obj (as last read) carries condition t with the
// status and reason.
func (e *env) wantCondition(obj client.Object, t string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	e.t.Helper()
	c := conditionOf(obj, t)
	switch {
	case c == nil:
		e.t.Fatalf("%s %s has no %s condition; want %s/%s", kindOf(obj), obj.GetName(), t, status, reason)
	case c.Status != status || c.Reason != reason:
		e.t.Fatalf("%s %s: %s is %s/%s (%q); want %s/%s", kindOf(obj), obj.GetName(), t, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

// event is one event the flow emitted.
type event struct {
	Object string // <kind>/<name>
	Type   string
	Reason string
	Note   string
}

// recorder is an events.EventRecorder keeping every event in memory.
type recorder struct {
	mu     sync.Mutex
	events []event
}

var _ events.EventRecorder = &recorder{}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = kindOf(o) + "/" + o.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{Object: name, Type: eventtype, Reason: reason, Note: fmt.Sprintf(note, args...)})
}

// of lists obj's events, oldest first.
func (r *recorder) of(obj client.Object) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, ev := range r.events {
		if ev.Object == kindOf(obj)+"/"+obj.GetName() {
			out = append(out, ev)
		}
	}
	return out
}

// mark is a position in obj's events, for events since.
func (e *env) mark(obj client.Object) int { return len(e.rec.of(obj)) }

// eventsSince lists obj's events since mark.
func (e *env) eventsSince(obj client.Object, mark int) []event {
	all := e.rec.of(obj)
	if mark > len(all) {
		mark = len(all)
	}
	return all[mark:]
}

// wantEvent asserts obj got an event of reason (and type) since mark.
func (e *env) wantEvent(obj client.Object, mark int, eventtype, reason string) event {
	e.t.Helper()
	evs := e.eventsSince(obj, mark)
	for _, ev := range evs {
		if ev.Reason == reason {
			if ev.Type != eventtype {
				e.t.Fatalf("event %s of %s is %s, want %s", reason, obj.GetName(), ev.Type, eventtype)
			}
			return ev
		}
	}
	e.t.Fatalf("no %s event on %s %s; got %s", reason, kindOf(obj), obj.GetName(), reasons(evs))
	return event{}
}

// eventsOf lists obj's events of reason since mark.
func (e *env) eventsOf(obj client.Object, mark int, reason string) []event {
	var out []event
	for _, ev := range e.eventsSince(obj, mark) {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// wantNoEvent asserts obj got no event of reason since mark.
func (e *env) wantNoEvent(obj client.Object, mark int, reason string) {
	e.t.Helper()
	for _, ev := range e.eventsSince(obj, mark) {
		if ev.Reason == reason {
			e.t.Fatalf("unexpected %s event on %s: %s", reason, obj.GetName(), ev.Note)
		}
	}
}

func reasons(evs []event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Reason)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// hasFinalizer reports whether obj (as last read) carries f.
func hasFinalizer(obj client.Object, f string) bool { return slices.Contains(obj.GetFinalizers(), f) }

// status is obj's shared status.
func status(obj client.Object) *infrav1.WorkspaceStatus {
	return obj.(infrav1.Workload).GetWorkspaceStatus()
}

// provisioned reports obj's latched status.initialization.provisioned.
func provisioned(obj client.Object) bool {
	s := status(obj)
	return s.Initialization != nil && s.Initialization.Provisioned != nil && *s.Initialization.Provisioned
}

// startApply runs the two passes that start obj's apply (for a new object,
// the finalizer pass and the pass that creates the Job) and returns the
// apply Job, failing the test when there is none.
func (e *env) startApply(obj client.Object) *batchv1.Job {
	e.t.Helper()
	e.mustPass(obj)
	e.mustPass(obj)
	return e.wantJob(obj, infrav1.OperationApply)
}

// applyingCluster is a new environment with a new TerraformCluster prod
// whose apply startApply has just started: the environment, the cluster's
// objects and the apply Job.
func applyingCluster(t *testing.T) (*env, *world, *batchv1.Job) {
	t.Helper()
	e := newEnv(t)
	w := e.newCluster("prod", nil)
	return e, w, e.startApply(w.TC)
}

// reapplyingCluster is a new environment with a provisioned
// TerraformCluster prod whose spec.variables changed (largeVariables), and
// the apply of those new inputs that a pass a minute later started: the
// environment, the cluster's objects and the apply Job.
func reapplyingCluster(t *testing.T) (*env, *world, *batchv1.Job) {
	t.Helper()
	e := newEnv(t)
	w := e.provisionedTC("prod", nil)
	e.update(w.TC, func() { w.TC.Spec.Variables = largeVariables() })
	e.advance(time.Minute)
	e.mustPass(w.TC)
	return e, w, e.wantJob(w.TC, infrav1.OperationApply)
}

// bringUp runs obj from creation through its first successful apply: the
// finalizer pass, the pass that starts the apply, the apply finishing with
// the state st written by it, and the pass that reads it. It returns the
// apply Job.
func (e *env) bringUp(obj client.Object, st *tfstate) *batchv1.Job {
	e.t.Helper()
	job := e.startApply(obj)
	e.advance(30 * time.Second)
	e.writeState(obj, st)
	e.finishJob(job, succeeded, nil)
	e.mustPass(obj)
	return job
}

// largeVariables is a spec.variables change: new inputs for a mutable kind.
func largeVariables() map[string]apiextensionsv1.JSON {
	return map[string]apiextensionsv1.JSON{"size": {Raw: []byte(`"large"`)}}
}

// jsonString is a string as a spec.variables value.
func jsonString(s string) apiextensionsv1.JSON {
	b, _ := json.Marshal(s)
	return apiextensionsv1.JSON{Raw: b}
}
