package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// KeepFinishedPlans is how many finished TerraformPlans (Applied,
// Superseded, Expired) each object keeps, newest first; a Pending or
// Approved one is never pruned.
const KeepFinishedPlans = 3

// Notes a record carries when its change list is missing.
const (
	noteDetailMissing    = "the runner wrote no plan detail; the record holds the plan's hash and counts only (the Job's log shows the plan while the Job is kept)"
	noteDetailUnreadable = "the runner's plan detail could not be read; the record holds the plan's hash and counts only: "
	noteDetailOtherPlan  = "the runner's plan detail is of another plan than the Job's result; the record holds the plan's hash and counts only"
	noteDetailRefused    = "the plan detail did not fit the record's schema; the record holds the plan's hash and counts only: "
)

// planReasonOf says whether the Job bookkept now produced a plan a person
// must look at, and why: the plan status.plan now holds (a plan Job under
// applyPolicy Manual, or an approved apply whose plan changed), or an
// apply the destructive-plan guard stopped.
func planReasonOf(op infrav1.Operation, c *jobs.Classification, plan *planRecord) (infrav1.TerraformPlanReason, bool) {
	if c.Result.Plan == nil || c.Result.Plan.Hash == "" {
		return "", false
	}
	switch {
	case op == infrav1.OperationApply && c.Outcome == jobs.OutcomeBlocked:
		return infrav1.TerraformPlanDestructive, true
	case plan != nil && plan.reason == infrav1.PlanChangedReason:
		return infrav1.TerraformPlanChanged, true
	case plan != nil && plan.reason == infrav1.PlanAwaitingApprovalReason:
		return infrav1.TerraformPlanManual, true
	}
	return "", false
}

// writePlanRecord writes the TerraformPlan of a Job's plan, named after the Job
// so that a pass repeated after a crash finds it instead of writing a
// second one, with the change list the runner left in captf-plan-<job>;
// the Secret goes once the record holds it. A missing or unreadable detail
// still gives a record, with the summary and a note.
func (f *Flow) writePlanRecord(ctx context.Context, p *Pass, job *batchv1.Job, c *jobs.Classification, reason infrav1.TerraformPlanReason) error {
	pl := c.Result.Plan
	rec := &infrav1.TerraformPlan{
		ObjectMeta: metav1.ObjectMeta{
			Name:      job.Name,
			Namespace: job.Namespace,
			Labels:    p.owner().Labels(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: infrav1.GroupVersion.String(),
				Kind:       string(p.Kind),
				Name:       p.Obj.GetName(),
				UID:        p.Obj.GetUID(),
			}},
		},
		Spec: infrav1.TerraformPlanSpec{
			TargetRef:      infrav1.PlanTargetReference{Kind: string(p.Kind), Name: p.Obj.GetName(), UID: string(p.Obj.GetUID())},
			Job:            job.Name,
			InputsHash:     orDash(job.Annotations[infrav1.InputsHashAnnotation]),
			PlanHash:       pl.Hash,
			Reason:         reason,
			RecordedAt:     &metav1.MicroTime{Time: p.Now},
			RuntimeVersion: c.Result.RuntimeVersion,
			Counts: infrav1.PlanCounts{
				Add: int32(pl.Add), Change: int32(pl.Change), Destroy: int32(pl.Destroy),
				Import: int32(pl.Import), Move: int32(pl.Move), Outputs: int32(pl.Outputs),
			},
		},
		Status: infrav1.TerraformPlanStatus{Phase: infrav1.TerraformPlanPending, PhaseTime: &metav1.Time{Time: p.Now}},
	}
	rec.Labels[infrav1.PlanPhaseLabel] = string(infrav1.TerraformPlanPending)
	detail := &corev1.Secret{}
	key := client.ObjectKey{Namespace: job.Namespace, Name: result.PlanSecretName(job.Name)}
	switch err := f.APIReader.Get(ctx, key, detail); {
	case apierrors.IsNotFound(err):
		rec.Spec.Note = noteDetailMissing
	case err != nil:
		return fmt.Errorf("failed to read the plan detail Secret %s: %w", key.Name, err)
	default:
		d, derr := result.DecodePlanDetail(detail.Data[result.PlanDetailKey])
		switch {
		case derr != nil:
			rec.Spec.Note = clampNote(noteDetailUnreadable + derr.Error())
		case d.Hash != pl.Hash:
			rec.Spec.Note = noteDetailOtherPlan
		default:
			rec.Spec.Changes, rec.Spec.Omitted = d.Changes, d.Omitted
		}
	}
	err := f.Client.Create(ctx, rec)
	if apierrors.IsInvalid(err) && rec.Spec.Changes != nil {
		// What the runner wrote does not fit the schema: the record keeps
		// the summary and says why.
		rec.Spec.Changes, rec.Spec.Omitted = nil, nil
		rec.Spec.Note = clampNote(noteDetailRefused + err.Error())
		err = f.Client.Create(ctx, rec)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to record TerraformPlan %s: %w", rec.Name, err)
	}
	if err := f.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete the plan detail Secret %s: %w", key.Name, err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clampNote keeps a note within spec.note's 1024 characters.
