package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImagePullPolicy is the pull policy of a module image.
// +kubebuilder:validation:Enum=IfNotPresent;Always;Never
type ImagePullPolicy string

// SourceSpec names the module image an object runs.
type SourceSpec struct {
	// image is the OCI reference of the module image, by tag or digest; the
	// tag is the module version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// imagePullPolicy of the module container. Defaults to IfNotPresent when
	// the Job is built.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// IdentityReference names a TerraformClusterIdentity.
type IdentityReference struct {
	// name of the TerraformClusterIdentity.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// LocalObjectReference names an object in the referencing object's namespace.
type LocalObjectReference struct {
	// name of the object, a DNS subdomain.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// VariablesFormat says how a variablesFrom source's values are read.
// +kubebuilder:validation:Enum=String;JSON
type VariablesFormat string

const (
	// VariablesFormatString passes each value as a string.
	VariablesFormatString VariablesFormat = "String"
	// VariablesFormatJSON parses each value as JSON.
	VariablesFormatJSON VariablesFormat = "JSON"
)

// VariablesSource is a ConfigMap or Secret, labeled captf.io/variables=true,
// whose every data key becomes a module variable.
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.secretRef)",message="exactly one of configMapRef or secretRef must be set"
type VariablesSource struct {
	// configMapRef names a ConfigMap in the object's namespace.
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`

	// secretRef names a Secret in the object's namespace; its values are
	// declared sensitive in the generated root.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// optional lets the source be missing or unlabeled, contributing nothing.
	// Defaults to false.
	// +optional
	Optional *bool `json:"optional,omitempty"`

	// format of the source's values: String (the default) passes each as a
	// string, JSON parses each as JSON.
	// +optional
	Format VariablesFormat `json:"format,omitempty"`
}

// WorkspaceSpec holds the fields TerraformCluster, TerraformMachine and
// TerraformMachinePool share.
type WorkspaceSpec struct {
	// source is the module image this object runs.
	// +required
	Source SourceSpec `json:"source"`

	// jobs tunes the Jobs this object runs. A machine's or pool's policy is
	// merged field by field over its cluster's spec.defaults.jobs.
	// +optional
	Jobs *JobPolicy `json:"jobs,omitempty"`

	// variables are module variables, a JSON object of at most 256 keys.
	// Each key is a Terraform identifier that is neither a captf_ name, a
	// contract input of the object's role nor a module meta-argument (the
	// admission webhook checks the names). Inline variables win over
	// variablesFrom.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=256
	Variables map[string]apiextensionsv1.JSON `json:"variables,omitempty"`

	// variablesFrom lists up to 16 ConfigMaps or Secrets whose keys become
	// module variables, merged in list order (a later source wins).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	VariablesFrom []VariablesSource `json:"variablesFrom,omitempty"`
}

// JobPolicy tunes the Jobs an object runs. Every field is optional; defaults
// are resolved when a Job is built and never persisted.
// +kubebuilder:validation:XValidation:rule="!has(self.lockTimeoutSeconds) || !has(self.activeDeadlineSeconds) || self.lockTimeoutSeconds < self.activeDeadlineSeconds",message="lockTimeoutSeconds must be less than activeDeadlineSeconds"
type JobPolicy struct {
	// successfulJobsHistoryLimit is how many succeeded Jobs of each
	// operation are kept. Defaults to 3. The newest success is always kept.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit is how many failed Jobs of each operation are
	// kept. Defaults to 3. It also bounds the retry backoff (0 counts as 1).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`

	// activeDeadlineSeconds bounds each Job. Defaults to 3600.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// lockTimeoutSeconds is passed to the runtime as -lock-timeout. Defaults
	// to 300; must be less than activeDeadlineSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	LockTimeoutSeconds *int32 `json:"lockTimeoutSeconds,omitempty"`

	// serviceAccountName overrides the runner ServiceAccount (default
	// captf-runner). An override must carry the label captf.io/runner=true.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// imagePullSecrets cover both the module image and the runner image.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// resources of the module container, replacing the default (requests
	// 250m CPU and 512Mi memory, a 2Gi memory limit, no CPU limit) as a whole.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// env adds environment variables to the module container. Entries named
	// TF_* or KUBE_* are dropped.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// securityContext of the module container, applied over the defaults (no
	// privilege escalation, drop ALL, read-only root filesystem).
	// privileged, allowPrivilegeEscalation true and capabilities.add are
	// refused.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.privileged) || !self.privileged",message="privileged containers are not allowed"
	// +kubebuilder:validation:XValidation:rule="!has(self.allowPrivilegeEscalation) || !self.allowPrivilegeEscalation",message="allowPrivilegeEscalation must not be true"
	// +kubebuilder:validation:XValidation:rule="!has(self.capabilities) || !has(self.capabilities.add) || size(self.capabilities.add) == 0",message="capabilities.add is not allowed"
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// podSecurityContext of the Job's pod. Defaults to seccompProfile
	// RuntimeDefault and fsGroup 65532.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// podMetadata adds labels and annotations to the Job's pod (for a cost,
	// policy or network controller). Keys in CAPTF's own domains, and the
	// keys CAPTF or the Job controller set on the pod, are refused.
	// Inherited by key: a machine's or pool's entry wins over its cluster's
	// default of the same key.
	// +optional
	PodMetadata *PodMetadata `json:"podMetadata,omitempty"`

	// nodeSelector the Job's pod must match, at most 32 labels. Taken as a
	// whole from one side when inherited.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the Job's pod, at most 32. Taken as a whole from one
	// side when inherited.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the Job's pod (node, pod and pod anti-affinity). Taken as
	// a whole from one side when inherited.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints of the Job's pod, at most 8. Taken as a
	// whole from one side when inherited.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of the Job's pod; the PriorityClass must exist when
	// the Job is created.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// PodMetadata is the metadata a JobPolicy adds to the Job's pod.
// +kubebuilder:validation:MinProperties=1
type PodMetadata struct {
	// labels added to the pod, at most 32. Keys and values follow
	// Kubernetes' label syntax.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels map[string]string `json:"labels,omitempty"`

	// annotations added to the pod, at most 32, within Kubernetes' 256 KiB
	// limit on all of a pod's annotations together.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DriftAction is what a drift check does with what it finds.
// +kubebuilder:validation:Enum=Report;Remediate
type DriftAction string

const (
	// DriftActionReport only records drift.
	DriftActionReport DriftAction = "Report"
	// DriftActionRemediate re-applies the current inputs.
	DriftActionRemediate DriftAction = "Remediate"
)

// DriftPolicy is a TerraformCluster's drift check.
type DriftPolicy struct {
	// intervalSeconds between drift checks. Defaults to the manager's
	// --drift-default-interval; 0 disables drift checks and health samples
	// after provisioning.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`

	// action on drift: Report (the default) or Remediate.
	// +optional
	Action DriftAction `json:"action,omitempty"`
}

// MachineDriftPolicy is a TerraformMachine's drift check, and the interval a
// TerraformCluster's machines and pools inherit. A machine's drift is always
// reported, never remediated.
type MachineDriftPolicy struct {
	// intervalSeconds between drift checks. Defaults to the cluster's
	// spec.defaults.drift, else the manager's --drift-default-interval; 0
	// disables drift checks (a pool falls back to the default instead).
	// +optional
	// +kubebuilder:validation:Minimum=0
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
}

// MachinePoolDriftPolicy is a TerraformMachinePool's drift check, which can
// never be disabled.
type MachinePoolDriftPolicy struct {
	// intervalSeconds between drift checks. Unset, it is inherited from the
	// cluster's spec.defaults.drift, else the manager's
	// --drift-default-interval.
	// +optional
	// +kubebuilder:validation:Minimum=1
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`

	// action on drift: Report (the default) or Remediate. Never inherited.
	// +optional
	Action DriftAction `json:"action,omitempty"`
}

// MachineRemediation asks Cluster API to replace an unhealthy machine.
type MachineRemediation struct {
	// annotateMachine sets cluster.x-k8s.io/remediate-machine on the owning
	// Machine after unhealthyThreshold unhealthy samples, or at once when the
	// instance is terminated. Defaults to false.
	// +optional
	AnnotateMachine *bool `json:"annotateMachine,omitempty"`

	// unhealthyThreshold is how many consecutive unhealthy samples request
	// remediation. Defaults to 3.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	UnhealthyThreshold *int32 `json:"unhealthyThreshold,omitempty"`

	// healthCheckIntervalSeconds is how often a provisioned machine is
	// refreshed to resample its health while annotateMachine is true.
	// Defaults to 300.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=86400
	HealthCheckIntervalSeconds *int32 `json:"healthCheckIntervalSeconds,omitempty"`
}

// Operation is one kind of Job.
// +kubebuilder:validation:Enum=apply;destroy;drift;refresh;restore;plan
type Operation string

// The operations.
const (
	OperationApply   Operation = "apply"
	OperationDestroy Operation = "destroy"
	OperationDrift   Operation = "drift"
	OperationRefresh Operation = "refresh"
	OperationRestore Operation = "restore"
	OperationPlan    Operation = "plan"
)

// Initialization is the Cluster API v1beta2 contract's initialization status.
// +kubebuilder:validation:MinProperties=1
type Initialization struct {
	// provisioned latches true once the infrastructure is provisioned.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// ActiveJob is the Job an object is running.
type ActiveJob struct {
	// name of the Job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// operation the Job runs.
	// +required
	Operation Operation `json:"operation"`

	// attempt is the a<N> in the Job's name.
	// +required
	// +kubebuilder:validation:Minimum=1
	Attempt int32 `json:"attempt"`

	// startTime of the Job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

// RunErrorKind classifies a failed run.
// +kubebuilder:validation:Enum=image-layout;step;interrupted;blocked;plan-changed
type RunErrorKind string

// The run error kinds.
const (
	RunErrorImageLayout RunErrorKind = "image-layout"
	RunErrorStep        RunErrorKind = "step"
	RunErrorInterrupted RunErrorKind = "interrupted"
	RunErrorBlocked     RunErrorKind = "blocked"
	RunErrorPlanChanged RunErrorKind = "plan-changed"
)

// RunStep is one runtime command of a run.
type RunStep struct {
	// name of the step (init, validate, plan, apply, ...).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// exitCode of the step.
	// +required
	ExitCode int32 `json:"exitCode"`

	// durationMilliseconds of the step.
	// +optional
	// +kubebuilder:validation:Minimum=0
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
}

// RunError describes why a run failed, without any value or raw output.
type RunError struct {
	// kind of failure.
	// +required
	Kind RunErrorKind `json:"kind"`

	// step that failed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Step string `json:"step,omitempty"`

	// summary is the curated failure summary.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Summary string `json:"summary,omitempty"`
}

// DriftSummary is what a drift check found.
// +kubebuilder:validation:MinProperties=1
type DriftSummary struct {
	// add is the number of resources to create.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Add *int32 `json:"add,omitempty"`

	// change is the number of resources to update in place.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Change *int32 `json:"change,omitempty"`

	// destroy is the number of resources to delete.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Destroy *int32 `json:"destroy,omitempty"`

	// resources are the addresses that drifted (at most 20).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Resources []string `json:"resources,omitempty"`
}

// LastRun is the result of the last finished Job.
type LastRun struct {
	// job is the name of the Job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Job string `json:"job"`

	// operation the Job ran.
	// +required
	Operation Operation `json:"operation"`

	// steps are the runtime commands the Job ran.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Steps []RunStep `json:"steps,omitempty"`

	// error is set when the run failed.
	// +optional
	Error *RunError `json:"error,omitempty"`

	// drift is what a drift check found.
	// +optional
	Drift *DriftSummary `json:"drift,omitempty"`
}

// SourceStatus is the module image as last run.
type SourceStatus struct {
	// image reference as written in spec.source.image.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// imageDigest from the pod's imageID (informational).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ImageDigest string `json:"imageDigest,omitempty"`

	// runtimeVersion reported by the runtime's version -json.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
}

// StateBackup is one backup of an object's state.
type StateBackup struct {
	// serial of the backed-up state.
	// +required
	// +kubebuilder:validation:Minimum=1
	Serial int64 `json:"serial"`

	// takenAt is when the backup was taken.
	// +required
	TakenAt metav1.Time `json:"takenAt"`

	// bytes is the compressed size of the backup.
	// +required
	// +kubebuilder:validation:Minimum=1
	Bytes int64 `json:"bytes"`
}

// WorkspaceStatus holds the status fields TerraformCluster, TerraformMachine
// and TerraformMachinePool share. Nothing in it is load-bearing: all of it is
// rebuilt from the cluster's objects, so it survives clusterctl move.
type WorkspaceStatus struct {
	// conditions of the object; Ready summarises them.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization is the Cluster API contract's initialization status.
	// +optional
	Initialization *Initialization `json:"initialization,omitempty"`

	// observedGeneration is the generation the status was computed for.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// activeJob is the Job currently running, if any.
	// +optional
	ActiveJob *ActiveJob `json:"activeJob,omitempty"`

	// lastRun is the result of the last finished Job.
	// +optional
	LastRun *LastRun `json:"lastRun,omitempty"`

	// lastDriftCheck is when the last drift check finished.
	// +optional
	LastDriftCheck *metav1.Time `json:"lastDriftCheck,omitempty"`

	// lastRefresh is when the last health sample (refresh, or an apply whose
	// reading was definite) finished.
	// +optional
	LastRefresh *metav1.Time `json:"lastRefresh,omitempty"`

	// pendingRefreshes counts the consecutive pending health samples.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PendingRefreshes int32 `json:"pendingRefreshes,omitempty"`

	// observedStateSerial is the newest state serial read.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedStateSerial int64 `json:"observedStateSerial,omitempty"`

	// stateSecretSuffix is the kubernetes backend's secret_suffix for this
	// object (informational).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	StateSecretSuffix string `json:"stateSecretSuffix,omitempty"`

	// source is the module image as last run.
	// +optional
	Source *SourceStatus `json:"source,omitempty"`

	// stateBackups lists the newest state backups, newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	StateBackups []StateBackup `json:"stateBackups,omitempty"`

	// lastRestoredSerial is the backup serial of the last restore attempted
	// for the current captf.io/restore-state annotation.
	// +optional
	// +kubebuilder:validation:Minimum=1
	LastRestoredSerial int64 `json:"lastRestoredSerial,omitempty"`
}
