package lifecycle

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
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

// ownedConditions are every condition the flow and the kinds set; the patch
// helper resolves conflicts on them in the flow's favour.
var ownedConditions = []string{
	infrav1.ReadyCondition,
	infrav1.PausedCondition,
	infrav1.DeletingCondition,
	infrav1.DependenciesReadyCondition,
	infrav1.IdentityAllowedCondition,
	infrav1.CredentialsMirroredCondition,
	infrav1.RunnerRBACReadyCondition,
	infrav1.ApplyJobSucceededCondition,
	infrav1.StateReadableCondition,
	infrav1.RestoreJobSucceededCondition,
	infrav1.OutputsValidCondition,
	infrav1.InfrastructureHealthyCondition,
	infrav1.DriftJobSucceededCondition,
	infrav1.DriftDetectedCondition,
	infrav1.DeletionBlockedCondition,
	infrav1.EndpointAvailableCondition,
	infrav1.AutoscalingActiveCondition,
}

// setCondition sets one condition on the object.
func setCondition(p *Pass, t string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(p.Obj, metav1.Condition{
		Type:               t,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: p.Obj.GetGeneration(),
	})
}

// SetCondition lets adapters set a condition.
func (p *Pass) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	setCondition(p, t, status, reason, message)
}

// condition returns a copy of a condition of the object, nil when unset. A
// copy, because setting the condition changes the object's own in place: a
// caller comparing before and after would see only after.
func condition(p *Pass, t string) *metav1.Condition {
	c := conditions.Get(p.Obj, t)
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// setDefaults sets the conditions every object carries from its first
// reconcile, when nothing set them this pass.
func setDefaults(p *Pass) {
	def := func(t string, status metav1.ConditionStatus, reason string) {
		if condition(p, t) == nil {
			setCondition(p, t, status, reason, "")
		}
	}
	if p.Obj.GetDeletionTimestamp().IsZero() {
		setCondition(p, infrav1.DeletingCondition, metav1ConditionFalse, infrav1.NotDeletingReason, "")
	} else {
		setCondition(p, infrav1.DeletingCondition, metav1ConditionTrue, infrav1.DeletingReason, "")
	}
	if p.OwnerWait == nil {
		setCondition(p, infrav1.DependenciesReadyCondition, metav1ConditionTrue, infrav1.DependenciesReadyReason, "")
	}
	def(infrav1.DriftDetectedCondition, metav1ConditionUnknown, infrav1.DriftNotCheckedReason)
	def(infrav1.DriftJobSucceededCondition, metav1ConditionUnknown, infrav1.DriftNotCheckedReason)
	def(infrav1.ApplyJobSucceededCondition, metav1ConditionUnknown, infrav1.NoApplyYetReason)
	def(infrav1.StateReadableCondition, metav1ConditionUnknown, infrav1.StateNotFoundReason)
	def(infrav1.OutputsValidCondition, metav1ConditionUnknown, infrav1.OutputsPendingReason)
	def(infrav1.IdentityAllowedCondition, metav1ConditionUnknown, infrav1.IdentityCheckFailedReason)
	def(infrav1.CredentialsMirroredCondition, metav1ConditionUnknown, infrav1.MirrorPendingReason)
	def(infrav1.RunnerRBACReadyCondition, metav1ConditionUnknown, infrav1.RBACFailedReason)
	if p.Kind == "TerraformCluster" {
		def(infrav1.DeletionBlockedCondition, metav1ConditionFalse, infrav1.NotBlockedReason)
	}
}

// summarizeReady sets Ready over the conditions the kind lists for its
// phase (reference-facts §1.1): Deleting has negative polarity; waiting
// reasons are Unknown so waiting never turns Ready False.
func (f *Flow) summarizeReady(p *Pass) error {
	return conditions.SetSummaryCondition(p.Obj, p.Obj, infrav1.ReadyCondition,
		conditions.ForConditionTypes(f.Adapter.ReadyConditions(p.Provisioned())),
		conditions.NegativePolarityConditionTypes{infrav1.DeletingCondition},
		conditions.CustomMergeStrategy{MergeStrategy: conditions.DefaultMergeStrategy(
			conditions.GetPriorityFunc(conditions.GetDefaultMergePriorityFunc(infrav1.DeletingCondition)),
			conditions.ComputeReasonFunc(func(issues, unknown, _ []conditions.ConditionWithOwnerInfo) string {
				switch {
				case len(issues) > 0:
					return infrav1.NotReadyReason
				case len(unknown) > 0:
					return infrav1.ReadyUnknownReason
				}
				return infrav1.ReadyReason
			}),
		)},
	)
}

// objectMetrics sets the per-object gauges from what the pass found.
func (f *Flow) objectMetrics(p *Pass) {
	kind, ns, name := string(p.Kind), p.Obj.GetNamespace(), p.Obj.GetName()
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
	if m, ok := p.Obj.(*infrav1.TerraformMachine); ok {
		metrics.SetUnhealthySamples(ns, name, int(m.Status.UnhealthySamples))
	}
	f.scheduleMetrics(p)
}

// patchStatus writes the object's status (and the metadata the pass
// changed) once, then marks the Jobs this pass accounted for as bookkept:
// what a finished Job reported is durable only once the patch succeeded.
func (f *Flow) patchStatus(ctx context.Context, p *Pass, helper *patch.Helper) error {
	setDefaults(p)
	if err := f.summarizeReady(p); err != nil {
		return fmt.Errorf("failed to summarise Ready: %w", err)
	}
	s := p.Status()
	if g := p.Obj.GetGeneration(); g > 0 {
		s.ObservedGeneration = g
	}
	f.objectMetrics(p)
	if err := helper.Patch(ctx, p.Obj, patch.WithOwnedConditions{Conditions: ownedConditions}); err != nil {
		return fmt.Errorf("failed to patch %s: %w", client.ObjectKeyFromObject(p.Obj), err)
	}
	f.written.wrote(p.Obj.GetUID(), p.fromVersion, p.writes.version)
	f.transitionMetrics(p)
	return f.markBookkept(ctx, p)
}