func clampNote(s string) string { return text.Truncate(s, 1000) }

// planFacts are what a record's phase is decided from.
type planFacts struct {
	// newest: no newer record of the same object exists.
	newest bool
	// approvePlan and approveDestructive are the object's approval
	// annotations.
	approvePlan, approveDestructive string
	// waiting: the object still waits for this plan (status.plan names
	// its Job, or its newest apply is this blocked Job).
	waiting bool
	// inputsHash is the object's current inputs hash, "" when this pass
	// did not build them.
	inputsHash string
	// deleting: the object is being deleted.
	deleting bool
	// applied: an apply that this plan's approval let through succeeded
	// after the record was written.
	applied bool
}

// planPhase is a record's next phase. A finished phase stays. An applied
// plan is Applied; one whose approval annotation names it is Approved; a
// plan the object no longer waits for is Superseded when a newer plan or
// new inputs replaced it, else Expired; otherwise it is Pending.
func planPhase(rec *infrav1.TerraformPlan, f planFacts) infrav1.TerraformPlanPhase {
	cur := rec.Status.Phase
	if cur.Finished() {
		return cur
	}
	approved := f.approvePlan == rec.Spec.PlanHash
	if rec.Spec.Reason == infrav1.TerraformPlanDestructive {
		approved = f.approveDestructive == rec.Spec.InputsHash
	}
	replaced := !f.newest || (f.inputsHash != "" && f.inputsHash != rec.Spec.InputsHash)
	switch {
	case f.applied:
		return infrav1.TerraformPlanApplied
	case !f.newest:
		return infrav1.TerraformPlanSuperseded
	case f.deleting:
		return infrav1.TerraformPlanExpired
	case approved:
		return infrav1.TerraformPlanApproved
	case f.waiting:
		return infrav1.TerraformPlanPending
	case replaced:
		return infrav1.TerraformPlanSuperseded
	}
	return infrav1.TerraformPlanExpired
}

// planRecords keeps the phases of the object's TerraformPlans current and
// prunes the finished ones beyond KeepFinishedPlans. Each change of phase
// is one patch of the record's status and its captf.io/plan-phase label;
// a record whose phase stays is not written.
func (f *Flow) planRecords(ctx context.Context, p *Pass) error {
	var list infrav1.TerraformPlanList
	if err := f.Client.List(ctx, &list, client.InNamespace(p.Obj.GetNamespace()), client.MatchingLabels(p.owner().Labels())); err != nil {
		return fmt.Errorf("failed to list TerraformPlans: %w", err)
	}
	// Owned by the object: its owner reference, which clusterctl move
	// rewrites, not spec.targetRef.uid, which keeps the UID of the object
	// the plan was computed for.
	var recs []*infrav1.TerraformPlan
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.UID == p.Obj.GetUID() {
				recs = append(recs, &list.Items[i])
				break
			}
		}
	}
	if len(recs) == 0 {
		return nil
	}
	sort.Slice(recs, func(i, j int) bool { return newerPlan(recs[i], recs[j]) })
	base := p.planFactsBase()
	finished := 0
	for i, rec := range recs {
		facts := base
		facts.newest = i == 0
		facts.waiting = p.waitsFor(rec)
		facts.applied = p.appliedPlan(rec)
		phase := planPhase(rec, facts)
		if phase != rec.Status.Phase || rec.Labels[infrav1.PlanPhaseLabel] != string(phase) {
			if err := f.patchPlanPhase(ctx, p, rec, phase); err != nil {
				return err
			}
		}
		if !phase.Finished() {
			continue
		}
		if finished++; finished > KeepFinishedPlans {
			if err := f.Client.Delete(ctx, rec, client.Preconditions{UID: &rec.UID}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("failed to prune TerraformPlan %s: %w", rec.Name, err)
			}
		}
	}
	return nil
}

