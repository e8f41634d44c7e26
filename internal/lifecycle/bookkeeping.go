package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// resolvePolicy resolves the effective Job policy: the object's own
// spec.jobs over its cluster's defaults (reference-facts §8.2), and
// whether it is valid.
func (f *Flow) resolvePolicy(_ context.Context, p *Pass) error {
	var clusterDefaults *infrav1.JobPolicy
	if p.Obj.Capabilities().ClusterMember && p.TerraformCluster != nil {
		clusterDefaults = jobs.ClusterDefaults(p.TerraformCluster)
	}
	p.Policy = jobs.Effective(p.Obj.GetWorkspace().Jobs, clusterDefaults)
	p.PolicyErr = p.Policy.Validate()
	return nil
}

// bookkeeping reads the object's Jobs, accounts for every one that finished
// since it was last seen, prunes history, and finds the active Job.
func (f *Flow) bookkeeping(ctx context.Context, p *Pass) error {
	var list batchv1.JobList
	if err := f.Client.List(ctx, &list, client.InNamespace(p.Obj.GetNamespace()), client.MatchingLabels(p.owner().Labels())); err != nil {
		return fmt.Errorf("failed to list Jobs: %w", err)
	}
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, client.InNamespace(p.Obj.GetNamespace()), client.MatchingLabels(p.owner().Labels())); err != nil {
		return fmt.Errorf("failed to list runner pods: %w", err)
	}
	podOf := map[string]*corev1.Pod{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		name := pod.Labels[batchv1.JobNameLabel]
		if cur, ok := podOf[name]; !ok || pod.CreationTimestamp.After(cur.CreationTimestamp.Time) {
			podOf[name] = pod
		}
	}
	p.pods = podOf
	// Oldest first, so the newest finished Job's result is what status keeps.
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp)
	})
	p.Jobs = list.Items
	for i := range list.Items {
		job := &list.Items[i]
		if !isOwnedBy(job, p.Obj) {
			continue
		}
		c := jobs.Classify(job, podOf[job.Name])
		if c.Outcome == jobs.OutcomeActive {
			if job.DeletionTimestamp.IsZero() {
				p.Active = job
			}
			continue
		}
		if job.Annotations[infrav1.BookkeptAnnotation] != "true" {
			if _, ok := jobs.TerminationMessage(podOf[job.Name]); !ok {
				// The Job finished, yet the cached pod does not show its
				// container terminated: the pods' watch may be behind the
				// Jobs'. What the runner reported is read from the live
				// pod before the Job is booked.
				pod, err := f.livePod(ctx, job)
				if err != nil {
					return err
				}
				if pod != nil {
					podOf[job.Name] = pod
					c = jobs.Classify(job, pod)
				}
			}
			if err := f.bookkeepJob(ctx, p, job, &c); err != nil {
				return err
			}
		}
		p.Records = append(p.Records, jobs.Record(job, &c))
	}

	for _, r := range decide.Prune(p.Records, decide.HistoryLimits{
		Successful: int(p.Policy.SuccessfulJobsHistoryLimit),
		Failed:     int(p.Policy.FailedJobsHistoryLimit),
	}) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: p.Obj.GetNamespace()}}
		if err := f.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to prune Job %s: %w", r.Name, err)
		}
	}

	if err := f.vanishedJob(ctx, p); err != nil {
		return err
	}
	if p.jobCacheStale {
		// status.activeJob stays as it is until the cache catches up.
	} else if p.Active != nil {
		s := p.Status()
		s.ActiveJob = &infrav1.ActiveJob{
			Name:      p.Active.Name,
			Operation: infrav1.Operation(p.Active.Labels[infrav1.OpLabel]),
			Attempt:   int32(max(jobs.Attempt(p.Active), 1)),
			StartTime: p.Active.Status.StartTime,
		}
		if s.ActiveJob.StartTime == nil {
			t := p.Active.CreationTimestamp
			s.ActiveJob.StartTime = &t
		}
	} else {
		p.Status().ActiveJob = nil
	}
	forgetRestore(p)
	return nil
}

// livePods reads job's pods from the API server.
func (f *Flow) livePods(ctx context.Context, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := f.APIReader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, fmt.Errorf("failed to read the pods of Job %s: %w", job.Name, err)
	}
	return pods.Items, nil
}

// livePod reads the newest pod of job from the API server; nil when it has
// none.
func (f *Flow) livePod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	pods, err := f.livePods(ctx, job)
	if err != nil {
		return nil, err
	}
	var newest *corev1.Pod
	for i := range pods {
		if pod := &pods[i]; newest == nil || pod.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = pod
		}
	}
	return newest, nil
}

