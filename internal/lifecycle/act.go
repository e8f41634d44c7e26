package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// act carries out the decision.
func (f *Flow) act(ctx context.Context, p *Pass) error {
	d := p.Decision
	p.facts.acted = true
	if d.DriftRequestAnswered {
		consumeDriftRequest(p)
	}
	switch {
	case d.Op == decide.OpDropFinalizer:
		return f.cleanup(ctx, p)
	case d.Op.IsJob():
		return f.startJob(ctx, p)
	}
	switch d.Reason {
	case decide.ReasonJobCacheStale, decide.ReasonJobRunning, decide.ReasonPaused:
		// Nothing was read to report on: the conditions stay as they are.
	default:
		f.recordWait(p)
	}
	p.Requeue(d.RequeueAfter)
	return nil
}

// recordWait records what a wait refuses or found, for the conditions it
// is reported on (a wait on the cluster's machines and pools is the
// decision itself).
func (f *Flow) recordWait(p *Pass) {
	switch p.Decision.Reason {
	case decide.ReasonJobPolicyInvalid:
		msg := ""
		if p.PolicyErr != nil {
			msg = p.PolicyErr.Error()
		}
		p.facts.refusal = &refusal{op: infrav1.OperationApply, cause: refusedJobPolicy, detail: msg}
	case decide.ReasonRestoreBackupNotFound:
		p.facts.refusal = &refusal{op: infrav1.OperationRestore, cause: refusedBackupNotFound,
			detail: quoteCapped(p.Obj.GetAnnotations()[infrav1.RestoreStateAnnotation], maxEchoBytes)}
	case decide.ReasonStateLost:
		p.facts.stateNoInputsHash = true
	case decide.ReasonOutputsMissing:
		// The module lacks contract outputs; without state this pass read
		// no outputs, so the finding of the Job that checked stands here.
		if p.State == nil {
			p.facts.outputsMissing, p.facts.missingOutputs = true, p.UndeclaredOutputs()
		}
	case decide.ReasonDurableInputsMissing:
		op := infrav1.OperationDrift
		if p.deleting() {
			op = infrav1.OperationDestroy
		}
		p.facts.refusal = &refusal{op: op, cause: refusedDurableMissing, detail: DurableName(p.Kind, p.Obj.GetName())}
	}
}

// startJob starts the decided operation's Job: it assembles the run,
// builds the Job, takes the leases, records the durable inputs, sets the
// move block, and creates the per-run Secret and the Job.
func (f *Flow) startJob(ctx context.Context, p *Pass) error {
	plan := p.Decision.Job
	op := infrav1.Operation(p.Decision.Op)
	run, err := f.assembleRun(ctx, p)
	if err != nil {
		return err
	}
	// The Job is built before any lease is taken: a Job that can never
	// be created is reported and holds nothing.
	job, dropped, err := jobs.Build(run)
	if err != nil {
		f.reportJobInvalid(p, op, fmt.Sprintf("Job %s cannot be built: %v", plan.Name, err))
		return nil
	}
	wait, err := f.acquireLeases(ctx, p, plan.Name, op)
	if err != nil {
		return err
	}
	if wait != nil {
		f.reportLeaseWait(p, op, wait)
		p.Requeue(decide.RequeueLeaseWait)
		return nil
	}
	if op == infrav1.OperationApply && !plan.DurableInputs {
		if err := f.writeDurable(ctx, p); err != nil {
			return err
		}
	}
	if err := f.setMoveBlock(ctx, p); err != nil {
		return err
	}
	if len(dropped) > 0 {
		f.event(p, nil, corev1.EventTypeWarning, infrav1.EnvVarDroppedEvent,
			"Dropped spec.jobs.env entries reserved for the runner: "+strings.Join(dropped, ", "))
	}
	job, created, err := f.createRun(ctx, p, run, job)
	if err != nil || job == nil {
		return err
	}
	if created && op == infrav1.OperationApply && p.Decision.Reason == decide.ReasonInputsChanged {
		// Counted when the apply's Job is created, once: a pass that finds
		// the Job already there counted it before.
		metrics.InputsHashChanged(p.Kind)
	}
	now := metav1.NewTime(p.Now)
	p.Status().ActiveJob = &infrav1.ActiveJob{Name: job.Name, Operation: op, Attempt: int32(plan.Attempt), StartTime: &now}
	f.jobStarted(p, job, op)
	p.Requeue(decide.RequeueJobRunning)
	return nil
}

