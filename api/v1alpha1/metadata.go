package v1alpha1

// Annotations an operator sets.
const (
	// ApproveDestructivePlanAnnotation approves one destructive apply or
	// remediation of the inputs hash it names.
	ApproveDestructivePlanAnnotation = "captf.io/approve-destructive-plan"
	// ApprovePlanAnnotation approves the plan hash it names (applyPolicy
	// Manual).
	ApprovePlanAnnotation = "captf.io/approve-plan"
	// RestoreStateAnnotation asks for the backup with the serial it names to
	// be restored.
	RestoreStateAnnotation = "captf.io/restore-state"
	// AbandonInfrastructureAnnotation, set to the object's UID on a deleting
	// object whose state is lost, removes the finalizer without a destroy.
	AbandonInfrastructureAnnotation = "captf.io/abandon-infrastructure"
	// ReconcileRequestedAnnotation (an RFC 3339 time, as kubectl captf
	// reconcile writes it) asks for a reconcile pass now; the pass that ran
	// removes it with its status patch.
	ReconcileRequestedAnnotation = "captf.io/reconcile-requested"
	// DriftCheckRequestedAnnotation (an RFC 3339 time, as kubectl captf
	// drift check writes it) asks for a drift check now, outside the
	// interval. It is removed when the drift Job starts, or when a check
	// that finished after the request or drift checks turned off answer it.
	DriftCheckRequestedAnnotation = "captf.io/drift-check-requested"
)

// Labels an operator sets.
const (
	// VariablesLabel ("true") opts a ConfigMap or Secret in as a
	// variablesFrom source.
	VariablesLabel = "captf.io/variables"
	// RunnerLabel ("true") opts a ServiceAccount in as a runner override.
	RunnerLabel = "captf.io/runner"
)

// Labels CAPTF sets on what it owns.
const (
	ManagedLabel           = "captf.io/managed"
	OwnerKindLabel         = "captf.infrastructure.cluster.x-k8s.io/owner-kind"
	OwnerNameLabel         = "captf.infrastructure.cluster.x-k8s.io/owner-name"
	OpLabel                = "captf.infrastructure.cluster.x-k8s.io/op"
	AttemptLabel           = "captf.infrastructure.cluster.x-k8s.io/attempt"
	StateBackupLabel       = "captf.io/state-backup"
	StateBackupSuffixLabel = "captf.io/state-backup-suffix"
	LeaseLabel             = "captf.io/lease"
	MirroredLabel          = "captf.io/mirrored"
)

// Annotations CAPTF sets on what it owns (internal; do not edit).
const (
	InputsHashAnnotation             = "captf.io/inputs-hash"
	StateBackupSerialAnnotation      = "captf.io/state-backup-serial"
	StateBackupLineageAnnotation     = "captf.io/state-backup-lineage"
	StateBackupTakenAtAnnotation     = "captf.io/state-backup-taken-at"
	StateBackupSourceJobAnnotation   = "captf.io/state-backup-source-job"
	StateBackupDigestAnnotation      = "captf.io/state-backup-digest"
	StateBackupResourcesAnnotation   = "captf.io/state-backup-resources"
	StateBackupSetAnnotation         = "captf.io/state-backup-set"
	StateBackupChunkAnnotation       = "captf.io/state-backup-chunk"
	StateBackupChunksAnnotation      = "captf.io/state-backup-chunks"
	LeaseOpAnnotation                = "captf.io/lease-op"
	LeaseAcquiredAtAnnotation        = "captf.io/lease-acquired-at"
	SourceHashAnnotation             = "captf.io/source-hash"
	IdentityAnnotation               = "captf.io/identity"
	ImageAnnotation                  = "captf.io/image"
	ImageDigestAnnotation            = "captf.io/image-digest"
	AppliedAnnotation                = "captf.io/applied"
	BookkeptAnnotation               = "captf.io/bookkept"
	InterruptedAnnotation            = "captf.io/interrupted"
	DriftRemediationAnnotation       = "captf.io/drift-remediation"
	DestructivePlanBlockedAnnotation = "captf.io/destructive-plan-blocked"
	PlanChangedAnnotation            = "captf.io/plan-changed"
	PlanUnreadableAnnotation         = "captf.io/plan-unreadable"
	ApprovedPlanAnnotation           = "captf.io/approved-plan"
	RestoreSerialAnnotation          = "captf.io/restore-serial"
	EndpointSourceAnnotation         = "captf.io/endpoint-source"
	RemediationRequestedAnnotation   = "captf.io/remediation-requested"
	InterruptedApplyAnnotation       = "captf.io/interrupted-apply"
	// SafeToEvictAnnotation is set to "false" on runner pods.
	SafeToEvictAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// Values of captf.io/lease and captf.io/endpoint-source.
const (
	LeaseRun             = "run"
	LeaseCluster         = "cluster"
	EndpointSourceUser   = "user"
	EndpointSourceModule = "module"
)

// Cluster API, clusterctl and autoscaler keys CAPTF reads or writes.
const (
	RemediateMachineAnnotation  = "cluster.x-k8s.io/remediate-machine"
	ReplicasManagedByAnnotation = "cluster.x-k8s.io/replicas-managed-by"
	AutoscalerMinSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	AutoscalerMaxSizeAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	BlockMoveAnnotation         = "clusterctl.cluster.x-k8s.io/block-move"
	DeleteForMoveAnnotation     = "clusterctl.cluster.x-k8s.io/delete-for-move"
	MoveLabel                   = "clusterctl.cluster.x-k8s.io/move"
	MoveHierarchyLabel          = "clusterctl.cluster.x-k8s.io/move-hierarchy"
	ProviderLabel               = "cluster.x-k8s.io/provider"
	// ReplicasManagedByCAPTF is the value CAPTF claims
	// cluster.x-k8s.io/replicas-managed-by with.
	ReplicasManagedByCAPTF = "captf"
)

// Finalizers (TerraformClusterIdentity has none).
const (
	TerraformClusterFinalizer     = "terraformcluster.infrastructure.cluster.x-k8s.io"
	TerraformMachineFinalizer     = "terraformmachine.infrastructure.cluster.x-k8s.io"
	TerraformMachinePoolFinalizer = "terraformmachinepool.infrastructure.cluster.x-k8s.io"
)
