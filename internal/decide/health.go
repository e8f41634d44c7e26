package decide

import "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"

// HealthState is the module health output's state (a closed enum), or
// HealthNone when the module gave no health output.
type HealthState string

// The health states, with the values of the API's InstanceState enum.
const (
	HealthNone       HealthState = ""
	HealthPending    HealthState = HealthState(v1alpha1.InstanceStatePending)
	HealthRunning    HealthState = HealthState(v1alpha1.InstanceStateRunning)
	HealthDegraded   HealthState = HealthState(v1alpha1.InstanceStateDegraded)
	HealthStopped    HealthState = HealthState(v1alpha1.InstanceStateStopped)
	HealthTerminated HealthState = HealthState(v1alpha1.InstanceStateTerminated)
	HealthUnknown    HealthState = HealthState(v1alpha1.InstanceStateUnknown)
)

// Valid reports whether s is in the contract's enum (or HealthNone).
func (s HealthState) Valid() bool {
	switch s {
	case HealthNone, HealthPending, HealthRunning, HealthDegraded, HealthStopped, HealthTerminated, HealthUnknown:
		return true
	}
	return false
}

// ConditionStatus is a condition's status, with metav1's values.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// HealthCondition is an InfrastructureHealthy status and reason.
type HealthCondition struct {
	Status ConditionStatus
	Reason string
}

// HealthSample is one health reading: from a refresh or drift Job, or from
// an apply's own outputs for a machine or pool.
type HealthSample struct {
	// State and Healthy are the module's health output.
	State   HealthState
	Healthy bool
	// ProviderIDMissing: the provider_id output of a kind whose provider_id
	// names its instance (a TerraformMachine) is null or empty.
	ProviderIDMissing bool
}

// HealthFacts are the inputs of the InfrastructureHealthy mapping.
type HealthFacts struct {
	// Caps are the object's kind's capabilities.
	Caps v1alpha1.Capabilities
	// ApplyStarted: an apply of the object has started at least once.
	ApplyStarted bool
	// Provisioned is status.initialization.provisioned (after this pass's
	// latch, see Provisioned).
	Provisioned bool
	// Sample is the newest reading, nil when there is none.
	Sample *HealthSample
	// PreviousReason is InfrastructureHealthy's reason before this sample.
	PreviousReason string
}

// InfrastructureHealthy maps a health reading to the InfrastructureHealthy
// condition (book: Drift and Health, "From module health to
// InfrastructureHealthy"). Before the first apply it is
// Unknown/WaitingForProvisioning and until provisioned False/Provisioning.
// For a kind whose provider_id names its instance (a TerraformMachine), a
// provider_id that turns null or empty after
// provisioning reads Unknown/ProviderIDMissing on the first such sample and
// False/InstanceTerminated on the next consecutive one.
//
// A missing provider_id that follows an InstanceTerminated reading stays
// terminated: the instance was already reported gone, and flipping back to
// Unknown for one sample would only churn the condition (the book leaves
// this case open).
func InfrastructureHealthy(f HealthFacts) HealthCondition {
	switch {
	case !f.Provisioned && !f.ApplyStarted:
		return HealthCondition{ConditionUnknown, reasonWaitingForProvisioning}
	case !f.Provisioned:
		return HealthCondition{ConditionFalse, reasonProvisioning}
	case f.Sample == nil:
		return HealthCondition{ConditionUnknown, reasonHealthUnknown}
	}
	s := f.Sample
	if f.Caps.ProviderIDNamesInstance && s.ProviderIDMissing {
		if f.PreviousReason == reasonProviderIDMissing || f.PreviousReason == reasonInstanceTerminated {
			return HealthCondition{ConditionFalse, reasonInstanceTerminated}
		}
		return HealthCondition{ConditionUnknown, reasonProviderIDMissing}
	}
	switch s.State {
	case HealthPending:
		return HealthCondition{ConditionFalse, reasonInstancePending}
	case HealthRunning:
		if s.Healthy {
			return HealthCondition{ConditionTrue, reasonHealthy}
		}
		return HealthCondition{ConditionFalse, reasonInstanceUnhealthy}
	case HealthDegraded:
		return HealthCondition{ConditionFalse, reasonInstanceDegraded}
	case HealthStopped:
		return HealthCondition{ConditionFalse, reasonInstanceStopped}
	case HealthTerminated:
		return HealthCondition{ConditionFalse, reasonInstanceTerminated}
	}
	return HealthCondition{ConditionUnknown, reasonHealthUnknown}
}

