package contract

// OutputsValid condition reasons (reference facts §1.10). They equal the
// api/v1alpha1 constants of the same names.
const (
	// ReasonOutputsValid (True): outputs meet the contract and CAPI markers.
	ReasonOutputsValid = "OutputsValid"
	// ReasonInstancesTruncated (True): a pool's instances output was
	// longer than MaxInstances and was shortened.
	ReasonInstancesTruncated = "InstancesTruncated"
	// ReasonFailureDomainMismatch (False): a machine's failure_domain output
	// differs from the requested failure domain.
	ReasonFailureDomainMismatch = "FailureDomainMismatch"
	// ReasonOutputsInvalid (False): an output breaks the contract or a CAPI
	// marker.
	ReasonOutputsInvalid = "OutputsInvalid"
	// ReasonOutputsMissing (False): a contract output is not declared.
	ReasonOutputsMissing = "OutputsMissing"
	// ReasonProviderIDChanged (False): a machine's provider_id changed after
	// it was first written.
	ReasonProviderIDChanged = "ProviderIDChanged"
	// ReasonOutputsPending (Unknown): required outputs are still null.
	ReasonOutputsPending = "OutputsPending"
)

// Condition statuses, as metav1.ConditionStatus strings.
const (
	StatusTrue    = "True"
	StatusFalse   = "False"
	StatusUnknown = "Unknown"
)

// Autoscaling reasons of a pool's AutoscalingActive condition.
const (
	ReasonReplicasManagedByModule       = "ReplicasManagedByModule"
	ReasonAutoscalingDisabled           = "AutoscalingDisabled"
	ReasonAutoscalingAnnotationsInvalid = "AutoscalingAnnotationsInvalid"
)

// DependenciesReady reasons that input rendering produces.
const (
	ReasonVariablesInvalid         = "VariablesInvalid"
	ReasonVariablesSourceNotFound  = "VariablesSourceNotFound"
	ReasonWaitingForClusterExports = "WaitingForClusterExports"
)

// ReasonInputsTooLarge is the ApplyJobSucceeded=False reason for a rendered
// root over the size cap.
const ReasonInputsTooLarge = "InputsTooLarge"
