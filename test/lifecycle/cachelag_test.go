package lifecycle

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// TestStateCacheBehindTheJob checks that the pass that reads a succeeded
// apply's result while the manager's cache already shows the finished Job
// but not yet the state Secrets it wrote (the Job's watch and the Secrets'
// watch are not in step) neither applies the machine a second time nor
// takes its state for lost (The Reconcile Lifecycle, "at most one Job per
// object"; Terraform State: lost state is decided from live reads). The
// cache's lag is played by a client whose Secret lists leave the machine's
// state Secrets out and whose durable inputs Secret is the copy from before the
// pass's own digest pin.
func TestStateCacheBehindTheJob(t *testing.T) {
	t.Parallel()
	d := doc(infrav1.OperationApply, succeeded)
	e, mw, job := appliedMachine(t, "prod", d)

	before := e.durable(mw.TM).DeepCopy()
	e.refresh(mw.TM)
	suffix := mw.TM.Status.StateSecretSuffix
	if suffix == "" {
		t.Fatal("the machine's status names no state Secret suffix")
	}
	f := e.flowFor(mw.TM)
	f.Client = interceptor.NewClient(k8s.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if sl, ok := list.(*corev1.SecretList); ok {
				kept := sl.Items[:0]
				for _, s := range sl.Items {
					if s.Labels[state.BackendSuffixLabel] != suffix {
						kept = append(kept, s)
					}
				}
				sl.Items = kept
			}
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if s, ok := obj.(*corev1.Secret); ok && key.Name == before.Name && key.Namespace == before.Namespace {
				before.DeepCopyInto(s)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	if _, err := f.Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(mw.TM)}); err != nil {
		t.Fatalf("pass: %v", err)
	}
	e.refresh(mw.TM)
	var applies []string
	for _, j := range e.jobsOf(mw.TM) {
		if j.Labels[infrav1.OpLabel] == string(infrav1.OperationApply) {
			applies = append(applies, j.Name)
		}
	}
	if len(applies) != 1 {
		t.Errorf("apply Jobs = %v, want only %s: the pass applied the machine again on a state the cache did not show yet", applies, job.Name)
	}
	if c := conditionOf(mw.TM, infrav1.StateReadableCondition); c != nil && c.Status == metav1.ConditionFalse {
		t.Errorf("StateReadable = %s/%s: %s, want the state read", c.Status, c.Reason, c.Message)
	}
}

// TestPodCacheBehindTheJob checks that the pass that books a finished Job
// while the manager's cache shows the Job finished but its pod still
// running (the pods' watch behind the Jobs') books what the runner
// reported, read from the live pod: the steps and the runtime version of
// status.lastRun and status.source, not an empty result. The cache's lag
// is played by a client whose pod lists show the source container running.
func TestPodCacheBehindTheJob(t *testing.T) {
	t.Parallel()
	d := doc(infrav1.OperationApply, succeeded)
	if len(d.Steps) == 0 || d.Runtime.Version == "" {
		t.Fatalf("the apply document reports no steps or runtime version: %+v", d)
	}
	e, mw, job := appliedMachine(t, "lagpod", d)

	f := e.flowFor(mw.TM)
	f.Client = interceptor.NewClient(k8s.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if pl, ok := list.(*corev1.PodList); ok {
				for i := range pl.Items {
					for j := range pl.Items[i].Status.ContainerStatuses {
						cs := &pl.Items[i].Status.ContainerStatuses[j]
						cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
						cs.LastTerminationState = corev1.ContainerState{}
					}
					pl.Items[i].Status.Phase = corev1.PodRunning
				}
			}
			return nil
		},
	})
	if _, err := f.Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(mw.TM)}); err != nil {
		t.Fatalf("pass: %v", err)
	}
	e.refresh(mw.TM)
	lr := mw.TM.Status.LastRun
	if lr == nil || lr.Job != job.Name {
		t.Fatalf("status.lastRun = %+v, want Job %s booked", lr, job.Name)
	}
	if len(lr.Steps) != len(d.Steps) {
		t.Errorf("status.lastRun has %d steps, want the %d the runner reported", len(lr.Steps), len(d.Steps))
	}
	if src := mw.TM.Status.Source; src == nil || src.RuntimeVersion != d.Runtime.Version {
		t.Errorf("status.source = %+v, want runtimeVersion %q", src, d.Runtime.Version)
	}
}

// appliedMachine is a machine of cluster name whose first apply Job
// succeeded with document d, its state written: the cache-lag scenarios
// start from the pass that books it.
func appliedMachine(t *testing.T, name string, d *result.Document) (*env, *machineWorld, *batchv1.Job) {
	e := newEnv(t)
	w := e.provisionedCluster(name)
	mw := e.newMachine(w, name+"-md-0", nil)
	job := e.startApply(mw.TM)
	e.advance(30 * time.Second)
	e.writeState(mw.TM, stateOf(1, machineOutputs("running", true), ""))
	e.finishJob(job, succeeded, d)
	return e, mw, job
}

// TestJobCacheBehindTheMark checks that a pass that books again a Job the
// manager's cache does not yet show marked bookkept (the mark written by
// the pass before, the Jobs' watch behind it) writes nothing that changes
// nothing: no second JobSucceeded event, and no patch of the Job that is
// marked already (The Reconcile Lifecycle: bookkeeping is idempotent). The
// cache's lag is played by a client whose Job lists leave the mark out.
func TestJobCacheBehindTheMark(t *testing.T) {
	t.Parallel()
	e, mw, job := appliedMachine(t, "lagmark", doc(infrav1.OperationApply, succeeded))
	e.mustPass(mw.TM)
	e.refresh(job)
	if job.Annotations[infrav1.BookkeptAnnotation] != "true" {
		t.Fatal("the first pass did not mark the Job bookkept")
	}
	m := e.mark(mw.TM)
	var patched []string
	f := e.flowFor(mw.TM)
	f.Client = interceptor.NewClient(k8s.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if jl, ok := list.(*batchv1.JobList); ok {
				for i := range jl.Items {
					delete(jl.Items[i].Annotations, infrav1.BookkeptAnnotation)
				}
			}
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				data, _ := patch.Data(obj)
				patched = append(patched, obj.GetName()+" "+string(data))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	if _, err := f.Reconcile(e.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(mw.TM)}); err != nil {
		t.Fatalf("pass: %v", err)
	}
	if len(patched) != 0 {
		t.Errorf("the pass patched Jobs already marked bookkept: %v", patched)
	}
	e.wantNoEvent(mw.TM, m, infrav1.JobSucceededEvent)
	e.refresh(job)
	if job.Annotations[infrav1.BookkeptAnnotation] != "true" {
		t.Error("the Job lost its bookkept mark")
	}
}