// NextUnhealthySamples is a TerraformMachine's status.unhealthySamples after
// one more sample read as reason: Healthy resets it, InstanceUnhealthy,
// InstanceDegraded and InstanceStopped add one, anything else (pending,
// unknown, terminated, provider ID missing) leaves it. Call it once per
// successful refresh or drift Job after provisioning, and once for an apply
// whose own reading is definite.
func NextUnhealthySamples(prev int, reason string) int {
	prev = max(prev, 0)
	switch reason {
	case reasonHealthy:
		return 0
	case reasonInstanceUnhealthy, reasonInstanceDegraded, reasonInstanceStopped:
		return prev + 1
	}
	return prev
}

// NextPendingRefreshes is status.pendingRefreshes after one more reading:
// the consecutive pending samples since the last other reading or apply. An
// apply resets it; a refresh or drift sample reading pending adds one, any
// other reading resets it.
func NextPendingRefreshes(prev int, state HealthState, fromApply bool) int {
	if fromApply || state != HealthPending {
		return 0
	}
	return max(prev, 0) + 1
}

// DefiniteReading reports whether an apply's own outputs stand in for the
// post-apply refresh of a machine or pool: the outputs are valid and health
// is neither pending nor unknown (nor absent). When it holds, the reconcile
// records the apply's finish as status.lastRefresh, which is what Decide
// reads to skip the post-apply refresh.
func DefiniteReading(outputsValid bool, state HealthState) bool {
	if !outputsValid {
		return false
	}
	switch state {
	case HealthNone, HealthPending, HealthUnknown:
		return false
	}
	return state.Valid()
}

// ProvisionFacts are the inputs of the provisioned latch, read from state.
type ProvisionFacts struct {
	// AppliedHash: the state Secret carries the inputs-hash annotation of a
	// successful apply.
	AppliedHash bool
	// OutputsValid: the required outputs are valid (cluster rule).
	OutputsValid bool
	// ProviderIDSet: provider_id is non-null (machine rule).
	ProviderIDSet bool
	// Health is the module's health state.
	Health HealthState
}

// Provisioned is status.initialization.provisioned after this pass. It is
// latched: once true it stays true. Until then (module contract,
// "Provisioned rule"): an applied inputs hash and health not pending, and
//   - valid required outputs, for a kind whose provisioning needs them (a
//     cluster);
//   - a non-null provider_id, for a kind whose provider_id names its
//     instance (a machine).
//
// A pool needs neither: an empty provider ID list is fine, a pool may scale
// to zero.
func Provisioned(caps v1alpha1.Capabilities, latched bool, f ProvisionFacts) bool {
	switch {
	case latched:
		return true
	case !f.AppliedHash || f.Health == HealthPending:
		return false
	case caps.ProvisionedNeedsValidOutputs && !f.OutputsValid:
		return false
	case caps.ProviderIDNamesInstance && !f.ProviderIDSet:
		return false
	}
	return true
}

// RemediationAction is what a TerraformMachine does with the
// cluster.x-k8s.io/remediate-machine annotation on its Machine.
type RemediationAction int

// The remediation actions.
const (
	// RemediationKeep leaves the Machine's annotations as they are.
	RemediationKeep RemediationAction = iota
	// RemediationRequest sets the annotation (and CAPTF's marker).
	RemediationRequest
	// RemediationWithdraw removes the annotation if CAPTF set it.
	RemediationWithdraw
)

// DefaultUnhealthyThreshold is spec.remediation.unhealthyThreshold's default.
const DefaultUnhealthyThreshold = 3

// MachineRemediation decides the remediate-machine annotation (book: Machine
// Remediation). With annotateMachine, a terminated instance is requested at
// once and otherwise once unhealthySamples reaches the threshold (3 when
// unset). A Healthy reading withdraws CAPTF's own request unless the Machine
// is being deleted.
func MachineRemediation(annotate bool, unhealthySamples, threshold int, reason string, machineDeleting bool) RemediationAction {
	if reason == reasonHealthy {
		if machineDeleting {
			return RemediationKeep
		}
		return RemediationWithdraw
	}
	if !annotate {
		return RemediationKeep
	}
	if threshold <= 0 {
		threshold = DefaultUnhealthyThreshold
	}
	if reason == reasonInstanceTerminated || unhealthySamples >= threshold {
		return RemediationRequest
	}
	return RemediationKeep
}
