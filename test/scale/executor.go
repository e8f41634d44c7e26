package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// simNode is the node name the executor's pods report.
const simNode = "captf-scale-node"

// moduleDigest is the digest the executor's pods report for the module
// image.
const moduleDigest = "sha256:5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1e5ca1"

// Executor finishes CAPTF's Jobs as the Job controller, the kubelet and a
// successful runner would, after Delay.
type Executor struct {
	Client  kubernetes.Interface
	Delay   time.Duration
	Workers int

	queue workqueue.TypedDelayingInterface[string]

	mu sync.Mutex
	// active is each owner's unfinished Job (owner key → Job name).
	active map[string]string
	// seen are the Jobs queued once (namespace/name).
	seen map[string]bool
	// applies counts each owner's apply Jobs.
	applies map[string]int
	// serials is each state suffix's last written serial.
	serials map[string]uint64
	// duplicates lists the Jobs created while their owner had another one
	// running.
	duplicates []string
	// byOp counts finished Jobs per operation.
	byOp map[string]int

	finished atomic.Int64
	failures atomic.Int64
	lastErr  atomic.Value

	// reactions, when set, gets the moment each TerraformMachine Job was
	// finished and each new TerraformMachine Job was first seen.
	reactions *reactionLog
}

// ExecutorStats is what the executor saw.
type ExecutorStats struct {
	Finished   int64
	Failures   int64
	LastError  string
	Duplicates []string
	ByOp       map[string]int
	// MultiApply lists owners that ran more than one apply Job.
	MultiApply []string
}

// Stats returns a snapshot of the counters.
func (x *Executor) Stats() ExecutorStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := ExecutorStats{Finished: x.finished.Load(), Failures: x.failures.Load(), Duplicates: append([]string(nil), x.duplicates...), ByOp: map[string]int{}}
	for k, v := range x.byOp {
		s.ByOp[k] = v
	}
	for k, n := range x.applies {
		if n > 1 {
			s.MultiApply = append(s.MultiApply, fmt.Sprintf("%s(%d)", k, n))
		}
	}
	if e, ok := x.lastErr.Load().(string); ok {
		s.LastError = e
	}
	return s
}

// Run watches Jobs labeled captf.io/managed=true and finishes each until
// ctx ends. It returns once its watch has synced.
func (x *Executor) Run(ctx context.Context) error {
	x.active, x.seen, x.applies, x.serials, x.byOp = map[string]string{}, map[string]bool{}, map[string]int{}, map[string]uint64{}, map[string]int{}
	x.queue = workqueue.NewTypedDelayingQueue[string]()
	factory := informers.NewSharedInformerFactoryWithOptions(x.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{infrav1.ManagedLabel: "true"}.String()
		}))
	inf := factory.Batch().V1().Jobs().Informer()
	onJob := func(obj any) {
		j, ok := obj.(*batchv1.Job)
		if !ok || jobs.IsFinished(j) || j.DeletionTimestamp != nil {
			return
		}
		key := j.Namespace + "/" + j.Name
		owner := ownerKey(j)
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.seen[key] {
			return
		}
		x.seen[key] = true
		if m, ok := fleetMachine(j); ok {
			x.reactions.stepSeen(m, time.Now())
		}
		if other, ok := x.active[owner]; ok && other != j.Name {
			x.duplicates = append(x.duplicates, fmt.Sprintf("%s: %s while %s runs", owner, j.Name, other))
		}
		x.active[owner] = j.Name
		if j.Labels[infrav1.OpLabel] == string(infrav1.OperationApply) {
			x.applies[owner]++
		}
		x.queue.AddAfter(key, x.Delay)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onJob,
		UpdateFunc: func(_, obj any) { onJob(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the executor's Job watch did not sync")
	}
	lister := factory.Batch().V1().Jobs().Lister()
	for range max(x.Workers, 1) {
		go func() {
			for {
				key, quit := x.queue.Get()
				if quit {
					return
				}
				ns, name, _ := strings.Cut(key, "/")
				j, err := lister.Jobs(ns).Get(name)
				if err == nil {
					err = x.finish(ctx, j.DeepCopy())
				}
				if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
					x.failures.Add(1)
					x.lastErr.Store(err.Error())
					x.queue.AddAfter(key, time.Second)
				}
				x.queue.Done(key)
			}
		}()
	}
	go func() { <-ctx.Done(); x.queue.ShutDown() }()
	return nil
}

