package state

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
)

// Keys CAPTF sets on state and backup Secrets. They repeat the exact names of
// reference-facts §7.2 and §7.4.
const (
	managedLabel           = "captf.io/managed"
	ownerKindLabel         = "captf.infrastructure.cluster.x-k8s.io/owner-kind"
	ownerNameLabel         = "captf.infrastructure.cluster.x-k8s.io/owner-name"
	moveLabel              = "clusterctl.cluster.x-k8s.io/move"
	stateBackupLabel       = "captf.io/state-backup"
	stateBackupSuffixLabel = "captf.io/state-backup-suffix"

	inputsHashAnnotation         = "captf.io/inputs-hash"
	appliedAnnotation            = "captf.io/applied"
	imageDigestAnnotation        = "captf.io/image-digest"
	backupSerialAnnotation       = "captf.io/state-backup-serial"
	backupLineageAnnotation      = "captf.io/state-backup-lineage"
	backupTakenAtAnnotation      = "captf.io/state-backup-taken-at"
	backupSourceJobAnnotation    = "captf.io/state-backup-source-job"
	backupDigestAnnotation       = "captf.io/state-backup-digest"
	backupResourcesAnnotation    = "captf.io/state-backup-resources"
	backupSetAnnotation          = "captf.io/state-backup-set"
	backupChunkAnnotation        = "captf.io/state-backup-chunk"
	backupChunksAnnotation       = "captf.io/state-backup-chunks"
	backendEncodingAnnotation    = "encoding"
)

// InputsHashAnnotation is the annotation on the base state Secret that
// records the inputs hash of the last successful apply.
const InputsHashAnnotation = inputsHashAnnotation