// vanishedJob looks at a Job status.activeJob names that the cache does not
// hold. The API server may have it and the cache not yet (decide waits for
// the cache); or it is gone without a result, deleted while it ran. Of a
// TerraformCluster or TerraformMachinePool, such an apply may have applied
// part of its change: confirmed by live reads, captf.io/interrupted-apply
// on the durable inputs keeps an apply of the current inputs due
// (Retries and Backoff, "An apply Job deleted while it ran").
func (f *Flow) vanishedJob(ctx context.Context, p *Pass) error {
	aj := p.Status().ActiveJob
	if aj == nil || aj.Name == "" {
		return nil
	}
	for i := range p.Jobs {
		if p.Jobs[i].Name == aj.Name {
			return nil
		}
	}
	live := &batchv1.Job{}
	err := f.APIReader.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: aj.Name}, live)
	switch {
	case err == nil:
		if isOwnedBy(live, p.Obj) {
			p.jobCacheStale = true
		}
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to read Job %s: %w", aj.Name, err)
	}
	if aj.Operation != infrav1.OperationApply || !p.Obj.Capabilities().MutableInputs {
		return f.releaseLeases(ctx, p, aj.Name)
	}
	obj := f.kind().NewObject()
	if err := f.APIReader.Get(ctx, client.ObjectKeyFromObject(p.Obj), obj); err != nil {
		return fmt.Errorf("failed to read %s live: %w", client.ObjectKeyFromObject(p.Obj), err)
	}
	if la := obj.GetWorkspaceStatus().ActiveJob; la == nil || la.Name != aj.Name {
		return nil
	}
	durable, err := f.passDurable(ctx, p)
	if err != nil {
		return err
	}
	if durable != nil && durable.Annotations[infrav1.InterruptedApplyAnnotation] != aj.Name {
		base := durable.DeepCopy()
		if durable.Annotations == nil {
			durable.Annotations = map[string]string{}
		}
		durable.Annotations[infrav1.InterruptedApplyAnnotation] = aj.Name
		if err := f.Client.Patch(ctx, durable, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("failed to record the interrupted apply on Secret %s: %w", durable.Name, err)
		}
		p.Durable, p.durableWritten = durable, true
	}
	p.facts.vanished = aj.Name
	f.event(p, nil, corev1.EventTypeWarning, infrav1.JobInterruptedEvent, vanishedMessage(aj.Name))
	return f.releaseLeases(ctx, p, aj.Name)
}

func isOwnedBy(job *batchv1.Job, obj client.Object) bool {
	for _, ref := range job.OwnerReferences {
		if ref.UID == obj.GetUID() {
			return true
		}
	}
	return false
}

// bookkeepJob records one newly finished Job in status and as a fact,
// pins the image digest of a succeeded apply, and gives back the Job's
// per-run Secret and run lease.
func (f *Flow) bookkeepJob(ctx context.Context, p *Pass, job *batchv1.Job, c *jobs.Classification) error {
	op := infrav1.Operation(job.Labels[infrav1.OpLabel])
	s := p.Status()
	// The status as read already names the Job: a status patch recorded
	// it, and the pass that made it ended before the Job was marked.
	booked := s.LastRun != nil && s.LastRun.Job == job.Name
	run := c.Result.LastRun
	s.LastRun = &run
	if c.Result.RuntimeVersion != "" || c.ImageID != "" {
		if s.Source == nil {
			s.Source = &infrav1.SourceStatus{}
		}
		if c.Result.RuntimeVersion != "" {
			s.Source.RuntimeVersion = c.Result.RuntimeVersion
		}
		if d := jobs.ImageDigest(c.ImageID); d != "" && c.Outcome == jobs.OutcomeSucceeded {
			s.Source.ImageDigest = d
		}
	}
	finished := metav1.NewTime(c.FinishedAt)
	succeeded := c.Outcome == jobs.OutcomeSucceeded
	res := jobResult{name: job.Name, op: op, c: c, remediation: job.Annotations[infrav1.DriftRemediationAnnotation] == "true"}

	switch {
	case op == infrav1.OperationApply && succeeded:
		if res.remediation {
			f.driftResolvedEvent(p, job, "Job "+job.Name+" remediated the drift")
		}
		p.sampleOp = decide.OpApply
		p.appliedAt = c.FinishedAt
		if err := f.pinDigest(ctx, p, c); err != nil {
			return err
		}
	case (op == infrav1.OperationRefresh || op == infrav1.OperationDrift) && succeeded:
		p.sampleOp = decide.Operation(op)
		if op == infrav1.OperationRefresh {
			s.LastRefresh = &finished
		} else {
			s.LastDriftCheck = &finished
			res.remediate = decide.EffectiveDriftAction(p.Obj.Capabilities(), p.Obj.GetDriftPolicy().Action) == decide.DriftRemediate
			f.driftCheckedEvent(p, job, &res)
		}
	case op == infrav1.OperationPlan:
		res.plan = f.recordPlan(p, job, c, booked)
	}
	// The Job's event and counters follow the status patch that records
	// its result, once: a pass that dies before the patch repeats nothing,
	// and a Job whose result the patched status already holds (the pass
	// died before marking it bookkept) is not counted again.
	if !booked {
		p.afterPatch = append(p.afterPatch, func() {
			f.jobEvent(p, job, c)
			f.jobMetrics(p, job, op, c)
		})
	}
	if plan := f.consumeRequests(p, job, op, c, booked); plan != nil {
		res.plan = plan
	}
	if reason, ok := planReasonOf(op, c, res.plan); ok {
		if err := f.writePlanRecord(ctx, p, job, c, reason); err != nil {
			return err
		}
	}
	p.facts.results = append(p.facts.results, res)

	// The per-run Secret goes once the result is read (that also gives back
	// the run lease), right after the status patch that records the
	// result, before the Job is marked bookkept: the result reaches the
	// object two round trips sooner. A pass that dies in between leaves
	// the Job to be booked again, which deletes them then.
	p.bookkept = append(p.bookkept, bookkept{name: job.Name, marks: c.Marks()})
	return nil
}

