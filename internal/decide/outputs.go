package decide

// Contract outputs a module does not declare (Module Contract, "Null
// semantics"): "An absent output (not declared in the module) is a hard
// error: OutputsValid=False/OutputsMissing, with no retry until the module
// changes."
//
// The runner finds them before its first command and leaves them out of the
// generated root, so the run itself goes on (an apply records its state, a
// destroy destroys) and its result lists them. What "the module changes"
// means here: the inputs the next Job would run change. The image
// reference is part of the inputs hash, so a new image always counts; a
// changed input other than the image counts too, since the next apply is
// then not a retry of the last one. Deleting the Job that reported the
// outputs lets one new Job run (it will report them again if nothing
// changed), as for a failed restore.

// newestChecked returns the newest Job whose runner checked the module's
// outputs, among the operations ops (all when empty).
func newestChecked(jobs []JobRecord, ops ...Operation) *JobRecord {
	var newest *JobRecord
	for i := range jobs {
		j := &jobs[i]
		if !j.OutputsChecked {
			continue
		}
		if len(ops) > 0 && !containsOp(ops, j.Op) {
			continue
		}
		if newest == nil || newer(j, newest) {
			newest = j
		}
	}
	return newest
}

func containsOp(ops []Operation, op Operation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// UndeclaredOutputs returns the contract outputs the module does not
// declare, as the newest retained Job that ran the module against the state
// (apply, refresh, drift or destroy) found them: the module whose outputs
// the state holds. It is what the adapters pass to the contract decoders as
// the facts' Undeclared list. nil when that Job found none, or no retained
// Job checked.
func UndeclaredOutputs(jobs []JobRecord) []string {
	j := newestChecked(jobs, OpApply, OpRefresh, OpDrift, OpDestroy)
	if j == nil || len(j.UndeclaredOutputs) == 0 {
		return nil
	}
	return append([]string(nil), j.UndeclaredOutputs...)
}

// nextInputsHash is the inputs hash the next apply, plan, refresh or drift
// Job would run: the freshly rendered inputs when they were built, else the
// durable inputs (a provisioned machine, or a cluster or pool whose inputs
// wait on a dependency), else the state's.
func (d *decider) nextInputsHash() string {
	o := d.o
	switch {
	case o.Inputs == InputsBuilt:
		return o.CurrentInputsHash
	case o.DurableInputsHash != "":
		return o.DurableInputsHash
	}
	return o.StateInputsHash
}

// outputsMissing: the newest Job that checked the module's outputs ran the
// inputs the next Job would run, and found contract outputs the module does
// not declare. No apply, plan, refresh or drift starts then; destroy and a
// requested restore still do (they come first in the order).
func (d *decider) outputsMissing() bool {
	j := newestChecked(d.h.jobs)
	if j == nil || len(j.UndeclaredOutputs) == 0 {
		return false
	}
	next := d.nextInputsHash()
	return next != "" && j.InputsHash == next
}
