package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"k8s.io/klog/v2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// Step names, as they appear in the result document and the events.
const (
	StepInit        = "init"
	StepForceUnlock = "force-unlock"
	StepValidate    = "validate"
	StepPlan        = "plan"
	StepShow        = "show"
	StepApply       = "apply"
	StepRefresh     = "refresh"
	StepDestroy     = "destroy"
	StepStatePush   = "state-push"
	StepStateList   = "state-list"

	// stepPrepare names a failure to set up the run before any command.
	stepPrepare = "prepare"
)

// Guarded reports whether an apply plans first (a TerraformCluster apply:
// the destructive-plan guard, or an approved plan to match).
func (o *Options) Guarded() bool {
	return o.Op == infrav1.OperationApply && (o.GuardDeletes || o.ExpectPlan != "")
}

// CommandArgs returns the runtime arguments of a step, with the flags of
// the Runtime Environment: init, plan, apply and destroy (including
// -refresh-only) get -input=false -no-color -lock-timeout=<n>s, init also
// one -backend-config= per --backend-config; validate and show get -json
// -no-color; state push gets -force and -lock-timeout; state list and
// force-unlock get neither. drift selects the drift plan (-refresh=false);
// for apply, a non-empty planPath applies that saved plan.
func CommandArgs(o *Options, step string, drift bool, planPath, backupPath string) []string {
	common := []string{"-input=false", "-no-color", o.LockTimeoutFlag()}
	varFile := "-var-file=" + TFVarsFile
	switch step {
	case StepInit:
		args := append([]string{"init"}, common...)
		for _, bc := range o.BackendConfig {
			args = append(args, "-backend-config="+bc)
		}
		return args
	case StepForceUnlock:
		return []string{"force-unlock", "-force", o.ForceUnlock}
	case StepValidate:
		return []string{"validate", "-json", "-no-color"}
	case StepPlan:
		args := append([]string{"plan"}, common...)
		args = append(args, "-detailed-exitcode")
		if drift {
			args = append(args, "-refresh=false")
		}
		return append(args, varFile, "-out="+planPath)
	case StepShow:
		return []string{"show", "-json", "-no-color", planPath}
	case StepApply:
		args := append([]string{"apply"}, common...)
		if planPath != "" {
			return append(args, planPath)
		}
		return append(args, "-auto-approve", varFile)
	case StepRefresh:
		args := append([]string{"apply"}, common...)
		return append(args, "-refresh-only", "-auto-approve", varFile)
	case StepDestroy:
		args := append([]string{"destroy"}, common...)
		return append(args, "-auto-approve", varFile)
	case StepStatePush:
		return []string{"state", "push", "-force", o.LockTimeoutFlag(), backupPath}
	case StepStateList:
		return []string{"state", "list"}
	}
	return nil
}

// runState is one run of one operation.
type runState struct {
	o     *Options
	rec   Recorder
	ex    *executor
	doc   *result.Document
	start time.Time

	planPath   string
	backupPath string
	// plan is the plan show -json read back, held in memory only.
	plan *tfjson.Plan
	// secretStore, when set, replaces the API client of writePlanDetail.
	secretStore secretStore
	// exit is the failing step's own exit code, when a step failed.
	exit int
}

// Run runs one operation and writes its result document; it returns the
// process exit code. stop is closed when the runner is asked to stop.
func Run(o *Options, stop <-chan struct{}) int {
	r := &runState{
		o:     o,
		start: time.Now(),
		doc: &result.Document{
			Version: result.Version,
			Op:      o.Op,
			Image:   result.Image{Ref: o.Image},
			Runtime: result.Runtime{Command: append([]string(nil), o.Bin...)},
			Steps:   []result.Step{},
		},
		planPath: filepath.Join(o.Workdir, planFile),
	}
	r.rec = NewRecorder(o)
	r.ex = &executor{
		bin:         o.Bin,
		stdout:      stdStreams.out,
		stderr:      stdStreams.err,
		stopTimeout: o.StopTimeout,
		stop:        stop,
	}
	r.execute()
	return r.finish()
}

