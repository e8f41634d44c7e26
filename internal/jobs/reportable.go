package jobs

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Arming is what a Job was built able to stop on, read back from the Job
// the manager built (its labels and the runner's arguments), never from
// what the run reports.
type Arming struct {
	// Kind is the owner's kind (captf.io/owner-kind).
	Kind infrav1.WorkloadKind
	// Op is the operation (captf.io/op).
	Op infrav1.Operation
	// GuardDeletes: the runner was told to stop before a delete or
	// replace (--guard-deletes).
	GuardDeletes bool
	// DeletesApproved: the approved destructive inputs hash
	// (--allow-deletes-hash) is the Job's own (--inputs-hash), so the
	// guard lets a destructive plan through.
	DeletesApproved bool
	// ExpectPlan: the apply runs an approved plan (--expect-plan).
	ExpectPlan bool
}

// ArmingOf reads a Job's arming from its labels and its module
// container's arguments.
func ArmingOf(job *batchv1.Job) Arming {
	a := Arming{
		Kind: infrav1.WorkloadKind(job.Labels[infrav1.OwnerKindLabel]),
		Op:   infrav1.Operation(job.Labels[infrav1.OpLabel]),
	}
	var inputs, allow string
	for i := range job.Spec.Template.Spec.Containers {
		c := &job.Spec.Template.Spec.Containers[i]
		if c.Name != SourceContainer {
			continue
		}
		for _, arg := range c.Args {
			switch {
			case arg == "--guard-deletes":
				a.GuardDeletes = true
			case strings.HasPrefix(arg, "--inputs-hash="):
				inputs = strings.TrimPrefix(arg, "--inputs-hash=")
			case strings.HasPrefix(arg, "--allow-deletes-hash="):
				allow = strings.TrimPrefix(arg, "--allow-deletes-hash=")
			case strings.HasPrefix(arg, "--expect-plan="):
				a.ExpectPlan = strings.TrimPrefix(arg, "--expect-plan=") != ""
			}
		}
	}
	a.DeletesApproved = allow != "" && allow == inputs
	return a
}

// armingFlags are the runner arguments ArmingOf reads.
var armingFlags = []string{"--guard-deletes", "--inputs-hash=", "--allow-deletes-hash=", "--expect-plan="}

// armingArgs keeps of args those ArmingOf reads.
func armingArgs(args []string) []string {
	var out []string
	for _, a := range args {
		for _, f := range armingFlags {
			if a == f || (strings.HasSuffix(f, "=") && strings.HasPrefix(a, f)) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// Unreportable says why a Job armed as a cannot have ended with the error
// kind k, and is "" when it can. Only two kinds depend on the Job (book:
// Plan Approval; Retries and Backoff):
//
//   - blocked: the destructive-plan guard stopped an apply. The guard is
//     armed only on a TerraformCluster apply (an input change or a drift
//     remediation) that runs no approved plan, and a Job whose inputs hash
//     carries the destructive-plan approval goes through it. A machine or
//     pool apply, a plan, drift, refresh, destroy or restore is never
//     blocked.
//   - plan-changed: an approved apply (applyPolicy Manual, captf.io/approve-plan)
//     re-planned to another plan hash. Only a TerraformCluster apply Job
//     given the approved hash can report it.
//
// Every other kind (step, image-layout, interrupted) any Job can report.
// Either of the two from any other Job was not written by CAPTF's runner
// as built; it is a failure, which counts toward backoff.
func Unreportable(a Arming, k infrav1.RunErrorKind) string {
	var why string
	switch k {
	case infrav1.RunErrorBlocked:
		switch {
		case !a.Kind.Capabilities().GuardsApplies || a.Op != infrav1.OperationApply:
			why = "only a TerraformCluster apply has the destructive-plan guard"
		case !a.GuardDeletes || a.ExpectPlan:
			why = "the Job was not armed with the destructive-plan guard"
		case a.DeletesApproved:
			why = "the Job carries the destructive-plan approval for its inputs"
		}
	case infrav1.RunErrorPlanChanged:
		switch {
		case !a.Kind.Capabilities().GuardsApplies || a.Op != infrav1.OperationApply:
			why = "only a TerraformCluster apply runs an approved plan"
		case !a.ExpectPlan:
			why = "the Job was not given an approved plan"
		}
	}
	if why == "" {
		return ""
	}
	owner := "a " + string(a.Kind)
	if a.Kind == "" {
		owner = "an object of unknown kind"
	}
	return fmt.Sprintf("the result reports %s, which is not a result the %s Job of %s can report (%s); it counts as a failure", k, a.Op, owner, why)
}