// finishRun deletes a booked Job's per-run Secret and gives back its
// leases.
func (f *Flow) finishRun(ctx context.Context, p *Pass, job string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: jobs.RunSecretName(job), Namespace: p.Obj.GetNamespace()}}
	if err := f.Client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete Secret %s: %w", secret.Name, err)
	}
	return f.releaseLeases(ctx, p, job)
}

// jobMetrics counts a finished Job once, when it is bookkept.
func (f *Flow) jobMetrics(p *Pass, job *batchv1.Job, op infrav1.Operation, c *jobs.Classification) {
	kind := p.Kind
	var d time.Duration
	if !c.StartedAt.IsZero() && c.FinishedAt.After(c.StartedAt) {
		d = c.FinishedAt.Sub(c.StartedAt)
	}
	metrics.JobFinished(kind, string(op), c.Outcome.MetricResult(), d)
	if c.Outcome == jobs.OutcomeSucceeded {
		metrics.SetLastSuccess(kind, p.Obj.GetNamespace(), p.Obj.GetName(), string(op), c.FinishedAt)
	} else {
		step := "none"
		if c.Result.LastRun.Error != nil && c.Result.LastRun.Error.Step != "" {
			step = metrics.StepLabel(c.Result.LastRun.Error.Step)
		}
		metrics.JobError(kind, string(op), c.ErrorKind(), step)
	}
	f.finishedJobMetrics(p, job, op, c)
}

// jobEvent emits the one event a finished Job gets.
func (f *Flow) jobEvent(p *Pass, job *batchv1.Job, c *jobs.Classification) {
	op := job.Labels[infrav1.OpLabel]
	note := fmt.Sprintf("Job %s (%s) %s", job.Name, op, c.Outcome)
	if c.Detail != "" {
		note += ": " + c.Detail
	}
	switch c.Outcome {
	case jobs.OutcomeSucceeded:
		f.event(p, job, corev1.EventTypeNormal, infrav1.JobSucceededEvent, note)
	case jobs.OutcomeInterrupted:
		f.event(p, job, corev1.EventTypeWarning, infrav1.JobInterruptedEvent, note)
	case jobs.OutcomeDeadline:
		f.event(p, job, corev1.EventTypeWarning, infrav1.JobDeadlineExceededEvent, note)
	case jobs.OutcomeBlocked:
		f.event(p, job, corev1.EventTypeWarning, infrav1.DestructivePlanBlockedEvent, note)
	case jobs.OutcomePlanChanged:
		f.event(p, job, corev1.EventTypeWarning, infrav1.PlanChangedEvent, note)
	default:
		f.event(p, job, corev1.EventTypeWarning, infrav1.JobFailedEvent, note)
	}
}

