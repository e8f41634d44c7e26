package terraformmachine

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// machineOwner is how a TerraformMachine finds its Machine: a control
// plane first sets a non-controller ownerRef of its own, then the Machine
// takes over.
var machineOwner = lifecycle.OwnerKind[*clusterv1.Machine]{
	Kind:          "Machine",
	Get:           util.GetOwnerMachine,
	WaitingReason: infrav1.WaitingForOwnerMachineReason,
	Pending: func(refs []metav1.OwnerReference) bool {
		return slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return o.Controller == nil || !*o.Controller })
	},
	Refs: func(m *clusterv1.Machine) (clusterv1.ContractVersionedObjectReference, string) {
		return m.Spec.InfrastructureRef, m.Spec.ClusterName
	},
}

// After keeps cluster.x-k8s.io/remediate-machine on the owning Machine in
// step with the instance's health once the machine is provisioned, when
// spec.remediation.annotateMachine is set (book: Machine Remediation).
// Nothing is touched while the TerraformMachine is being deleted.
func (a *Adapter) After(ctx context.Context, p *lifecycle.Pass) error {
	tm := p.Obj.(*infrav1.TerraformMachine)
	m := a.OwnerOf(p)
	if m == nil || tm.Spec.Remediation == nil || tm.Spec.Remediation.AnnotateMachine == nil {
		return nil
	}
	if !p.Provisioned() || !tm.DeletionTimestamp.IsZero() {
		return nil
	}
	hc := p.Condition(infrav1.InfrastructureHealthyCondition)
	if hc == nil {
		return nil
	}
	ev, err := syncRemediation(ctx, a.Client, tm, m, hc.Reason)
	if ev != nil {
		p.Event(ev.eventType, ev.reason, ev.note)
	}
	return err
}

// event is an event to emit on the TerraformMachine.
type event struct {
	eventType, reason, note string
}

// syncRemediation sets or withdraws cluster.x-k8s.io/remediate-machine on
// m for an InfrastructureHealthy reading of reason, and returns the event
// the change calls for (nil when m is already as wanted). CAPTF only ever
// removes the annotation it set itself (captf.io/remediation-requested).
func syncRemediation(ctx context.Context, c client.Client, tm *infrav1.TerraformMachine, m *clusterv1.Machine, reason string) (*event, error) {
	r := tm.Spec.Remediation
	threshold := 0
	if r.UnhealthyThreshold != nil {
		threshold = int(*r.UnhealthyThreshold)
	}
	action := decide.MachineRemediation(r.AnnotateMachine != nil && *r.AnnotateMachine, int(tm.Status.UnhealthySamples), threshold, reason, !m.DeletionTimestamp.IsZero())
	_, ours := m.Annotations[infrav1.RemediationRequestedAnnotation]
	_, set := m.Annotations[infrav1.RemediateMachineAnnotation]
	base := m.DeepCopy()
	switch {
	case action == decide.RemediationRequest && !set:
		why := fmt.Sprintf("%s for %d consecutive samples", reason, tm.Status.UnhealthySamples)
		if reason == infrav1.InstanceTerminatedReason {
			why = "the instance is terminated"
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[infrav1.RemediateMachineAnnotation] = ""
		m.Annotations[infrav1.RemediationRequestedAnnotation] = why
		if err := c.Patch(ctx, m, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("failed to request remediation of Machine %s: %w", m.Name, err)
		}
		metrics.RemediationRequest(metrics.RemediationRequested)
		return &event{corev1.EventTypeWarning, infrav1.RemediationRequestedEvent, "Requested remediation of Machine " + m.Name + ": " + why}, nil
	case action == decide.RemediationWithdraw && ours:
		delete(m.Annotations, infrav1.RemediateMachineAnnotation)
		delete(m.Annotations, infrav1.RemediationRequestedAnnotation)
		if err := c.Patch(ctx, m, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("failed to withdraw remediation of Machine %s: %w", m.Name, err)
		}
		metrics.RemediationRequest(metrics.RemediationWithdrawn)
		return &event{corev1.EventTypeNormal, infrav1.RemediationWithdrawnEvent, "Withdrew the remediation request of Machine " + m.Name}, nil
	}
	return nil, nil
}