func (r *runState) execute() {
	o := r.o
	if fi, err := os.Stat(o.Providers); err == nil && fi.IsDir() {
		r.doc.Image.ProvidersMirror = true
	}
	if err := CheckLayout(o.Module, o.Bin[0]); err != nil {
		r.fail(infrav1.RunErrorImageLayout, "", err.Error())
		return
	}
	if err := r.prepare(); err != nil {
		if le := (*LayoutError)(nil); errors.As(err, &le) {
			r.fail(infrav1.RunErrorImageLayout, "", le.Error())
			return
		}
		r.fail(infrav1.RunErrorStep, stepPrepare, cleanLine(err.Error()))
		return
	}

	// version -json: informational only, never a step, never a failure.
	v := r.ex.run(stepSpec{name: "version", args: []string{"version", "-json"}, stdout: stdoutLogAndCapture})
	if v.interrupted {
		r.fail(infrav1.RunErrorInterrupted, "", "interrupted before the first step")
		return
	}
	r.doc.Runtime.Version = RuntimeVersion(v.stdout)
	if r.doc.Runtime.Version == "" {
		klog.InfoS("Runtime version unknown; continuing", "exit", v.exit)
	}
	r.rec.Emit(EventNormal, infrav1.RunStartedEvent, string(o.Op),
		fmt.Sprintf("Run %s started: image %s, runtime %s", o.Op, orNone(o.Image), orNone(r.doc.Runtime.Version)))

	if !r.initBackend() {
		return
	}
	switch o.Op {
	case infrav1.OperationApply:
		r.apply()
	case infrav1.OperationPlan:
		if _, ok := r.step(r.spec(StepValidate)); ok {
			r.planOp()
		}
	case infrav1.OperationDrift:
		if _, ok := r.step(r.spec(StepRefresh)); ok {
			r.drift()
		}
	case infrav1.OperationRefresh:
		r.step(r.spec(StepRefresh))
	case infrav1.OperationDestroy:
		r.changeStep(StepDestroy, "")
	case infrav1.OperationRestore:
		r.restore()
	}
}

// prepare writes the CLI configuration, rewrites the environment and builds
// the generated root (and, for a restore, the backup file).
func (r *runState) prepare() error {
	o := r.o
	if err := os.MkdirAll(o.Workdir, 0o755); err != nil {
		return &PrepareError{fmt.Errorf("creating the work directory %s: %w", o.Workdir, err)}
	}
	cli, err := WriteCLIConfig(o.Workdir, o.Providers)
	if err != nil {
		return err
	}
	env := RewriteEnv(os.Environ(), o.Workdir, cli)
	if len(env.Dropped) > 0 {
		klog.InfoS("Dropped environment variables from the runtime's environment", "names", env.Dropped)
	}
	if cli != "" {
		klog.InfoS("Providers come from the image's mirror", "mirror", o.Providers, "cliConfig", cli)
	}
	if err := os.MkdirAll(env.TmpDir, 0o755); err != nil {
		return &PrepareError{fmt.Errorf("creating TMPDIR %s: %w", env.TmpDir, err)}
	}
	restore := o.Op == infrav1.OperationRestore
	root, err := PrepareRoot(o.Workdir, o.Config, restore)
	if err != nil {
		return err
	}
	if restore {
		if r.backupPath, err = PrepareBackup(o.Workdir, o.Config, o.RestoreChunks); err != nil {
			return err
		}
	} else {
		locked, err := CopyLockFile(o.Module, root)
		if err != nil {
			return err
		}
		if locked {
			klog.InfoS("Provider versions and hashes come from the module's lock file", "lockFile", filepath.Join(o.Module, LockFile))
		}
		if err := r.matchOutputs(root); err != nil {
			return err
		}
		values, err := sensitiveValuesOf(root)
		if err != nil {
			return &PrepareError{fmt.Errorf("reading the sensitive values of the generated root: %w", err)}
		}
		r.ex.sensitive = values
	}
	r.ex.dir = root
	r.ex.env = env.Env
	return nil
}

