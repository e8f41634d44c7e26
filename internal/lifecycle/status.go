package lifecycle

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

type metav1ConditionStatus = metav1.ConditionStatus

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }

const (
	metav1ConditionTrue    = metav1.ConditionTrue
	metav1ConditionFalse   = metav1.ConditionFalse
	metav1ConditionUnknown = metav1.ConditionUnknown
)

// objectMetrics sets the per-object gauges from what the pass found.
func (f *Flow) objectMetrics(p *Pass) {
	kind, ns, name := p.Kind, p.Obj.GetNamespace(), p.Obj.GetName()
	if c := condition(p, infrav1.ReadyCondition); c != nil {
		metrics.SetReady(kind, ns, name, c.Status)
	}
	if c := condition(p, infrav1.InfrastructureHealthyCondition); c != nil {
		metrics.SetInfrastructureHealthy(kind, ns, name, c.Status)
	}
	if c := condition(p, infrav1.DriftDetectedCondition); c != nil {
		metrics.SetDriftDetected(kind, ns, name, c.Status == metav1ConditionTrue)
	}
	if p.State != nil {
		metrics.SetStateBytes(kind, ns, name, p.State.CompressedBytes)
		metrics.SetStateResources(kind, ns, name, p.State.ManagedResources)
	}
	if r := p.Inputs.Rendered; r != nil {
		metrics.SetInputsBytes(kind, ns, name, r.Size())
	}
	if n := f.Adapter.Fields(p.Obj).UnhealthySamples; n != nil {
		metrics.SetUnhealthySamples(ns, name, int(*n))
	}
	f.scheduleMetrics(p)
}

// patchStatus ends every pass: it computes the status from the pass's
// facts, writes it in one patch, then does what must follow a successful
// write. observedGeneration moves only when the pass itself succeeded.
func (f *Flow) patchStatus(ctx context.Context, p *Pass, succeeded bool) error {
	if err := f.computeStatus(p, succeeded); err != nil {
		return err
	}
	if err := f.writeStatus(ctx, p); err != nil {
		return err
	}
	return f.afterWrite(ctx, p)
}

// computeStatus sets every condition from the pass's facts
// (conditions_set.go), observedGeneration, and the per-object gauges.
func (f *Flow) computeStatus(p *Pass, succeeded bool) error {
	if err := setConditions(p); err != nil {
		return fmt.Errorf("failed to compute the conditions: %w", err)
	}
	if g := p.Obj.GetGeneration(); g > 0 && succeeded {
		p.Status().ObservedGeneration = g
	}
	f.objectMetrics(p)
	return nil
}

// writeStatus writes the object's status (and the metadata the pass
// changed) once (onepatch.go), and remembers the version it produced.
func (f *Flow) writeStatus(ctx context.Context, p *Pass) error {
	if err := f.writeObject(ctx, p); err != nil {
		return fmt.Errorf("failed to patch %s: %w", client.ObjectKeyFromObject(p.Obj), err)
	}
	f.written.wrote(p.Obj.GetUID(), p.fromVersion, p.writes.version)
	return nil
}

// afterWrite does what only a successful status patch makes due: the
// events and counters of the pass's transitions and bookkept Jobs (a
// failed patch repeats nothing), the Jobs marked bookkept (what a finished
// Job reported is durable only once the patch holds it), and, after a
// completed deletion, the finalizer removed.
func (f *Flow) afterWrite(ctx context.Context, p *Pass) error {
	f.transitionMetrics(p)
	f.transitionEvents(p)
	for _, fn := range p.afterPatch {
		fn()
	}
	if err := f.markBookkept(ctx, p); err != nil {
		return err
	}
	if p.dropFinalizer {
		return f.dropFinalizer(ctx, p)
	}
	return nil
}
