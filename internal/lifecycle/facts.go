package lifecycle

import (
	batchv1 "k8s.io/api/batch/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// facts are what the steps of one pass found, typed. A step fills its own
// field and sets no condition; the status step sets every condition from
// these facts (and the few Pass fields that are facts themselves: the
// owner wait, the inputs outcome, the active Job, the decision), once,
// in conditions_set.go. So which finding wins is written in one setter per
// condition, and not decided by the order the steps happen to run in.
type facts struct {
	// pausedRead: the preamble read whether the object or its Cluster is
	// paused (Pass.paused), which it does on every pass that finds the
	// object, from the first.
	pausedRead bool
	// dependenciesChecked: the pass built the inputs, so it knows whether
	// the object waits for anything (a source, the Cluster's
	// infrastructure) besides its owner.
	dependenciesChecked bool
	// credentials is the credentials step's outcome, nil when it did not
	// run.
	credentials *identity.Credentials
	// results are the Jobs bookkept this pass, oldest first.
	results []jobResult
	// vanished names an apply Job that disappeared while it ran.
	vanished string
	// running is the Job the activeJob step found running.
	running *batchv1.Job
	// started is the Job this pass created.
	started *startedJob
	// refusal is the operation this pass could not start, and why.
	refusal *refusal
	// acted: the act step ran on the pass's decision.
	acted bool
	// state is this pass's reading of the state, nil when it read none.
	state *stateReading
	// stateNoInputsHash: decide found a state that records no inputs hash
	// where one is needed (a TerraformMachine's).
	stateNoInputsHash bool
	// foreignState are the Secrets that carry the object's state name but
	// not CAPTF's owner labels for it, found when deletion would delete
	// them.
	foreignState []string
	// outputs is this pass's verdict on the state's outputs.
	outputs *contract.Verdict
	// outputsMissing: decide waits on a module known to lack the contract
	// outputs missingOutputs, and this pass read no outputs of its own.
	outputsMissing bool
	missingOutputs []string
	// health is this pass's InfrastructureHealthy reading.
	health *verdict
	// endpoint is a provisioned TerraformCluster's endpoint finding.
	endpoint *bool
	// autoscaling is a TerraformMachinePool's autoscaling finding.
	autoscaling *Autoscaling
}

// jobResult is one Job bookkept this pass.
type jobResult struct {
	name string
	op   infrav1.Operation
	c    *jobs.Classification
	// remediation: the Job is an apply that remediates drift.
	remediation bool
	// remediate: a drift Job's finding is remediated (the effective drift
	// action is Remediate), not only reported.
	remediate bool
	// plan is the plan the Job recorded for approval, nil when none.
	plan *planRecord
}

// planRecord is a plan put in status.plan for approval, with the approve
// command in its message.
type planRecord struct {
	reason, message string
}

// startedJob is a Job this pass created.
type startedJob struct {
	name string
	op   infrav1.Operation
	// remediation: an apply that remediates drift.
	remediation bool
}

// refusalCause is why a pass could not start an operation.
type refusalCause int

const (
	// refusedLease: a lease is held by another run (wait says which).
	refusedLease refusalCause = iota + 1
	// refusedJobPolicy: the effective Job policy is invalid.
	refusedJobPolicy
	// refusedJobInvalid: the Job cannot be built or the API server refused
	// it.
	refusedJobInvalid
	// refusedJobNameTaken: a Job or per-run Secret that is not CAPTF's has
	// the run's name.
	refusedJobNameTaken
	// refusedDurableMissing: the durable inputs Secret an operation needs
	// is gone.
	refusedDurableMissing
	// refusedBackupNotFound: the requested restore names no backup.
	refusedBackupNotFound
)

// refusal is an operation a pass could not start, and why. detail is the
// cause's own text: the policy error, the refusal message, the missing
// Secret's name, the quoted serial.
type refusal struct {
	op     infrav1.Operation
	cause  refusalCause
	wait   *Wait
	detail string
}

// stateOutcome is what reading the state found.
type stateOutcome int

const (
	stateFound stateOutcome = iota + 1
	stateNotFound
	stateLost
	stateUnreadable
)

// stateReading is one reading of the state: its outcome, and for an
// unreadable one the StateReadable reason and what was wrong.
type stateReading struct {
	outcome stateOutcome
	reason  string
	detail  string
	// neverWritten: a lost state's base Secret exists without a tfstate
	// key.
	neverWritten bool
}

// Autoscaling is what a TerraformMachinePool's adapter found about its
// autoscaling (AutoscalingActive, reference-facts §1.14).
type Autoscaling struct {
	Active  bool
	Reason  string
	Message string
}

// ObserveEndpoint records whether a provisioned TerraformCluster has a
// valid control plane endpoint (EndpointAvailable).
func (p *Pass) ObserveEndpoint(available bool) { p.facts.endpoint = &available }

// ObserveAutoscaling records a TerraformMachinePool's autoscaling finding
// (AutoscalingActive).
func (p *Pass) ObserveAutoscaling(a Autoscaling) { p.facts.autoscaling = &a }
