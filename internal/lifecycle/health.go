package lifecycle

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
)

// RawOutputs returns the state's root outputs as the contract decoders
// read them.
func (p *Pass) RawOutputs() contract.RawOutputs {
	raw := contract.RawOutputs{}
	if p.State == nil {
		return raw
	}
	for name, o := range p.State.Outputs {
		raw[name] = json.RawMessage(o.Value)
	}
	return raw
}

// recordOutputs records a decode verdict of the outputs (OutputsValid).
func (f *Flow) recordOutputs(p *Pass, v contract.Verdict) {
	prev := p.Condition(infrav1.OutputsValidCondition)
	p.facts.outputs = &v
	if v.Status == contract.StatusFalse && (prev == nil || prev.Status != metav1ConditionFalse) {
		f.event(p, nil, corev1.EventTypeWarning, infrav1.OutputsInvalidEvent, v.Message)
	}
}

func metav1Status(s string) (out metav1ConditionStatus) {
	switch s {
	case contract.StatusTrue:
		return metav1ConditionTrue
	case contract.StatusFalse:
		return metav1ConditionFalse
	}
	return metav1ConditionUnknown
}

// Reading is one health reading from the state's outputs.
type Reading struct {
	// Health is the module's health output (nil when null).
	Health *contract.Health
	// OutputsValid: the outputs met the contract.
	OutputsValid bool
	// Provision are the provisioned latch's facts.
	Provision decide.ProvisionFacts
	// ProviderIDMissing: a machine's provider_id turned null.
	ProviderIDMissing bool
}

// observeHealth records a health reading: the provisioned latch,
// InfrastructureHealthy, the sample counters and, for an apply whose own
// reading is definite, status.lastRefresh. It returns the new
// InfrastructureHealthy reason.
func (f *Flow) observeHealth(p *Pass, r Reading) string {
	state := decide.HealthNone
	if r.Health != nil {
		state = decide.HealthState(r.Health.State)
	}
	p.health = state
	r.Provision.Health = state
	s := p.Status()

	wasProvisioned := p.Provisioned()
	if decide.Provisioned(p.Obj.Capabilities(), wasProvisioned, r.Provision) && !wasProvisioned {
		p.SetProvisioned()
		f.event(p, nil, corev1.EventTypeNormal, infrav1.ProvisionedEvent, "Infrastructure provisioned")
	}

	sampleOp, appliedAt := p.Sample()
	var sample *decide.HealthSample
	if r.Health != nil || r.ProviderIDMissing {
		sample = &decide.HealthSample{State: state, ProviderIDMissing: r.ProviderIDMissing}
		if r.Health != nil {
			sample.Healthy = r.Health.Healthy
		}
	}
	prev := p.Condition(infrav1.InfrastructureHealthyCondition)
	prevReason := ""
	if prev != nil {
		prevReason = prev.Reason
	}
	applyStarted := len(p.Records) > 0 || p.Active != nil
	hc := decide.InfrastructureHealthy(decide.HealthFacts{
		Caps: p.Obj.Capabilities(), ApplyStarted: applyStarted, Provisioned: p.Provisioned(), Sample: sample, PreviousReason: prevReason,
	})
	// A reading counts as a new sample only when a Job bookkept this pass
	// produced it; otherwise the previous reading stands.
	if sampleOp == "" && prev != nil && p.Provisioned() && wasProvisioned {
		return prevReason
	}
	msg := ""
	if r.Health != nil {
		var parts []string
		if r.Health.Message != nil && *r.Health.Message != "" {
			parts = append(parts, *r.Health.Message)
		}
		if len(r.Health.Reasons) > 0 {
			parts = append(parts, "reasons: "+strings.Join(r.Health.Reasons, ", "))
		}
		msg = strings.Join(parts, "; ")
	}
	p.facts.health = &verdict{status: metav1ConditionStatus(hc.Status), reason: hc.Reason, message: msg}
	if p.Provisioned() && (prev == nil || prev.Status != metav1ConditionStatus(hc.Status)) {
		switch hc.Status {
		case decide.ConditionTrue:
			f.event(p, nil, corev1.EventTypeNormal, infrav1.InstanceHealthyEvent, "Instance healthy")
		case decide.ConditionFalse:
			f.event(p, nil, corev1.EventTypeWarning, infrav1.InstanceUnhealthyEvent, hc.Reason+": "+msg)
		}
	}

	if sampleOp != "" {
		fromApply := sampleOp == decide.OpApply
		s.PendingRefreshes = int32(decide.NextPendingRefreshes(int(s.PendingRefreshes), state, fromApply))
		counts := wasProvisioned || p.Provisioned()
		if fromApply {
			definite := decide.DefiniteReading(r.OutputsValid, state)
			if definite && p.Obj.Capabilities().RefreshesAfterApply {
				t := metav1Time(appliedAt)
				s.LastRefresh = &t
			}
			counts = counts && definite
		}
		if counts {
			if n := f.Adapter.Fields(p.Obj).UnhealthySamples; n != nil {
				*n = int32(decide.NextUnhealthySamples(int(*n), hc.Reason))
			}
		}
	}
	return hc.Reason
}
