package state

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	v1alpha1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Keys the kubernetes backend itself puts on what it writes. They are the
// backend's, not CAPTF's, and must match it byte for byte.
const (
	// BackendStateLabel ("true") marks every state Secret and lock Lease the
	// backend writes.
	BackendStateLabel = "tfstate"
	// BackendSuffixLabel holds the backend's secret_suffix.
	BackendSuffixLabel = "tfstateSecretSuffix"
	// BackendWorkspaceLabel holds the workspace; CAPTF only uses "default".
	BackendWorkspaceLabel = "tfstateWorkspace"
	// BackendManagedByLabel is set to "terraform" by both runtimes.
	BackendManagedByLabel = "app.kubernetes.io/managed-by"
	// DataKey is the Secret data key holding (a chunk of) the gzip stream.
	DataKey = "tfstate"
	// LockInfoAnnotation on the lock Lease holds the lock info JSON while the
	// lock is held.
	LockInfoAnnotation = "app.terraform.io/lock-info"
	// Workspace is the only workspace CAPTF uses.
	Workspace = "default"

	backendEncodingAnnotation = "encoding"
)

// CAPTF's own keys on state and backup Secrets (reference-facts §7.2, §7.4).
const (
	managedLabel           = v1alpha1.ManagedLabel
	ownerKindLabel         = v1alpha1.OwnerKindLabel
	ownerNameLabel         = v1alpha1.OwnerNameLabel
	moveLabel              = v1alpha1.MoveLabel
	clusterNameLabel       = clusterv1.ClusterNameLabel
	stateBackupLabel       = v1alpha1.StateBackupLabel
	stateBackupSuffixLabel = v1alpha1.StateBackupSuffixLabel

	inputsHashAnnotation      = v1alpha1.InputsHashAnnotation
	appliedAnnotation         = v1alpha1.AppliedAnnotation
	imageDigestAnnotation     = v1alpha1.ImageDigestAnnotation
	backupSerialAnnotation    = v1alpha1.StateBackupSerialAnnotation
	backupLineageAnnotation   = v1alpha1.StateBackupLineageAnnotation
	backupTakenAtAnnotation   = v1alpha1.StateBackupTakenAtAnnotation
	backupSourceJobAnnotation = v1alpha1.StateBackupSourceJobAnnotation
	backupDigestAnnotation    = v1alpha1.StateBackupDigestAnnotation
	backupResourcesAnnotation = v1alpha1.StateBackupResourcesAnnotation
	backupSetAnnotation       = v1alpha1.StateBackupSetAnnotation
	backupChunkAnnotation     = v1alpha1.StateBackupChunkAnnotation
	backupChunksAnnotation    = v1alpha1.StateBackupChunksAnnotation
)