// assembleRun is the run the decision asks for: its Job's settings and
// its inputs (a restore's backup, the durable inputs, or the current
// ones).
func (f *Flow) assembleRun(ctx context.Context, p *Pass) (*jobs.Run, error) {
	plan := p.Decision.Job
	op := infrav1.Operation(p.Decision.Op)
	run := &jobs.Run{
		Owner:            p.owner(),
		Policy:           &p.Policy,
		Op:               op,
		Attempt:          plan.Attempt,
		JobName:          plan.Name,
		Image:            p.Obj.GetWorkspace().Source.Image,
		ImagePullPolicy:  corev1.PullPolicy(p.Obj.GetWorkspace().Source.ImagePullPolicy),
		RunnerImage:      f.Options.RunnerImage,
		Identity:         p.Identity,
		StateSuffix:      p.Suffix,
		InputsHash:       plan.InputsHash,
		ForceUnlock:      p.ForceUnlock,
		GuardDeletes:     plan.GuardDeletes,
		AllowDeletesHash: plan.AllowDeletesHash,
		ExpectPlan:       plan.ExpectPlanHash,
		DriftRemediation: plan.DriftRemediation,
		RunnerEvents:     f.Options.RunnerEvents,
	}
	switch {
	case op == infrav1.OperationRestore:
		rs, err := state.RestoreInput(ctx, f.APIReader, p.Obj.GetNamespace(), p.Suffix, uint64(plan.RestoreSerial))
		if err != nil {
			return nil, fmt.Errorf("failed to read state backup %d: %w", plan.RestoreSerial, err)
		}
		run.Inputs = jobs.Inputs{MainTF: inputs.BackendOnlyRoot()}
		run.Restore = &jobs.Restore{Serial: plan.RestoreSerial, Chunks: rs.Chunks, Resources: rs.Resources}
	case plan.DurableInputs:
		if p.Durable == nil {
			return nil, fmt.Errorf("the durable inputs Secret %s is missing", DurableName(p.Kind, p.Obj.GetName()))
		}
		run.Inputs = jobs.Inputs{MainTF: p.Durable.Data[contract.MainFile], TFVars: p.Durable.Data[contract.TFVarsFile]}
		if img := p.Durable.Annotations[infrav1.ImageAnnotation]; img != "" {
			run.Image = img
		}
		if dg := p.Durable.Annotations[infrav1.ImageDigestAnnotation]; dg != "" {
			run.Image = pinned(run.Image, dg)
		}
	default:
		if p.Inputs.Rendered == nil {
			return nil, fmt.Errorf("no rendered inputs for %s", op)
		}
		run.Inputs = jobs.Inputs{MainTF: p.Inputs.Rendered.MainTF, TFVars: p.Inputs.Rendered.TFVars}
	}
	return run, nil
}

// createRun creates the run's per-run Secret, then its Job, once the
// leases are held. The Secret comes first, owned by the object until the
// Job exists: a pass that dies between the two creations leaves a Secret
// the next pass takes up, never a Job whose pod cannot start. A run whose
// name is taken by something that is not CAPTF's, or whose Job the API
// server refuses, is not created and rolls back along one path: the
// Secret written for it goes, the leases are given back, and the refusal
// is reported. It returns the Job created or found (nil when the run
// rolled back) and whether this pass created it.
func (f *Flow) createRun(ctx context.Context, p *Pass, run *jobs.Run, job *batchv1.Job) (*batchv1.Job, bool, error) {
	op := run.Op
	var pending *corev1.Secret
	rollback := func(report func(*Pass, infrav1.Operation, string), msg string) (*batchv1.Job, bool, error) {
		if pending != nil {
			if err := f.Client.Delete(ctx, pending, client.Preconditions{UID: &pending.UID}); client.IgnoreNotFound(err) != nil {
				return nil, false, fmt.Errorf("failed to delete Secret %s: %w", pending.Name, err)
			}
		}
		return nil, false, f.giveBack(ctx, p, job.Name, func() { report(p, op, msg) })
	}
	secret, err := jobs.PendingRunSecret(run)
	if err != nil {
		return nil, false, fmt.Errorf("failed to build Secret %s: %w", jobs.RunSecretName(job.Name), err)
	}
	// The names are free in every pass but one that a crash or a stale
	// cache repeats, so the Secret is created straight away and the live
	// reads that judge what holds the names are made only when it exists
	// already. A Job of the name that is not CAPTF's is found by the
	// Job's create below, which rolls the new Secret back.
	for try := 0; ; try++ {
		created := secret.DeepCopy()
		err := f.Client.Create(ctx, created)
		if err == nil {
			pending = created
			break
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("failed to create Secret %s: %w", secret.Name, err)
		}
		if try > 0 {
			// Judged reusable (or removed) a moment ago: the pass
			// takes it as it is.
			break
		}
		if taken, err := f.runNameTaken(ctx, run, job); err != nil || taken != "" {
			if err != nil {
				return nil, false, err
			}
			return rollback(f.reportJobNameTaken, taken)
		}
	}
	created := true
	if err := f.Client.Create(ctx, job); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			// The API server refuses this Job whatever the pass.
			return rollback(f.reportJobInvalid, fmt.Sprintf("the API server refused Job %s: %v", job.Name, err))
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("failed to create Job %s: %w", job.Name, err)
		}
		created = false
		existing := &batchv1.Job{}
		if err := f.APIReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			return nil, false, fmt.Errorf("failed to read Job %s: %w", job.Name, err)
		}
		if why := jobs.NotOurs(existing, job); why != "" {
			// Created between the check above and this create.
			return rollback(f.reportJobNameTaken, fmt.Sprintf("Job %s exists and is not CAPTF's: %s", job.Name, why))
		}
		job = existing
	}
	if err := f.handRunSecret(ctx, job, pending); err != nil {
		return nil, false, err
	}
	return job, created, nil
}