// fleetMachine is the namespace/name of the fleet's TerraformMachine that
// owns j; false for other owners (the TerraformCluster, the hostile
// tenant's machine).
func fleetMachine(j *batchv1.Job) (string, bool) {
	name := j.Labels[infrav1.OwnerNameLabel]
	if infrav1.WorkloadKind(j.Labels[infrav1.OwnerKindLabel]) != infrav1.KindTerraformMachine || name == "" || name == BombMachine {
		return "", false
	}
	return j.Namespace + "/" + name, true
}

func ownerKey(j *batchv1.Job) string {
	return j.Namespace + "/" + j.Labels[infrav1.OwnerKindLabel] + "/" + j.Labels[infrav1.OwnerNameLabel]
}

// finish plays one Job out: state, pod, Job status.
func (x *Executor) finish(ctx context.Context, j *batchv1.Job) error {
	if jobs.IsFinished(j) {
		return nil
	}
	op := infrav1.Operation(j.Labels[infrav1.OpLabel])
	kind := infrav1.WorkloadKind(j.Labels[infrav1.OwnerKindLabel])
	name := j.Labels[infrav1.OwnerNameLabel]
	suffix, err := state.Suffix(j.Namespace, kind, name)
	if err != nil {
		return err
	}
	start := metav1.NewTime(time.Now().Add(-x.Delay).Truncate(time.Second))
	doc := &result.Document{
		Version: result.Version, Op: op,
		Image:   result.Image{Ref: sourceImage(j)},
		Runtime: result.Runtime{Command: []string{contract.RuntimePath}, Version: "1.10.6"},
		Steps:   []result.Step{{Name: "init", Seconds: 0.5}},
	}
	switch op {
	case infrav1.OperationApply, infrav1.OperationRefresh, infrav1.OperationRestore:
		if err := x.writeState(ctx, j, kind, name, suffix); err != nil {
			return err
		}
		doc.Steps = append(doc.Steps, result.Step{Name: stepOf(op), Seconds: x.Delay.Seconds()})
		if op == infrav1.OperationApply {
			doc.Changes = &result.Changes{Add: 1}
		}
	case infrav1.OperationDestroy:
		if err := x.Client.CoreV1().Secrets(j.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
			LabelSelector: labels.Set{state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix}.String(),
		}); err != nil {
			return fmt.Errorf("failed to delete the state of %s: %w", suffix, err)
		}
		doc.Steps = append(doc.Steps, result.Step{Name: "destroy", Seconds: x.Delay.Seconds()})
	default: // drift, plan: a plan that finds nothing
		doc.Steps = append(doc.Steps, result.Step{Name: "plan", Seconds: x.Delay.Seconds()})
		if op == infrav1.OperationDrift {
			doc.Drift = &result.Drift{}
		}
		if op == infrav1.OperationPlan {
			doc.Plan = &result.Plan{Hash: "p1:scale"}
		}
	}
	msg, err := result.Marshal(doc)
	if err != nil {
		return err
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if err := x.pod(ctx, j, string(msg), start, now); err != nil {
		return err
	}
	j.Status.StartTime = &start
	j.Status.Active = 0
	j.Status.Ready = ptr.To[int32](0)
	j.Status.Succeeded = 1
	j.Status.CompletionTime = &now
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now},
		batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now})
	// The finished moment is when the status write that succeeded was
	// sent: the manager cannot see the Job finished before it.
	sent := time.Now()
	if _, err := x.Client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			fresh, gerr := x.Client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			fresh.Status = j.Status
			sent = time.Now()
			_, err = x.Client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("failed to finish Job %s: %w", j.Name, err)
		}
	}
	if m, ok := fleetMachine(j); ok {
		x.reactions.finished(m, sent)
	}
	x.mu.Lock()
	if x.active[ownerKey(j)] == j.Name {
		delete(x.active, ownerKey(j))
	}
	x.byOp[string(op)]++
	x.mu.Unlock()
	x.finished.Add(1)
	return nil
}

func stepOf(op infrav1.Operation) string {
	if op == infrav1.OperationRefresh {
		return "plan"
	}
	return string(op)
}

func sourceImage(j *batchv1.Job) string {
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name == jobs.SourceContainer {
			return c.Image
		}
	}
	return ""
}

