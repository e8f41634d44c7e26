package v1alpha1

// Capabilities are what the objects of one workload kind do differently in
// the shared reconcile flow, each named after the book's reason for it.
// Every workload kind declares its own (Workload.Capabilities), so the
// reconcile flow and its decisions branch on a capability, never on a
// kind's name, and a new kind does not compile until it has said what it
// does. They are Go facts about a kind, never part of an object.
// +kubebuilder:object:generate=false
type Capabilities struct {
	// MutableInputs: a change of the object's inputs re-applies it, and so
	// does a failed apply, an apply Job deleted while it ran, or drift with
	// action Remediate (The Reconcile Lifecycle, steps 5 to 7; Job Inputs,
	// "TerraformCluster (mutable)"). Without it the kind is immutable
	// infrastructure that Cluster API replaces rather than changes: its
	// drift is always reported, never remediated (Drift); it destroys,
	// refreshes and checks drift from its durable inputs only (Drift and
	// Health); an apply of it retries only through NoState or
	// StateWithoutInputsHash, so a state that lost the inputs hash after an
	// apply succeeded is lost; and an apply Job deleted while it ran records
	// nothing (Retries and Backoff).
	MutableInputs bool `json:"-"`

	// HasMembers: the kind is a Cluster's infrastructure, the
	// spec.infrastructureRef of a Cluster, whose machines and pools belong
	// to it. Its deletion waits until no member carrying its cluster name
	// remains in the namespace, and DeletionBlocked reports the wait (The
	// Reconcile Lifecycle, "Deletion order").
	HasMembers bool `json:"-"`

	// ClusterMember: the object belongs to a Cluster whose infrastructure
	// is of a kind with members. It finds the Cluster by its
	// cluster-name label and the cluster's infrastructure through the
	// Cluster's spec.infrastructureRef, and inherits that object's
	// spec.defaults (identityRef, jobs, drift.intervalSeconds), which never
	// apply to the cluster itself (The Kinds, "What a cluster passes to its
	// machines and pools").
	ClusterMember bool `json:"-"`

	// TakesClusterLease: the kind's apply, destroy and restore Jobs take
	// the Cluster's write lease and wait for the members' operations, which
	// in turn wait while that lease is held (The Reconcile Lifecycle, "Run
	// leases and the cluster operation gate"). The lease goes with the
	// object at cleanup.
	TakesClusterLease bool `json:"-"`

	// GuardsApplies: every apply but the first (no state yet, with nothing
	// to break) is gated: under spec.applyPolicy Manual by a plan Job and
	// its approval, otherwise by the destructive-plan guard (Plan
	// Approval).
	GuardsApplies bool `json:"-"`

	// RefreshesAfterApply: a successful apply is followed by a refresh, so
	// addresses and health reach status at once, unless the apply's own
	// outputs gave a definite reading, which then stands in for that
	// refresh (Drift and Health, "What runs, and when"; The Reconcile
	// Lifecycle, schedule step 1).
	RefreshesAfterApply bool `json:"-"`

	// RefreshesMembership: the kind keeps a membership current. It refreshes
	// on its membershipRefreshIntervalSeconds cadence whatever the drift
	// schedule, and every 30 s flat while the membership converges or its
	// health reads pending, since the two converge together, instead of the
	// pending backoff (Machine Pools; Drift and Health).
	RefreshesMembership bool `json:"-"`

	// DriftAlwaysOn: drift checks cannot be turned off: an interval of 0,
	// own or inherited, falls back to the manager's default, because the
	// periodic drift Job is what feeds a refreshed instance count into a
	// plan (Drift and Health).
	DriftAlwaysOn bool `json:"-"`

	// Remediated: the kind's instance is replaced by Cluster API when it is
	// unhealthy. It counts consecutive unhealthy samples, and with
	// spec.remediation.annotateMachine it refreshes on the health-check
	// interval once provisioned and keeps
	// cluster.x-k8s.io/remediate-machine on its Machine in step with its
	// health (Machine Remediation; Drift and Health, "Unhealthy samples").
	Remediated bool `json:"-"`

	// ProviderIDNamesInstance: the module's provider_id output names the
	// object's one instance. Provisioned needs it non-null, and once
	// provisioned a provider_id that turns null or empty reads
	// Unknown/ProviderIDMissing, then InstanceTerminated: the instance is
	// gone, whatever the health output says (Contract - Machine Role,
	// "Provisioned rule"; Drift and Health).
	ProviderIDNamesInstance bool `json:"-"`

	// ProvisionedNeedsValidOutputs: provisioned latches only once the
	// role's required outputs are valid (Contract - Cluster Role,
	// "Provisioned rule").
	ProvisionedNeedsValidOutputs bool `json:"-"`

	// ReadyReportsReapply: once provisioned, Ready still summarises
	// ApplyJobSucceeded, so a failed re-apply shows in Ready. A pool is
	// re-applied on every bootstrap rotation; a cluster's Ready, which is
	// the Cluster's InfrastructureReady, leaves it out, since False there
	// would suspend every MachineHealthCheck of the Cluster (Drift and
	// Health, "InfrastructureHealthy and Ready"; reference-facts §1.1).
	ReadyReportsReapply bool `json:"-"`
}

// Capabilities implements Workload: a TerraformCluster is mutable, is its
// Cluster's infrastructure with machines and pools as members, takes the
// Cluster's write lease, guards its applies, and is provisioned once its
// required outputs are valid.
func (*TerraformCluster) Capabilities() Capabilities {
	return Capabilities{
		MutableInputs:                true,
		HasMembers:                   true,
		TakesClusterLease:            true,
		GuardsApplies:                true,
		ProvisionedNeedsValidOutputs: true,
	}
}

// Capabilities implements Workload: a TerraformMachine is immutable, a
// member of its cluster, refreshed after an apply, remediated by Cluster
// API, and its provider_id names its one instance.
func (*TerraformMachine) Capabilities() Capabilities {
	return Capabilities{
		ClusterMember:           true,
		RefreshesAfterApply:     true,
		Remediated:              true,
		ProviderIDNamesInstance: true,
	}
}

// Capabilities implements Workload: a TerraformMachinePool is mutable, a
// member of its cluster, refreshed after an apply and on its membership
// cadence, never without drift checks, and a failed re-apply of it shows in
// Ready.
func (*TerraformMachinePool) Capabilities() Capabilities {
	return Capabilities{
		MutableInputs:       true,
		ClusterMember:       true,
		RefreshesAfterApply: true,
		RefreshesMembership: true,
		DriftAlwaysOn:       true,
		ReadyReportsReapply: true,
	}
}

// Capabilities returns the capabilities the kind's objects declare; none
// for anything that is not a workload kind. It allocates nothing: it is
// asked once per object when a namespace's objects are walked.
func (k WorkloadKind) Capabilities() Capabilities {
	return kindCapabilities[k]
}

// kindCapabilities holds each workload kind's declared capabilities.
var kindCapabilities = func() map[WorkloadKind]Capabilities {
	m := map[WorkloadKind]Capabilities{}
	for _, k := range WorkloadKinds() {
		m[k] = k.NewObject().Capabilities()
	}
	return m
}()

// KindsWith returns the workload kinds whose capabilities satisfy has, in
// WorkloadKinds' order.
func KindsWith(has func(Capabilities) bool) []WorkloadKind {
	var out []WorkloadKind
	for _, k := range WorkloadKinds() {
		if has(k.Capabilities()) {
			out = append(out, k)
		}
	}
	return out
}
