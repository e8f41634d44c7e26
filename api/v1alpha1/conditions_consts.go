package v1alpha1

// Condition types CAPTF sets on its kinds. Ready, Paused and Deleting are
// Cluster API's own types (clusterv1.ReadyCondition, PausedCondition,
// DeletingCondition) and are repeated here so every name lives in one place.
const (
	// ReadyCondition summarises an object's health; it is the only
	// condition Cluster API reads.
	ReadyCondition = "Ready"
	// PausedCondition is True while the object or its Cluster is paused.
	PausedCondition = "Paused"
	// DeletingCondition is True once the object has a deletionTimestamp.
	DeletingCondition = "Deleting"
	// DependenciesReadyCondition carries the gating reasons Ready cannot
	// express: owner, cluster infrastructure, exports, bootstrap data and
	// variable sources.
	DependenciesReadyCondition = "DependenciesReady"
	// IdentityAllowedCondition reports whether the resolved identity may be
	// used from the object's namespace.
	IdentityAllowedCondition = "IdentityAllowed"
	// CredentialsMirroredCondition reports the captf-creds-<identity> mirror.
	CredentialsMirroredCondition = "CredentialsMirrored"
	// RunnerRBACReadyCondition reports the runner ServiceAccount and
	// RoleBinding.
	RunnerRBACReadyCondition = "RunnerRBACReady"
	// ApplyJobSucceededCondition covers the last apply or destroy Job.
	ApplyJobSucceededCondition = "ApplyJobSucceeded"
	// StateReadableCondition reports whether the state could be read this
	// reconcile.
	StateReadableCondition = "StateReadable"
	// RestoreJobSucceededCondition covers the last restore Job.
	RestoreJobSucceededCondition = "RestoreJobSucceeded"
	// OutputsValidCondition reports whether the module's outputs meet the
	// contract.
	OutputsValidCondition = "OutputsValid"
	// InfrastructureHealthyCondition reports the module's health output.
	InfrastructureHealthyCondition = "InfrastructureHealthy"
	// DriftJobSucceededCondition covers the last drift or refresh Job.
	DriftJobSucceededCondition = "DriftJobSucceeded"
	// DriftDetectedCondition is True while drift is found (negative polarity).
	DriftDetectedCondition = "DriftDetected"
	// DeletionBlockedCondition is True while a TerraformCluster's destroy
	// waits for its machines and pools (negative polarity).
	DeletionBlockedCondition = "DeletionBlocked"
	// EndpointAvailableCondition reports a TerraformCluster's control-plane
	// endpoint.
	EndpointAvailableCondition = "EndpointAvailable"
	// AutoscalingActiveCondition reports whether a TerraformMachinePool's
	// replicas are managed by its module.
	AutoscalingActiveCondition = "AutoscalingActive"
	// CapacityResolvedCondition reports a TerraformMachineTemplate's capacity
	// read from its image's labels.
	CapacityResolvedCondition = "CapacityResolved"
)

// Ready reasons.
const (
	ReadyReason        = "Ready"
	NotReadyReason     = "NotReady"
	ReadyUnknownReason = "ReadyUnknown"
	// SecretFoundReason and SecretNotFoundReason are a
	// TerraformClusterIdentity's Ready reasons; SecretNotFound is also an
	// IdentityAllowed reason.
	SecretFoundReason    = "SecretFound"
	SecretNotFoundReason = "SecretNotFound"
)

// DependenciesReady reasons.
const (
	DependenciesReadyReason               = "DependenciesReady"
	ClusterNotTerraformReason             = "ClusterNotTerraform"
	OwnerMismatchReason                   = "OwnerMismatch"
	OwnerNotFoundReason                   = "OwnerNotFound"
	VariablesInvalidReason                = "VariablesInvalid"
	VariablesSourceNotFoundReason         = "VariablesSourceNotFound"
	WaitingForOwnerMachineReason          = "WaitingForOwnerMachine"
	WaitingForOwnerMachinePoolReason      = "WaitingForOwnerMachinePool"
	WaitingForBootstrapDataReason         = "WaitingForBootstrapData"
	WaitingForClusterExportsReason        = "WaitingForClusterExports"
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	WaitingForOwnerReason                 = "WaitingForOwner"
)

// IdentityAllowed reasons (SecretNotFoundReason is shared with Ready).
const (
	IdentityAllowedReason     = "IdentityAllowed"
	IdentityNotFoundReason    = "IdentityNotFound"
	NamespaceNotAllowedReason = "NamespaceNotAllowed"
	IdentityCheckFailedReason = "IdentityCheckFailed"
)

// CredentialsMirrored reasons.
const (
	MirroredReason      = "Mirrored"
	MirrorFailedReason  = "MirrorFailed"
	MirrorPendingReason = "MirrorPending"
)

// RunnerRBACReady reasons.
const (
	RBACReadyReason                = "RBACReady"
	RBACFailedReason               = "RBACFailed"
	ServiceAccountNotOptedInReason = "ServiceAccountNotOptedIn"
)