// pinned returns image pinned to digest (repository@sha256:...), or image
// as written when it cannot be parsed.
func pinned(image, digest string) string {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return image
	}
	return ref.Context().Name() + "@" + digest
}

// jobStarted records a started Job and emits its events.
func (f *Flow) jobStarted(p *Pass, job *batchv1.Job, op infrav1.Operation) {
	d := p.Decision
	p.facts.started = &startedJob{name: job.Name, op: op, remediation: op == infrav1.OperationApply && d.Job.DriftRemediation}
	note := fmt.Sprintf("Started Job %s: %s attempt %d of %s (%s)", job.Name, op, d.Job.Attempt, p.Obj.GetWorkspace().Source.Image, d.Reason)
	f.event(p, job, corev1.EventTypeNormal, infrav1.JobCreatedEvent, note)
	switch op {
	case infrav1.OperationApply:
		if d.Reason == decide.ReasonInputsChanged {
			f.event(p, job, corev1.EventTypeNormal, infrav1.InputsChangedEvent, "Inputs changed to "+d.Job.InputsHash)
		}
		if d.Job.DriftRemediation {
			f.event(p, job, corev1.EventTypeNormal, infrav1.DriftRemediationStartedEvent, "Job "+job.Name+" remediates the drift")
		}
		if d.Job.ExpectPlanHash != "" {
			f.event(p, job, corev1.EventTypeNormal, infrav1.PlanApprovedEvent, "Applying approved plan "+d.Job.ExpectPlanHash)
		}
	case infrav1.OperationRestore:
		p.Status().LastRestoredSerial = d.Job.RestoreSerial
	case infrav1.OperationDrift:
		consumeDriftRequest(p)
	}
}