// matchOutputs keeps in the generated root only the contract outputs the
// module declares, and records the others in the result document. A module
// that lacks a contract output is reported, not failed: the run goes on, so
// an apply still records its state and a destroy still destroys, and the
// manager reports OutputsValid=False/OutputsMissing (Module Contract, "Null
// semantics"). When the module's files cannot be parsed, the root stays as
// rendered and the runtime reports the problem.
func (r *runState) matchOutputs(root string) error {
	declared, err := DeclaredOutputs(r.o.Module)
	if err != nil {
		klog.InfoS("Module outputs not checked; the generated root keeps every contract output", "reason", err.Error())
		return nil
	}
	undeclared, err := PruneRootOutputs(root, declared)
	if err != nil {
		return err
	}
	if len(undeclared) > maxUndeclaredOutputs {
		undeclared = undeclared[:maxUndeclaredOutputs]
	}
	r.doc.Module = &result.Module{UndeclaredOutputs: append([]string{}, undeclared...)}
	if len(undeclared) > 0 {
		klog.InfoS("The module does not declare these contract outputs; the generated root leaves them out", "outputs", undeclared)
	}
	return nil
}

func (r *runState) spec(step string) stepSpec {
	s := stepSpec{name: step, args: CommandArgs(r.o, step, r.o.Op == infrav1.OperationDrift, "", r.backupPath)}
	switch step {
	case StepValidate:
		s.stdout = stdoutLogAndCapture
	case StepPlan:
		s.args = CommandArgs(r.o, step, r.o.Op == infrav1.OperationDrift, r.planPath, "")
		s.accept = []int{2}
	case StepShow:
		s.args = CommandArgs(r.o, step, false, r.planPath, "")
		s.stdout = stdoutCaptureOnly
	case StepStateList:
		s.stdout = stdoutLogAndCapture
	case StepForceUnlock:
		s.acceptStderr = unlockedAlready
	}
	return s
}

// initBackend runs init, then force-unlock when a stale lock ID was given.
func (r *runState) initBackend() bool {
	if _, ok := r.step(r.spec(StepInit)); !ok {
		return false
	}
	if r.o.ForceUnlock == "" {
		return true
	}
	_, ok := r.step(r.spec(StepForceUnlock))
	return ok
}

// apply runs an apply: directly for an unguarded apply, or plan first for
// a guarded one (destructive-plan guard, approved plan hash).
func (r *runState) apply() {
	if _, ok := r.step(r.spec(StepValidate)); !ok {
		return
	}
	if !r.o.Guarded() {
		r.changeStep(StepApply, "")
		return
	}
	a, changed, ok := r.planAndRead()
	if !ok {
		return
	}
	if !changed {
		klog.InfoS("Plan has no changes; skipping apply")
		return
	}
	r.emitPlanSummary(a)
	o := r.o
	switch {
	case o.ExpectPlan != "":
		if a.Hash != o.ExpectPlan {
			r.doc.Plan = a.ResultPlan()
			r.writePlanDetail(r.plan, a)
			r.fail(infrav1.RunErrorPlanChanged, "",
				fmt.Sprintf("plan hash %s differs from the approved %s; nothing was applied", a.Hash, o.ExpectPlan))
			return
		}
		klog.InfoS("Plan matches the approved plan hash", "hash", a.Hash)
	case o.GuardDeletes:
		if d := a.Destructive(); len(d) > 0 {
			if o.AllowDeletesHash == "" || o.AllowDeletesHash != o.InputsHash {
				r.doc.Plan = a.ResultPlan()
				r.writePlanDetail(r.plan, a)
				r.fail(infrav1.RunErrorBlocked, "", blockedSummary(d, o.InputsHash))
				return
			}
			klog.InfoS("Destructive plan approved for these inputs", "inputsHash", o.InputsHash, "resources", len(d))
		}
	}
	r.changeStep(StepApply, r.planPath)
}