// ApplyJobSucceeded reasons. The three lease waits are shared with
// RestoreJobSucceeded (and WaitingForRunLease with DriftJobSucceeded).
const (
	ApplySucceededReason              = "ApplySucceeded"
	DestroySucceededReason            = "DestroySucceeded"
	ApplyFailedReason                 = "ApplyFailed"
	DestroyFailedReason               = "DestroyFailed"
	DestructivePlanBlockedReason      = "DestructivePlanBlocked"
	IdentityNotAllowedReason          = "IdentityNotAllowed"
	ImageInvalidReason                = "ImageInvalid"
	ImagePullFailedReason             = "ImagePullFailed"
	InputsTooLargeReason              = "InputsTooLarge"
	JobDeadlineExceededReason         = "JobDeadlineExceeded"
	JobPolicyInvalidReason            = "JobPolicyInvalid"
	NoApplyYetReason                  = "NoApplyYet"
	PlanAwaitingApprovalReason        = "PlanAwaitingApproval"
	PlanChangedReason                 = "PlanChanged"
	WaitingForClusterOperationReason  = "WaitingForClusterOperation"
	WaitingForMachineOperationsReason = "WaitingForMachineOperations"
	WaitingForRunLeaseReason          = "WaitingForRunLease"
	// JobInvalidReason: the Job of the operation cannot be built, or the
	// API server refuses it; no lease is held and no Job runs until the
	// object's spec changes.
	JobInvalidReason = "JobInvalid"
	// JobNameTakenReason: a Job or per-run Secret with the name of the
	// operation's Job exists but is not CAPTF's (another controller, or
	// CAPTF's labels missing); it is left alone, no lease is held, and the
	// operation waits until the name is free.
	JobNameTakenReason = "JobNameTaken"
)

// StateReadable reasons.
const (
	StateReadReason         = "StateRead"
	StateCorruptReason      = "StateCorrupt"
	StateEncryptedReason    = "StateEncrypted"
	StateInconsistentReason = "StateInconsistent"
	StateLockedReason       = "StateLocked"
	StateLostReason         = "StateLost"
	StateNotFoundReason     = "StateNotFound"
	// StateSecretForeignReason: a Secret carries a state Secret's name
	// but not CAPTF's owner labels for the object; it is never deleted and
	// the finalizer stays until it is removed or labelled.
	StateSecretForeignReason = "StateSecretForeign"
)

// RestoreJobSucceeded reasons.
const (
	StateRestoredReason         = "StateRestored"
	RestoreBackupNotFoundReason = "RestoreBackupNotFound"
	RestoreFailedReason         = "RestoreFailed"
)

// OutputsValid reasons.
const (
	OutputsValidReason          = "OutputsValid"
	InstancesTruncatedReason    = "InstancesTruncated"
	FailureDomainMismatchReason = "FailureDomainMismatch"
	OutputsInvalidReason        = "OutputsInvalid"
	OutputsMissingReason        = "OutputsMissing"
	ProviderIDChangedReason     = "ProviderIDChanged"
	OutputsPendingReason        = "OutputsPending"
)

// InfrastructureHealthy reasons.
const (
	HealthyReason                = "Healthy"
	ProvisioningReason           = "Provisioning"
	InstancePendingReason        = "InstancePending"
	InstanceUnhealthyReason      = "InstanceUnhealthy"
	InstanceDegradedReason       = "InstanceDegraded"
	InstanceStoppedReason        = "InstanceStopped"
	InstanceTerminatedReason     = "InstanceTerminated"
	WaitingForProvisioningReason = "WaitingForProvisioning"
	HealthUnknownReason          = "HealthUnknown"
	ProviderIDMissingReason      = "ProviderIDMissing"
)

// DriftJobSucceeded reasons.
const (
	DriftCheckedReason             = "DriftChecked"
	DriftJobFailedReason           = "DriftJobFailed"
	DriftJobDeadlineExceededReason = "DriftJobDeadlineExceeded"
	DriftJobRunningReason          = "DriftJobRunning"
	DriftNotCheckedReason          = "DriftNotChecked"
	DurableInputsMissingReason     = "DurableInputsMissing"
)

// DriftDetected reasons (DriftNotCheckedReason is shared).
const (
	DriftReportedReason    = "DriftReported"
	DriftPendingReason     = "DriftPending"
	DriftRemediatingReason = "DriftRemediating"
	NoDriftReason          = "NoDrift"
)

// DeletionBlocked, EndpointAvailable, AutoscalingActive, CapacityResolved,
// Paused and Deleting reasons.
const (
	DependentsExistReason               = "DependentsExist"
	NotBlockedReason                    = "NotBlocked"
	EndpointAvailableReason             = "EndpointAvailable"
	WaitingForEndpointReason            = "WaitingForEndpoint"
	ReplicasManagedByModuleReason       = "ReplicasManagedByModule"
	AutoscalingDisabledReason           = "AutoscalingDisabled"
	AutoscalingAnnotationsInvalidReason = "AutoscalingAnnotationsInvalid"
	ReplicasManagedExternallyReason     = "ReplicasManagedExternally"
	CapacityResolvedReason              = "CapacityResolved"
	CapacityNotDeclaredReason           = "CapacityNotDeclared"
	CapacityLabelInvalidReason          = "CapacityLabelInvalid"
	ImageInspectFailedReason            = "ImageInspectFailed"
	PausedReason                        = "Paused"
	NotPausedReason                     = "NotPaused"
	DeletingReason                      = "Deleting"
	DeletionCompletedReason             = "DeletionCompleted"
	NotDeletingReason                   = "NotDeleting"
)