// writeDurable records what an apply renders in the durable inputs Secret.
func (f *Flow) writeDurable(ctx context.Context, p *Pass) error {
	r := p.Inputs.Rendered
	name := DurableName(p.Kind, p.Obj.GetName())
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Obj.GetNamespace()}}
	_, err := controllerutil.CreateOrPatch(ctx, f.Client, s, func() error {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[infrav1.ManagedLabel] = "true"
		s.Labels[infrav1.MoveLabel] = ""
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		if s.Annotations[infrav1.ImageAnnotation] != p.Obj.GetWorkspace().Source.Image {
			delete(s.Annotations, infrav1.ImageDigestAnnotation)
		}
		s.Annotations[infrav1.ImageAnnotation] = p.Obj.GetWorkspace().Source.Image
		s.Annotations[infrav1.IdentityAnnotation] = p.Identity
		s.Type = corev1.SecretTypeOpaque
		s.Data = map[string][]byte{contract.MainFile: r.MainTF, contract.TFVarsFile: r.TFVars}
		return controllerutil.SetOwnerReference(p.Obj, s, f.Client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("failed to write the durable inputs Secret %s: %w", name, err)
	}
	p.Durable = s
	return nil
}

// setMoveBlock sets clusterctl's block-move annotation just before a Job is
// created, directly, so a crash cannot leave a Job without it.
func (f *Flow) setMoveBlock(ctx context.Context, p *Pass) error {
	if _, ok := p.Obj.GetAnnotations()[infrav1.BlockMoveAnnotation]; ok {
		return nil
	}
	patchObj := p.Obj.DeepCopyObject().(client.Object)
	base := patchObj.DeepCopyObject().(client.Object)
	a := patchObj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[infrav1.BlockMoveAnnotation] = "true"
	patchObj.SetAnnotations(a)
	if err := p.writes.Patch(ctx, patchObj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("failed to set the move block: %w", err)
	}
	// The pass's own patch is part of the object it builds on: the final
	// patch neither sends the annotation again nor conflicts with it.
	p.snap.advance(patchObj, infrav1.BlockMoveAnnotation)
	a2 := p.Obj.GetAnnotations()
	if a2 == nil {
		a2 = map[string]string{}
	}
	a2[infrav1.BlockMoveAnnotation] = "true"
	p.Obj.SetAnnotations(a2)
	return nil
}

// cleanup runs once a destroy succeeded or there was nothing to destroy:
// the state, durable inputs and leases go, the object leaves its credential
// mirror's owners, and the finalizer is removed.
//
// What is deleted is decided from live reads, never from the cache: the
// state Secrets are read by their names (a Secret the cache does not hold,
// or one without labels, is found), one that is not the object's is
// reported and never deleted, and without a destroy the object must hold
// no state at all, a free run lease and no Job or pod still running.
// Only the Secrets read are deleted, each with a UID precondition.
func (f *Flow) cleanup(ctx context.Context, p *Pass) error {
	ns := p.Obj.GetNamespace()
	secrets, err := state.Live(ctx, f.APIReader, ns, p.Suffix)
	if err != nil {
		return err
	}
	var foreign []string
	for i := range secrets {
		if !state.Owned(&secrets[i], p.owner()) {
			foreign = append(foreign, secrets[i].Name)
		}
	}
	if len(foreign) > 0 {
		p.facts.foreignState = foreign
		p.Requeue(decide.RequeueNotReady)
		return nil
	}
	if p.Decision.Reason == decide.ReasonNoStateToDestroy {
		if len(secrets) > 0 {
			// State exists that the cache did not show: decide again once
			// the cache holds it (a destroy is due then).
			ctrl.LoggerFrom(ctx).Info("State found live that the cache does not hold yet; not removing the finalizer", "secret", secrets[0].Name)
			p.Requeue(decide.RequeueJobCacheStale)
			return nil
		}
		busy, err := f.runBusy(ctx, p)
		if err != nil {
			return err
		}
		if busy != "" {
			ctrl.LoggerFrom(ctx).Info("A run of the object may still write state; not removing the finalizer", "run", busy)
			p.Requeue(decide.RequeueJobCacheStale)
			return nil
		}
	}
	if err := state.DeleteRead(ctx, f.Client, ns, p.Suffix, secrets); err != nil {
		return fmt.Errorf("failed to delete the state: %w", err)
	}
	durable := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: DurableName(p.Kind, p.Obj.GetName()), Namespace: p.Obj.GetNamespace()}}
	if err := f.Client.Delete(ctx, durable); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete the durable inputs Secret: %w", err)
	}
	if err := f.deleteLeases(ctx, p); err != nil {
		return err
	}
	removed, err := identity.ReleaseMirrors(ctx, f.Client, f.APIReader, p.Obj)
	if err != nil {
		return fmt.Errorf("failed to release the credential mirrors: %w", err)
	}
	for _, name := range removed {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.MirrorRemovedEvent, "Removed credential mirror "+name)
	}
	if p.Decision.Reason == decide.ReasonDestroySucceeded {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.DestroyedEvent, "Destroyed the infrastructure")
	}
	// Deletion is complete: the status patch records it (Deleting is
	// DeletionCompleted), and the finalizer goes right after it
	// (dropFinalizer).
	p.dropFinalizer = true
	return errStop
}

