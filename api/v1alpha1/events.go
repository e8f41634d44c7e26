package v1alpha1

// Event reasons the manager emits (events.k8s.io/v1).
const (
	CapacityResolvedEvent                = "CapacityResolved"
	ConditionChangedEvent                = "ConditionChanged"
	ControlPlaneEndpointSetEvent         = "ControlPlaneEndpointSet"
	DeletionStartedEvent                 = "DeletionStarted"
	DestroyedEvent                       = "Destroyed"
	DestructivePlanApprovalConsumedEvent = "DestructivePlanApprovalConsumed"
	DestructivePlanBlockedEvent          = "DestructivePlanBlocked"
	DigestPinnedEvent                    = "DigestPinned"
	DigestUnknownEvent                   = "DigestUnknown"
	DriftDetectedEvent                   = "DriftDetected"
	DriftRemediationStartedEvent         = "DriftRemediationStarted"
	DriftResolvedEvent                   = "DriftResolved"
	FailureDomainsChangedEvent           = "FailureDomainsChanged"
	FinalizerRemovedEvent                = "FinalizerRemoved"
	ForceUnlockedEvent                   = "ForceUnlocked"
	IdentityNotAllowedEvent              = "IdentityNotAllowed"
	IdentitySecretFoundEvent             = "IdentitySecretFound"
	IdentitySecretNotFoundEvent          = "IdentitySecretNotFound"
	ImageInspectFailedEvent              = "ImageInspectFailed"
	InputsChangedEvent                   = "InputsChanged"
	InstanceHealthyEvent                 = "InstanceHealthy"
	InstanceUnhealthyEvent               = "InstanceUnhealthy"
	JobCreatedEvent                      = "JobCreated"
	JobDeadlineExceededEvent             = "JobDeadlineExceeded"
	JobFailedEvent                       = "JobFailed"
	JobInterruptedEvent                  = "JobInterrupted"
	JobSucceededEvent                    = "JobSucceeded"
	MirrorCreatedEvent                   = "MirrorCreated"
	MirrorRemovedEvent                   = "MirrorRemoved"
	OutputsInvalidEvent                  = "OutputsInvalid"
	PausedEvent                          = "Paused"
	PlanAppliedEvent                     = "PlanApplied"
	PlanApprovedEvent                    = "PlanApproved"
	PlanChangedEvent                     = "PlanChanged"
	PlanReadyEvent                       = "PlanReady"
	ProviderIDSetEvent                   = "ProviderIDSet"
	ProvisionedEvent                     = "Provisioned"
	RemediationRequestedEvent            = "RemediationRequested"
	RemediationWithdrawnEvent            = "RemediationWithdrawn"
	ReplicasWrittenBackEvent             = "ReplicasWrittenBack"
	ResumedEvent                         = "Resumed"
	StateAdoptedEvent                    = "StateAdopted"
	StateBackedUpEvent                   = "StateBackedUp"
	StateLockedEvent                     = "StateLocked"
	StateLostEvent                       = "StateLost"
	StateRestoreFailedEvent              = "StateRestoreFailed"
	StateRestoredEvent                   = "StateRestored"
	StateUnreadableEvent                 = "StateUnreadable"
	StuckJobDeletedEvent                 = "StuckJobDeleted"
	WaitingForClusterOperationEvent      = "WaitingForClusterOperation"
	WaitingForMachineOperationsEvent     = "WaitingForMachineOperations"
	WaitingForRunLeaseEvent              = "WaitingForRunLease"
	// JobInvalidEvent reports a Job that cannot be built or that the API
	// server refuses.
	JobInvalidEvent = "JobInvalid"
	// JobNameTakenEvent reports a Job or per-run Secret with the name of the
	// operation's Job that is not CAPTF's.
	JobNameTakenEvent = "JobNameTaken"
	// EnvVarDroppedEvent reports spec.jobs.env entries named TF_* or KUBE_*
	// that were dropped from a Job.
	EnvVarDroppedEvent = "EnvVarDropped"
)

// Event reasons the runner emits on the owning object while a Job runs.
const (
	RunStartedEvent       = "RunStarted"
	StepStartedEvent      = "StepStarted"
	StepSucceededEvent    = "StepSucceeded"
	StepFailedEvent       = "StepFailed"
	PlanSummaryEvent      = "PlanSummary"
	ResourcesChangedEvent = "ResourcesChanged"
	RunFinishedEvent      = "RunFinished"
)