// outputsFor are the healthy outputs of the role a kind plays.
func outputsFor(kind infrav1.WorkloadKind, ns, name string) map[string]any {
	health := map[string]any{"state": "running", "healthy": true}
	switch kind {
	case infrav1.KindTerraformCluster:
		return map[string]any{
			"control_plane_endpoint": map[string]any{"host": "10.0.0.10", "port": 6443},
			"failure_domains":        []any{map[string]any{"name": "fd-a", "control_plane": true}},
			"exports":                map[string]any{"network": "net-1", "subnets": []any{"subnet-a", "subnet-b", "subnet-c"}},
			"health":                 health,
		}
	default:
		return map[string]any{
			"provider_id":    "captf-scale://" + ns + "/" + name,
			"addresses":      []any{map[string]any{"type": "InternalIP", "address": "10.0.1.5"}},
			"failure_domain": nil,
			"interruptible":  false,
			"health":         health,
		}
	}
}

// writeState writes the owner's next state serial with its role's outputs
// and one managed resource, as the runner's backend would.
func (x *Executor) writeState(ctx context.Context, j *batchv1.Job, kind infrav1.WorkloadKind, name, suffix string) error {
	x.mu.Lock()
	x.serials[suffix]++
	serial := x.serials[suffix]
	x.mu.Unlock()
	outputs := map[string]any{}
	for k, v := range outputsFor(kind, j.Namespace, name) {
		outputs[k] = map[string]any{"value": v, "type": "dynamic"}
	}
	if name == BombMachine {
		outputs["inventory"] = map[string]any{"value": bombOutput(), "type": "string"}
	}
	raw, err := json.Marshal(map[string]any{
		"version": 4, "terraform_version": "1.10.6", "serial": serial, "lineage": "5ca1e000-0000-4000-8000-" + suffix[:12],
		"outputs": outputs,
		"resources": []any{map[string]any{
			"module": "module.role", "mode": "managed", "type": "terraform_data", "name": "instance",
			"provider":  `provider["terraform.io/builtin/terraform"]`,
			"instances": []any{map[string]any{"schema_version": 0, "attributes": map[string]any{"id": name}}},
		}},
		"check_results": nil,
	})
	if err != nil {
		return err
	}
	l := map[string]string{
		infrav1.OwnerKindLabel: string(kind), infrav1.OwnerNameLabel: name, infrav1.ManagedLabel: "true", infrav1.MoveLabel: "",
	}
	if c := j.Labels[clusterv1.ClusterNameLabel]; c != "" {
		l[clusterv1.ClusterNameLabel] = c
	}
	secrets, err := state.Encode(j.Namespace, suffix, raw, l, 0)
	if err != nil {
		return err
	}
	sc := x.Client.CoreV1().Secrets(j.Namespace)
	for i := range secrets {
		s := &secrets[i]
		_, err := sc.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cur, gerr := sc.Get(ctx, s.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			// The backend rewrites the data and keeps what others added
			// (CAPTF's adoption annotations and owner references).
			cur.Data = s.Data
			for k, v := range s.Labels {
				cur.Labels[k] = v
			}
			_, err = sc.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("failed to write state Secret %s: %w", s.Name, err)
		}
	}
	return nil
}

// pod creates the Job's pod from its template and reports it terminated:
// init container and source container done, the source container's
// termination message the result document.
func (x *Executor) pod(ctx context.Context, j *batchv1.Job, msg string, start, end metav1.Time) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: j.Namespace, Name: j.Name + "-" + rand.String(5),
		Labels:      map[string]string{},
		Annotations: j.Spec.Template.Annotations,
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	for k, v := range j.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[batchv1.JobNameLabel] = j.Name
	pod.Labels[batchv1.ControllerUidLabel] = string(j.UID)
	pod.Spec = *j.Spec.Template.Spec.DeepCopy()
	pod.Spec.NodeName = simNode
	created, err := x.Client.CoreV1().Pods(j.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("failed to create the pod of Job %s: %w", j.Name, err)
	}
	created.Status.Phase = corev1.PodSucceeded
	created.Status.StartTime = &start
	for _, c := range created.Spec.InitContainers {
		created.Status.InitContainerStatuses = append(created.Status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: start}},
		})
	}
	for _, c := range created.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: end}}}
		if c.Name == jobs.SourceContainer {
			repo, _, _ := strings.Cut(c.Image, "@")
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			cs.ImageID = repo + "@" + moduleDigest
			cs.State.Terminated.Message = msg
		}
		created.Status.ContainerStatuses = append(created.Status.ContainerStatuses, cs)
	}
	if _, err := x.Client.CoreV1().Pods(j.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to report the pod of Job %s: %w", j.Name, err)
	}
	return nil
}
