package lifecycle

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// Object is a TerraformCluster, TerraformMachine or TerraformMachinePool.
type Object = infrav1.Workload

// Adapter is what one workload kind adds to the shared flow.
type Adapter interface {
	// Kind is the workload kind whose objects the adapter reconciles.
	Kind() infrav1.WorkloadKind

	// Role is the module role the kind runs.
	Role() contract.Role

	// LookupOwner finds the object's Cluster API owner, its Cluster and (for
	// a machine or pool) its TerraformCluster, filling p.Cluster,
	// p.TerraformCluster and p.ClusterName. It returns the
	// DependenciesReady wait (reason and message) when the owner lookup or
	// an owner gate is not satisfied, or nil.
	LookupOwner(ctx context.Context, p *Pass) (*Wait, error)

	// BuildInputs renders the object's current inputs into p.Inputs, or
	// reports in p.Inputs why it could not (a dependency wait, too large),
	// or that nothing is rendered (a provisioned TerraformMachine).
	BuildInputs(ctx context.Context, p *Pass) error

	// ObserveOutputs decodes the state's root outputs (p.State, read this
	// pass) into the object's status and the OutputsValid and
	// InfrastructureHealthy conditions, and latches provisioned. A
	// TerraformCluster also writes the module's control-plane endpoint
	// back into its spec here, once.
	ObserveOutputs(ctx context.Context, p *Pass) error

	// After runs the kind's own steps once the shared flow has decided and
	// acted, when no Job is active: a machine's remediation annotation on
	// its Machine, a pool's replica write-back to its MachinePool. A
	// TerraformCluster has none.
	After(ctx context.Context, p *Pass) error

	// Fields returns the kind's own spec and status fields the shared flow
	// reads or writes.
	Fields(obj Object) KindFields

	// Observe adds to the decision's observation what only the kind
	// knows: a cluster's apply policy and plan, a machine's remediation, a
	// pool's membership.
	Observe(p *Pass, obs *decide.Observation)
}

// KindFields are the fields of one object that only some kinds have and
// the shared flow reads or writes; a kind without a field leaves it nil.
type KindFields struct {
	// UnhealthySamples is a TerraformMachine's status.unhealthySamples.
	UnhealthySamples *int32
	// AnnotateMachine is a TerraformMachine's
	// spec.remediation.annotateMachine.
	AnnotateMachine bool
}

// PlanKeeper is implemented by the adapter of a kind that guards its
// applies (Capabilities.GuardsApplies): it keeps the plan awaiting approval
// in the object's status (book: Plan Approval).
type PlanKeeper interface {
	// PlanPreview returns where the object keeps its plan (status.plan).
	PlanPreview(obj Object) **infrav1.PlanPreview
}

// plan returns where the pass's object keeps its plan awaiting approval,
// nil for a kind whose adapter keeps none.
func (f *Flow) plan(p *Pass) **infrav1.PlanPreview {
	if k, ok := f.Adapter.(PlanKeeper); ok {
		return k.PlanPreview(p.Obj)
	}
	return nil
}

// Wait is a reason (and message) the object waits on.
type Wait struct {
	Reason  string
	Message string
	// False reports the condition with status False instead of Unknown
	// (the default). The owner lookups set it where the book's
	// DependenciesReady is False: an owner or Cluster that is gone, an
	// owner that fails the back-reference checks, a Cluster whose
	// infrastructure is not a TerraformCluster, a Machine or MachinePool
	// owner reference still pending (reference-facts §1.3).
	False bool
	// metric is the reason label of captf_lease_waits_total, for a lease
	// wait.
	metric string
}

// InputsOutcome is what building the current inputs found.
type InputsOutcome struct {
	// Status says whether inputs were built.
	Status decide.InputsStatus
	// Rendered are the rendered inputs when Status is InputsBuilt (and, for
	// InputsTooLarge, the oversized render).
	Rendered *inputs.Rendered
	// Reason and Message explain a wait or a refusal (a DependenciesReady
	// or ApplyJobSucceeded reason).
	Reason  string
	Message string
	// Image is the image the inputs were rendered for.
	Image string
}