// dropFinalizer removes the finalizer once the status patch holding the
// completed deletion succeeded; the object may be gone right after it.
func (f *Flow) dropFinalizer(ctx context.Context, p *Pass) error {
	if v := p.writes.version; v != "" {
		// The patch helper wrote copies: the object still carries the
		// version the pass read.
		p.Obj.SetResourceVersion(v)
	}
	base := p.Obj.DeepCopyObject().(client.Object)
	if !controllerutil.RemoveFinalizer(p.Obj, p.Kind.Finalizer()) {
		return nil
	}
	if err := f.Client.Patch(ctx, p.Obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to remove the finalizer: %w", err)
	}
	f.event(p, nil, corev1.EventTypeNormal, infrav1.FinalizerRemovedEvent, "Removed finalizer "+p.Kind.Finalizer())
	metrics.ObjectDeleted(p.Kind, p.Obj.GetNamespace(), p.Obj.GetName())
	f.written.forget(p.Obj.GetUID())
	return nil
}

// reportJobInvalid reports a Job that cannot be created (JobInvalid on the
// operation's condition, a JobInvalid event once per cause); the object
// waits for its spec to change.
func (f *Flow) reportJobInvalid(p *Pass, op infrav1.Operation, msg string) {
	msg = capMessage(msg)
	if prev := p.Before(jobs.OperationOf(op).Condition); prev == nil || prev.Reason != infrav1.JobInvalidReason || prev.Message != msg {
		f.event(p, nil, corev1.EventTypeWarning, infrav1.JobInvalidEvent, msg)
	}
	p.facts.refusal = &refusal{op: op, cause: refusedJobInvalid, detail: msg}
	p.Requeue(decide.RequeueFixInput)
}

// giveBack releases the leases taken for Job job, which will not be
// created, then reports why with report.
func (f *Flow) giveBack(ctx context.Context, p *Pass, job string, report func()) error {
	if err := f.releaseLeases(ctx, p, job); err != nil {
		return err
	}
	report()
	return nil
}

// runNameTaken reads, live, the Job and per-run Secret names of the run
// before the Job is created, and says which of them exists and is not
// CAPTF's ("" when neither). A per-run Secret is checked before its Job
// exists because the Job's pod would mount whatever Secret has that name:
// one controlled by another Job, or found without its Job and neither
// written for this run nor left by an earlier Job of this name, is never
// used. One written for this name by a pass that died before it created
// the Job is taken up as it is when it holds the run's data, else deleted;
// an orphan CAPTF left (its Job deleted before the garbage collector took
// it) is deleted.
func (f *Flow) runNameTaken(ctx context.Context, run *jobs.Run, built *batchv1.Job) (string, error) {
	existing := &batchv1.Job{}
	err := f.APIReader.Get(ctx, client.ObjectKeyFromObject(built), existing)
	jobFound := err == nil
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("failed to read Job %s: %w", built.Name, err)
	default:
		if why := jobs.NotOurs(existing, built); why != "" {
			return fmt.Sprintf("Job %s exists and is not CAPTF's: %s", built.Name, why), nil
		}
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: built.Namespace, Name: jobs.RunSecretName(built.Name)}
	if err := f.APIReader.Get(ctx, key, secret); apierrors.IsNotFound(err) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("failed to read Secret %s: %w", key.Name, err)
	}
	pending, err := jobs.PendingRunSecret(run)
	if err != nil {
		return "", fmt.Errorf("failed to build Secret %s: %w", key.Name, err)
	}
	isPending := jobs.NotPending(secret, pending) == ""
	if !jobFound {
		if isPending && jobs.SameData(secret, pending) {
			return "", nil
		}
		if !isPending {
			if why := jobs.NotOursOrphan(secret, built); why != "" {
				return fmt.Sprintf("Secret %s exists without its Job and is not CAPTF's: %s", key.Name, why), nil
			}
		}
		// Left by an earlier Job of this name that was deleted before the
		// garbage collector took its Secret, or written for this name with
		// other data: it goes, then the run starts.
		if err := f.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("failed to delete the orphaned Secret %s: %w", key.Name, err)
		}
		return "", nil
	}
	if isPending {
		// Not handed to the Job yet: the pass goes on and hands it.
		return "", nil
	}
	want, err := jobs.RunSecret(run, existing)
	if err != nil {
		return "", fmt.Errorf("failed to build Secret %s: %w", key.Name, err)
	}
	if why := jobs.NotOurs(secret, want); why != "" {
		return fmt.Sprintf("Secret %s exists and is not CAPTF's: %s", key.Name, why), nil
	}
	return "", nil
}

