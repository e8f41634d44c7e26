package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// activeJob: while a Job runs, a Job that can never start is deleted;
// decide then waits on the Job (the Job's watch wakes the object when it
// finishes).
func (f *Flow) activeJob(ctx context.Context, p *Pass) error {
	if p.Active == nil {
		return nil
	}
	p.facts.running = p.Active
	if err := f.handActiveRunSecret(ctx, p); err != nil {
		return err
	}
	return f.deleteIfStuck(ctx, p)
}

// handActiveRunSecret hands a running Job its per-run Secret when the pass
// that created both died before it did (the Secret is still owned by the
// object): read through the cache, written only then.
func (f *Flow) handActiveRunSecret(ctx context.Context, p *Pass) error {
	job := p.Active
	secret := &corev1.Secret{}
	err := f.Client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: jobs.RunSecretName(job.Name)}, secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read Secret %s: %w", jobs.RunSecretName(job.Name), err)
	}
	if metav1.GetControllerOfNoCopy(secret) != nil {
		return nil
	}
	return f.handRunSecret(ctx, job, secret)
}

// deleteIfStuck deletes an active Job whose per-run Secret is missing and
// whose pod never started, once the Job is at least a minute old.
func (f *Flow) deleteIfStuck(ctx context.Context, p *Pass) error {
	job := p.Active
	if p.Now.Sub(job.CreationTimestamp.Time) < stuckAfter {
		p.Requeue(stuckAfter)
		return nil
	}
	if job.Status.StartTime != nil && job.Status.Active > 0 && job.Status.Ready != nil && *job.Status.Ready > 0 {
		return nil
	}
	secret := &corev1.Secret{}
	err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: jobs.RunSecretName(job.Name)}, secret)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to read Secret %s: %w", jobs.RunSecretName(job.Name), err)
	}
	pods, err := f.livePods(ctx, job)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				return nil
			}
		}
	}
	if err := f.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete stuck Job %s: %w", job.Name, err)
	}
	f.event(p, job, corev1.EventTypeWarning, infrav1.StuckJobDeletedEvent, "Deleted Job "+job.Name+": its per-run Secret is missing and it never started")
	// A Job CAPTF deleted itself is no interrupted run: status forgets it,
	// so no later pass takes it for an apply that disappeared.
	p.Status().ActiveJob = nil
	if err := f.releaseLeases(ctx, p, job.Name); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a stuck Job", "job", job.Name)
	p.Requeue(5 * time.Second)
	return nil
}

// clearMoveBlock removes clusterctl's block-move annotation once no Job is
// active.
func (f *Flow) clearMoveBlock(ctx context.Context, p *Pass) error {
	if p.Active != nil {
		return nil
	}
	if _, ok := p.Obj.GetAnnotations()[infrav1.BlockMoveAnnotation]; !ok {
		return nil
	}
	a := p.Obj.GetAnnotations()
	delete(a, infrav1.BlockMoveAnnotation)
	p.Obj.SetAnnotations(a) // written by the status patch's metadata patch
	return nil
}

// stuckAfter is how old a Job that never started must be before it counts
// as stuck.
const stuckAfter = time.Minute