// blockedSummary names the deleted or replaced resources (addresses and
// actions only) within the summary cap.
func blockedSummary(d []PlanChange, inputsHash string) string {
	head := fmt.Sprintf("plan deletes or replaces %d resource(s); approve inputs hash %s to apply: ", len(d), orNone(inputsHash))
	return head + joinCapped(Labeled(d), ", ", result.MaxSummaryBytes-len(head))
}

// planOp runs a plan Job's plan and reads it back.
func (r *runState) planOp() {
	a, changed, ok := r.planAndRead()
	if !ok {
		return
	}
	r.doc.Plan = a.ResultPlan()
	if changed {
		r.writePlanDetail(r.plan, a)
	}
	r.emitPlanSummary(a)
}

// drift runs the drift plan (-refresh=false) and reads it back.
func (r *runState) drift() {
	a, changed, ok := r.planAndRead()
	if !ok {
		return
	}
	r.doc.Drift = a.ResultDrift(changed)
	r.emitPlanSummary(a)
}

// planAndRead runs plan -detailed-exitcode and, when it reports changes
// (exit 2), show -json on the saved plan. changed is false for exit 0, with
// the empty analysis.
func (r *runState) planAndRead() (PlanAnalysis, bool, bool) {
	out, ok := r.step(r.spec(StepPlan))
	if !ok {
		return PlanAnalysis{}, false, false
	}
	if out.exit == 0 {
		return AnalyzePlan(nil), false, true
	}
	var a PlanAnalysis
	show := r.spec(StepShow)
	show.verify = func(out stepOutcome) error {
		p, err := ParsePlan(out.stdout)
		if err != nil {
			return err
		}
		a = AnalyzePlan(p)
		r.plan = p
		return nil
	}
	if _, ok := r.step(show); !ok {
		return PlanAnalysis{}, false, false
	}
	klog.InfoS("Plan read", "hash", a.Hash, "add", a.Add, "change", a.Change, "destroy", a.Destroy,
		"import", a.Import, "move", a.Move, "outputs", a.Outputs)
	return a, true, true
}

func (r *runState) emitPlanSummary(a PlanAnalysis) {
	r.rec.Emit(EventNormal, infrav1.PlanSummaryEvent, StepPlan, "Plan: "+a.CountsText())
}

// changeStep runs an apply or destroy step and records the changes from
// its summary line.
func (r *runState) changeStep(step, planPath string) {
	var changes *result.Changes
	s := r.spec(step)
	if step == StepApply {
		s.args = CommandArgs(r.o, step, false, planPath, "")
	}
	s.onLine = func(line string) {
		if c, ok := ParseChangesLine(line); ok {
			changes = c
		}
	}
	if _, ok := r.step(s); !ok {
		return
	}
	if changes != nil {
		r.doc.Changes = changes
		note := fmt.Sprintf("Resources: %d added, %d changed, %d destroyed", changes.Add, changes.Change, changes.Destroy)
		if changes.Import > 0 {
			note += fmt.Sprintf(", %d imported", changes.Import)
		}
		r.rec.Emit(EventNormal, infrav1.ResourcesChangedEvent, step, note)
	}
}

// restore pushes the backup and lists the restored state.
func (r *runState) restore() {
	if _, ok := r.step(r.spec(StepStatePush)); !ok {
		return
	}
	list := r.spec(StepStateList)
	list.verify = func(out stepOutcome) error {
		n := ManagedResources(out.stdout)
		klog.InfoS("Restored state listed", "managedResources", n)
		if r.o.RestoreResources > 0 && n == 0 {
			return fmt.Errorf("state list shows no managed resource after the push, but the backup holds %d", r.o.RestoreResources)
		}
		return nil
	}
	r.step(list)
}