// Pass is everything one reconcile of one object knows. The flow fills it
// step by step; adapters read and add to it.
type Pass struct {
	Obj  Object
	Kind infrav1.WorkloadKind
	Now  time.Time
	// fromVersion is the resourceVersion the pass started from; writes
	// learns the one its patch helper produced.
	fromVersion string
	writes      *versionRecorder
	// snap is the object as read, with the patch helper: the base of the
	// pass's one status patch.
	snap snapshot

	// Suffix is the state's secret_suffix.
	Suffix string
	// Cluster is the owning Cluster API Cluster (nil when unknown).
	Cluster *clusterv1.Cluster
	// TerraformCluster is the cluster's TerraformCluster: the object itself
	// for a TerraformCluster; nil when unknown.
	TerraformCluster *infrav1.TerraformCluster
	// ClusterName is the Cluster's name ("" when unknown).
	ClusterName string
	// Owner is the Cluster API owner (Cluster, Machine or MachinePool), nil
	// when unknown.
	Owner client.Object
	// OwnerWait is set when the owner lookup or an owner gate is not
	// satisfied.
	OwnerWait *Wait

	// Identity is the resolved identity name.
	Identity string
	// CredentialsWait is the reason credentials are not ready ("" when they
	// are).
	CredentialsWait string

	// Policy is the effective Job policy; PolicyErr is set when it is
	// invalid.
	Policy    jobs.Policy
	PolicyErr error

	// Jobs are the object's Jobs, Records the finished ones as decide reads
	// them, Active the unfinished one.
	Jobs    []batchv1.Job
	Records []decide.JobRecord
	Active  *batchv1.Job
	// LastApplyDefinite: the newest successful apply's own outputs gave a
	// definite health reading.
	LastApplyDefinite bool

	// State is the state read this pass (nil when none or unreadable).
	State       *state.State
	StateStatus decide.StateStatus
	// ForceUnlock is a stale lock of the object's own runner to clear.
	ForceUnlock string
	// neverWritten: the base state Secret exists without a tfstate key
	// (state.ErrNeverWritten).
	neverWritten bool

	// Inputs is the current inputs outcome.
	Inputs InputsOutcome
	// Durable is the durable inputs Secret (nil when missing).
	Durable *corev1.Secret
	// durableWritten: Durable is what this pass's own write of it
	// returned, newer than the cache may be.
	durableWritten bool

	// Decision is what internal/decide chose.
	Decision decide.Decision

	// bookkept are the finished Jobs to mark bookkept once the status patch
	// has succeeded.
	bookkept []bookkept
	// afterPatch runs once the status patch has succeeded: the events and
	// counters of the Jobs bookkept this pass.
	afterPatch []func()
	// requeue is the soonest requeue asked for.
	requeue time.Duration
	// sampleOp is the operation of a Job bookkept this pass whose outputs
	// are a health sample (apply, refresh or drift); "" when none.
	sampleOp decide.Operation
	// appliedAt is when an apply bookkept this pass finished.
	appliedAt time.Time
	// health is the newest health reading's state.
	health decide.HealthState
	// dependentsExist: a deleting TerraformCluster still has machines or
	// pools.
	dependentsExist bool
	// pods are the newest runner pod of each of the object's Jobs, by Job
	// name.
	pods map[string]*corev1.Pod
	// backupSkippedUnreadable: the backup step skipped a state it could not
	// read.
	backupSkippedUnreadable bool

	// facts are what the pass's steps found, typed (facts.go); before are
	// the conditions as the pass read them.
	facts  facts
	before map[string]metav1.Condition
	// paused: the object or its Cluster is paused (facts.pausedRead says
	// whether the preamble read it).
	paused bool
	// jobCacheStale: status.activeJob names a Job the cache does not have
	// yet but the API server does.
	jobCacheStale bool
	// flow is the flow running the pass.
	flow *Flow
	// dropFinalizer: deletion is complete; the finalizer goes after the
	// status patch.
	dropFinalizer bool
	// driftOn: the object's effective drift interval is on, as the decide
	// step found it (nil when the pass did not decide).
	driftOn *bool
}

// deleting: the object has a deletion timestamp.
func (p *Pass) deleting() bool { return !p.Obj.GetDeletionTimestamp().IsZero() }

// Sample reports which operation's Job, bookkept this pass, the state's
// outputs are a health sample of ("" when none), and when an apply
// bookkept this pass finished.
func (p *Pass) Sample() (decide.Operation, time.Time) { return p.sampleOp, p.appliedAt }

// Requeue asks for the pass to run again after d (the soonest request
// wins).
func (p *Pass) Requeue(d time.Duration) {
	if d <= 0 {
		return
	}
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// Status is the object's shared status.
func (p *Pass) Status() *infrav1.WorkspaceStatus { return p.Obj.GetWorkspaceStatus() }

// Provisioned reports whether status.initialization.provisioned latched.
func (p *Pass) Provisioned() bool {
	s := p.Status()
	return s.Initialization != nil && s.Initialization.Provisioned != nil && *s.Initialization.Provisioned
}

// SetProvisioned latches provisioned.
func (p *Pass) SetProvisioned() {
	t := true
	s := p.Status()
	if s.Initialization == nil {
		s.Initialization = &infrav1.Initialization{}
	}
	s.Initialization.Provisioned = &t
}