// driftResolvedEvent emits DriftResolved when drift was found before the
// Job that resolves it was bookkept.
func (f *Flow) driftResolvedEvent(p *Pass, job *batchv1.Job, note string) {
	if prev := p.Condition(infrav1.DriftDetectedCondition); prev != nil && prev.Status == metav1ConditionTrue {
		f.event(p, job, corev1.EventTypeNormal, infrav1.DriftResolvedEvent, note)
	}
}

// driftCheckedEvent emits the event of a drift Job's finding: DriftDetected
// for drift, DriftResolved for none after drift.
func (f *Flow) driftCheckedEvent(p *Pass, job *batchv1.Job, r *jobResult) {
	if !r.c.Result.DriftDetected {
		f.driftResolvedEvent(p, job, "No drift found by Job "+job.Name)
		return
	}
	f.event(p, job, corev1.EventTypeWarning, infrav1.DriftDetectedEvent, driftFoundMessage(r))
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// recordPlan records a plan Job's plan for approval (applyPolicy Manual).
// PlanReady follows the status patch, once, like the Job's own event: not
// again for a Job the status already named (booked).
func (f *Flow) recordPlan(p *Pass, job *batchv1.Job, c *jobs.Classification, booked bool) *planRecord {
	if c.Outcome != jobs.OutcomeSucceeded {
		return nil
	}
	plan := f.recordPlanPreview(p, job, c, infrav1.PlanAwaitingApprovalReason)
	if plan != nil && !booked {
		p.afterPatch = append(p.afterPatch, func() {
			f.event(p, job, corev1.EventTypeNormal, infrav1.PlanReadyEvent, plan.message)
		})
	}
	return plan
}

// pinDigest records a succeeded apply's image digest on the durable inputs
// Secret, and marks it applied.
func (f *Flow) pinDigest(ctx context.Context, p *Pass, c *jobs.Classification) error {
	durable, err := f.passDurable(ctx, p)
	if err != nil || durable == nil {
		return err
	}
	digest := jobs.ImageDigest(c.ImageID)
	want := map[string]string{infrav1.AppliedAnnotation: "true"}
	if digest != "" {
		want[infrav1.ImageDigestAnnotation] = digest
	}
	_, interrupted := durable.Annotations[infrav1.InterruptedApplyAnnotation]
	pinned := false
	for k, v := range want {
		if durable.Annotations[k] != v {
			pinned = true
		}
	}
	if !pinned && !interrupted {
		return nil
	}
	base := durable.DeepCopy()
	if durable.Annotations == nil {
		durable.Annotations = map[string]string{}
	}
	for k, v := range want {
		durable.Annotations[k] = v
	}
	// An apply started after an interrupted one succeeded: the apply it
	// kept due is done.
	delete(durable.Annotations, infrav1.InterruptedApplyAnnotation)
	if err := f.Client.Patch(ctx, durable, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("failed to pin the image digest on Secret %s: %w", durable.Name, err)
	}
	p.Durable, p.durableWritten = durable, true
	if !pinned {
		return nil
	}
	if digest != "" {
		f.event(p, nil, corev1.EventTypeNormal, infrav1.DigestPinnedEvent, "Pinned image digest "+digest)
	} else {
		f.event(p, nil, corev1.EventTypeWarning, infrav1.DigestUnknownEvent, "The runner pod reported no image digest")
	}
	return nil
}

// markBookkept annotates the Jobs accounted for this pass, once the status
// patch holds their results.
func (f *Flow) markBookkept(ctx context.Context, p *Pass) error {
	for _, b := range p.bookkept {
		if err := f.finishRun(ctx, p, b.name); err != nil {
			return err
		}
		job := &batchv1.Job{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: p.Obj.GetNamespace(), Name: b.name}, job); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("failed to read Job %s: %w", b.name, err)
		}
		base := job.DeepCopy()
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		for k, v := range b.marks {
			job.Annotations[k] = v
		}
		job.Annotations[infrav1.BookkeptAnnotation] = "true"
		if maps.Equal(job.Annotations, base.Annotations) {
			// Marked by an earlier pass that the cache had not shown
			// this one: a patch would change nothing.
			continue
		}
		if err := f.Client.Patch(ctx, job, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to mark Job %s bookkept: %w", b.name, err)
		}
	}
	return nil
}

// clampedNote says what of a Job's result document was brought within the
// API's bounds, "" when nothing was.
func clampedNote(c *jobs.Classification) string {
	if len(c.Result.Clamped) == 0 {
		return ""
	}
	return "the runner's result was brought within bounds: " + strings.Join(c.Result.Clamped, "; ")
}

type bookkept struct {
	name  string
	marks map[string]string
}