// step runs one step, records it, emits its events and, on failure,
// records the error. ok is false when the run must stop.
func (r *runState) step(s stepSpec) (stepOutcome, bool) {
	if r.ex.stopped() {
		r.fail(infrav1.RunErrorInterrupted, "", fmt.Sprintf("interrupted before step %s", s.name))
		return stepOutcome{}, false
	}
	r.rec.Emit(EventNormal, infrav1.StepStartedEvent, s.name, fmt.Sprintf("Step %s started", s.name))
	out := r.ex.run(s)
	r.doc.Steps = append(r.doc.Steps, result.Step{Name: s.name, Exit: out.exit, Seconds: out.seconds})
	klog.InfoS("Step finished", "step", s.name, "exit", out.exit, "seconds", fmt.Sprintf("%.3f", out.seconds))

	var kind infrav1.RunErrorKind
	var summary string
	switch {
	case out.interrupted && !out.accepted(s):
		kind, summary = infrav1.RunErrorInterrupted, fmt.Sprintf("stopped by SIGTERM during step %s", s.name)
	case out.startErr != nil:
		kind, summary = infrav1.RunErrorStep, fmt.Sprintf("step %s could not start: %s", s.name, cleanLine(startErrText(out.startErr)))
	case out.accepted(s):
	case s.acceptStderr != nil && s.acceptStderr(out.stderrTail):
		klog.InfoS("Lock already released; nothing to force-unlock", "step", s.name)
	default:
		kind = infrav1.RunErrorStep
		var validateJSON []byte
		if s.name == StepValidate {
			validateJSON = out.stdout
		}
		summary = FailureSummary(s.name, out.exit, validateJSON, out.stderrTail)
		r.exit = out.exit
	}
	if kind == "" && s.verify != nil {
		if err := s.verify(out); err != nil {
			kind, summary = infrav1.RunErrorStep, cleanLine(err.Error())
		}
	}
	if kind != "" {
		r.rec.Emit(EventWarning, infrav1.StepFailedEvent, s.name,
			fmt.Sprintf("Step %s failed (exit %d) after %.1fs: %s", s.name, out.exit, out.seconds, summary))
		r.fail(kind, s.name, summary)
		return out, false
	}
	r.rec.Emit(EventNormal, infrav1.StepSucceededEvent, s.name,
		fmt.Sprintf("Step %s succeeded (exit %d) in %.1fs", s.name, out.exit, out.seconds))
	return out, true
}

// startErrText describes why the runtime could not start without the
// arguments.
func startErrText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s %s: %v", pe.Op, pe.Path, pe.Err)
	}
	return err.Error()
}

func (r *runState) fail(kind infrav1.RunErrorKind, step, summary string) {
	if r.doc.Error != nil {
		return
	}
	r.doc.Error = &result.Error{
		Kind: kind,
		Step: result.StepName(step),
		Tail: text.Truncate(summary, result.MaxSummaryBytes),
	}
	klog.InfoS("Run failed", "kind", kind, "step", step, "summary", r.doc.Error.Tail)
}

// finish emits RunFinished, writes the result document and returns the
// exit code.
func (r *runState) finish() int {
	elapsed := time.Since(r.start).Seconds()
	code := ExitOK
	outcome := "succeeded"
	evType := EventNormal
	if e := r.doc.Error; e != nil {
		code = ExitFailure
		if e.Kind == infrav1.RunErrorStep && r.exit > 1 {
			code = r.exit
		}
		outcome = "failed (" + string(e.Kind) + ")"
		evType = EventWarning
	}
	r.rec.Emit(evType, infrav1.RunFinishedEvent, string(r.o.Op),
		fmt.Sprintf("Run %s %s in %.1fs", r.o.Op, outcome, elapsed))
	r.rec.Close()

	b, err := result.Marshal(r.doc)
	if err != nil {
		klog.ErrorS(err, "Encoding the result document failed")
		return max(code, ExitFailure)
	}
	if err := os.WriteFile(r.o.Result, b, 0o644); err != nil {
		klog.ErrorS(err, "Writing the result document failed", "path", r.o.Result)
	}
	klog.InfoS("Run finished", "op", r.o.Op, "outcome", outcome, "seconds", fmt.Sprintf("%.3f", elapsed), "result", string(b))
	klog.Flush()
	return code
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}