// newerPlan orders an object's records newest first: by spec.recordedAt
// (the seconds of creationTimestamp cannot tell apart two records of one
// second), then creationTimestamp, then name.
func newerPlan(a, b *infrav1.TerraformPlan) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if a.Spec.RecordedAt != nil && b.Spec.RecordedAt != nil {
		ta, tb = a.Spec.RecordedAt.Time, b.Spec.RecordedAt.Time
	}
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Name > b.Name
}

func (f *Flow) patchPlanPhase(ctx context.Context, p *Pass, rec *infrav1.TerraformPlan, phase infrav1.TerraformPlanPhase) error {
	before := rec.DeepCopy()
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	rec.Labels[infrav1.PlanPhaseLabel] = string(phase)
	if rec.Status.Phase != phase {
		rec.Status.Phase = phase
		rec.Status.PhaseTime = &metav1.Time{Time: p.Now.Truncate(time.Second)}
	}
	if err := f.Client.Patch(ctx, rec, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to record phase %s of TerraformPlan %s: %w", phase, rec.Name, err)
	}
	return nil
}

// planFactsBase are the facts every record of the pass's object shares.
func (p *Pass) planFactsBase() planFacts {
	ann := p.Obj.GetAnnotations()
	fs := planFacts{
		approvePlan:        ann[infrav1.ApprovePlanAnnotation],
		approveDestructive: ann[infrav1.ApproveDestructivePlanAnnotation],
		deleting:           p.deleting(),
	}
	if p.Inputs.Rendered != nil {
		fs.inputsHash = p.Inputs.Rendered.Hash
	}
	return fs
}

// waitsFor: the object waits for this record's plan: status.plan holds
// its Job's plan, or, for a destructive plan, its Job is the object's
// newest apply and is still blocked for the current inputs.
func (p *Pass) waitsFor(rec *infrav1.TerraformPlan) bool {
	if rec.Spec.Reason != infrav1.TerraformPlanDestructive {
		if plan := p.flow.plan(p); plan != nil && *plan != nil {
			return (*plan).Job == rec.Spec.Job
		}
		return false
	}
	var newest *batchv1.Job
	for i := range p.Jobs {
		j := &p.Jobs[i]
		if j.Labels[infrav1.OpLabel] == string(infrav1.OperationApply) && isOwnedBy(j, p.Obj) {
			newest = j // p.Jobs is oldest first
		}
	}
	return newest != nil && newest.Name == rec.Spec.Job
}

// appliedPlan: an apply created since the record was written and let
// through by its approval succeeded: for a destructive plan an apply of
// the same inputs, otherwise one that carried its plan hash as the
// approved plan.
func (p *Pass) appliedPlan(rec *infrav1.TerraformPlan) bool {
	for i := range p.Jobs {
		j := &p.Jobs[i]
		if j.Name == rec.Spec.Job || j.Labels[infrav1.OpLabel] != string(infrav1.OperationApply) || !isOwnedBy(j, p.Obj) ||
			j.CreationTimestamp.Before(&rec.CreationTimestamp) || !jobs.Record(j, nil).Succeeded {
			continue
		}
		if rec.Spec.Reason == infrav1.TerraformPlanDestructive {
			if j.Annotations[infrav1.InputsHashAnnotation] == rec.Spec.InputsHash {
				return true
			}
		} else if j.Annotations[infrav1.ApprovedPlanAnnotation] == rec.Spec.PlanHash {
			return true
		}
	}
	return false
}