// handRunSecret makes a created Job the controller and only owner of its
// per-run Secret, so the Secret goes with the Job. secret is the Secret as
// just created, or nil to read it live; a Secret the Job already controls
// is left as it is, and one that is not the Job's pending Secret is left
// alone (runNameTaken reports it before any Job is created).
func (f *Flow) handRunSecret(ctx context.Context, job *batchv1.Job, secret *corev1.Secret) error {
	if secret == nil {
		secret = &corev1.Secret{}
		err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: jobs.RunSecretName(job.Name)}, secret)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read Secret %s: %w", jobs.RunSecretName(job.Name), err)
		}
	}
	if c := metav1.GetControllerOfNoCopy(secret); c != nil {
		return nil
	}
	if !slices.ContainsFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool {
		c := metav1.GetControllerOfNoCopy(job)
		return c != nil && o.UID == c.UID
	}) {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             secret.UID,
		"ownerReferences": jobs.RunSecretOwners(job),
	}})
	if err != nil {
		return err
	}
	target := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}
	if err := f.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("failed to hand Secret %s to its Job: %w", secret.Name, err)
	}
	return nil
}

// reportJobNameTaken reports, on the operation's condition and once per
// cause as an event, a Job or per-run Secret that has the run's name but is
// not CAPTF's. The operation waits for the name to be free (a leftover of
// an earlier object of the same name is garbage collected).
func (f *Flow) reportJobNameTaken(p *Pass, op infrav1.Operation, msg string) {
	msg = capMessage(msg + "; it is left alone, and no Job starts until it is removed")
	if prev := p.Before(jobs.OperationOf(op).Condition); prev == nil || prev.Reason != infrav1.JobNameTakenReason || prev.Message != msg {
		f.event(p, nil, corev1.EventTypeWarning, infrav1.JobNameTakenEvent, msg)
	}
	p.facts.refusal = &refusal{op: op, cause: refusedJobNameTaken, detail: msg}
	p.Requeue(decide.RequeueLeaseWait)
}

// capMessage keeps a condition message within 1024 bytes.
func capMessage(m string) string { return text.Truncate(m, 1024) }

// reportLeaseWait reports a lease wait on the operation's condition.
func (f *Flow) reportLeaseWait(p *Pass, op infrav1.Operation, w *Wait) {
	if prev := p.Before(jobs.OperationOf(op).Condition); prev == nil || prev.Reason != w.Reason {
		f.event(p, nil, corev1.EventTypeNormal, w.Reason, w.Message)
		metrics.LeaseWait(p.Kind, w.metric)
	}
	p.facts.refusal = &refusal{op: op, cause: refusedLease, wait: w}
}

// runBusy says what of the object may still be running, read live: the
// holder of its run lease, a Job of its that has not finished, or a runner
// pod still running; "" when none.
func (f *Flow) runBusy(ctx context.Context, p *Pass) (string, error) {
	ns := p.Obj.GetNamespace()
	h, st, err := f.leases().RunHolder(ctx, ns, p.Suffix)
	if err != nil {
		return "", err
	}
	if st.Held() {
		return "run lease held by Job " + h.Name, nil
	}
	o := p.owner()
	sel := client.MatchingLabels{infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: string(o.Kind), infrav1.OwnerNameLabel: owner.LabelValue(o.Name)}
	var list batchv1.JobList
	if err := f.APIReader.List(ctx, &list, client.InNamespace(ns), sel); err != nil {
		return "", fmt.Errorf("failed to list Jobs: %w", err)
	}
	for i := range list.Items {
		if !jobs.IsFinished(&list.Items[i]) {
			return "Job " + list.Items[i].Name, nil
		}
	}
	var pods corev1.PodList
	if err := f.APIReader.List(ctx, &pods, client.InNamespace(ns), sel); err != nil {
		return "", fmt.Errorf("failed to list runner pods: %w", err)
	}
	for i := range pods.Items {
		if ph := pods.Items[i].Status.Phase; ph != corev1.PodSucceeded && ph != corev1.PodFailed {
			return "pod " + pods.Items[i].Name, nil
		}
	}
	return "", nil
}

// maxEchoBytes caps an annotation value echoed into a condition message.
const maxEchoBytes = 64

// quoteCapped quotes v for a message, cut to n bytes (on a UTF-8
// boundary) with the cut said.
func quoteCapped(v string, n int) string {
	if len(v) <= n {
		return strconv.Quote(v)
	}
	return strconv.Quote(text.Truncate(v, n)) + fmt.Sprintf(" (cut from %d bytes)", len(v))
}
