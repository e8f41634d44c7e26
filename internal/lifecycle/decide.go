package lifecycle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// observe fills the decision's Observation from the pass.
func (f *Flow) observe(p *Pass) decide.Observation {
	o := p.Obj
	s := p.Status()
	obs := decide.Observation{
		Kind:                   p.Kind,
		Caps:                   o.Capabilities(),
		Name:                   o.GetName(),
		UID:                    string(o.GetUID()),
		Now:                    p.Now,
		JobCacheStale:          p.jobCacheStale,
		Paused:                 p.paused,
		CredentialsWait:        p.CredentialsWait,
		JobPolicyInvalid:       p.PolicyErr != nil,
		Deleting:               !o.GetDeletionTimestamp().IsZero(),
		AbandonInfrastructure:  o.GetAnnotations()[infrav1.AbandonInfrastructureAnnotation],
		LastRestoredSerial:     s.LastRestoredSerial,
		State:                  p.StateStatus,
		EverApplied:            p.everApplied(),
		SucceededApply:         p.succeededApply(),
		Provisioned:            p.Provisioned(),
		Inputs:                 p.Inputs.Status,
		InputsReason:           p.Inputs.Reason,
		DurableInputsMissing:   p.Durable == nil,
		DurableInputsHash:      p.durableInputsHash(f.Adapter.Role()),
		ApproveDestructivePlan: o.GetAnnotations()[infrav1.ApproveDestructivePlanAnnotation],
		ApprovePlan:            o.GetAnnotations()[infrav1.ApprovePlanAnnotation],
		Jobs:                   p.Records,
		History: decide.HistoryLimits{
			Successful: int(p.Policy.SuccessfulJobsHistoryLimit),
			Failed:     int(p.Policy.FailedJobsHistoryLimit),
		},
		Drift:            f.driftSettings(p),
		PendingRefreshes: int(s.PendingRefreshes),
	}
	if p.OwnerWait != nil {
		obs.OwnerWait = p.OwnerWait.Reason
	}
	if j := p.Active; j != nil {
		obs.ActiveJob = &decide.ActiveJob{Name: j.Name, Op: decide.Operation(j.Labels[infrav1.OpLabel])}
	}
	if p.State != nil {
		obs.StateInputsHash = p.State.InputsHash
	}
	// Neither is read while a Job is active or the object is paused, and
	// decide waits on those before it looks at either.
	if obs.State == "" {
		obs.State = decide.StateNotFound
	}
	if obs.Inputs == "" {
		obs.Inputs = decide.InputsNotRendered
	}
	if p.Inputs.Rendered != nil && p.Inputs.Status == decide.InputsBuilt {
		obs.CurrentInputsHash = p.Inputs.Rendered.Hash
	}
	if p.Durable != nil {
		_, obs.InterruptedApply = p.Durable.Annotations[infrav1.InterruptedApplyAnnotation]
	}
	if v, ok := o.GetAnnotations()[infrav1.RestoreStateAnnotation]; ok {
		r := &decide.RestoreRequest{}
		if serial, err := state.ParseRestoreSerial(v); err == nil {
			r.Serial = int64(serial)
			for _, b := range s.StateBackups {
				if b.Serial == r.Serial {
					r.BackupFound = true
				}
			}
		}
		obs.Restore = r
	}
	if s.LastRefresh != nil {
		obs.LastRefresh = s.LastRefresh.Time
	}
	if s.LastDriftCheck != nil {
		obs.LastDriftCheck = s.LastDriftCheck.Time
	}
	obs.DriftCheckRequested = requestedAt(p, infrav1.DriftCheckRequestedAnnotation)
	if c := p.Condition(infrav1.DriftDetectedCondition); c != nil && c.Status == metav1ConditionTrue {
		obs.DriftFound = true
	}
	f.Adapter.Observe(p, &obs)
	if h := p.health; h != "" {
		obs.Health = h
	}
	for _, r := range p.Records {
		if r.Op == decide.OpApply && r.Outcome() == decide.OutcomeSucceeded && r.Finished.After(obs.LastApply) {
			obs.LastApply = r.Finished
		}
	}
	obs.DependentsExist = p.dependentsExist
	return obs
}

// driftSettings are the object's drift settings: its own interval and
// action (the kind's), its cluster's defaults (for a cluster member) and
// the manager's default.
func (f *Flow) driftSettings(p *Pass) decide.DriftSettings {
	own := p.Obj.GetDriftPolicy()
	d := decide.DriftSettings{ManagerDefault: f.Options.DriftDefaultInterval, IntervalSeconds: own.IntervalSeconds, Action: own.Action}
	if p.Obj.Capabilities().ClusterMember && p.TerraformCluster != nil {
		if dd := p.TerraformCluster.Spec.Defaults; dd != nil && dd.Drift != nil {
			d.DefaultsIntervalSeconds = dd.Drift.IntervalSeconds
		}
	}
	return d
}

// decide fills the Observation and asks internal/decide.
func (f *Flow) decide(ctx context.Context, p *Pass) error {
	if p.Obj.Capabilities().HasMembers && p.deleting() {
		exist, err := f.dependentsExist(ctx, p)
		if err != nil {
			return err
		}
		p.dependentsExist = exist
	}
	obs := f.observe(p)
	driftOn := decide.EffectiveDriftInterval(obs.Caps, obs.Drift).Enabled
	p.driftOn = &driftOn
	d, err := decide.Decide(obs)
	if err != nil {
		return fmt.Errorf("failed to decide the next operation: %w", err)
	}
	p.Decision = d
	metrics.Decision(p.Kind, string(d.Op), string(d.Reason))
	ctrl.LoggerFrom(ctx).V(4).Info("Decided", "op", d.Op, "reason", d.Reason, "requeueAfter", d.RequeueAfter)
	return nil
}

// dependentsExist: members carrying the cluster's name (objects of every
// kind that is a cluster member: TerraformMachines and
// TerraformMachinePools) remain in the namespace.
func (f *Flow) dependentsExist(ctx context.Context, p *Pass) (bool, error) {
	name := p.ClusterName
	if name == "" {
		name = p.Obj.GetLabels()[clusterv1.ClusterNameLabel]
	}
	if name == "" {
		return false, nil
	}
	sel := client.MatchingLabels{clusterv1.ClusterNameLabel: name}
	for _, k := range infrav1.KindsWith(func(c infrav1.Capabilities) bool { return c.ClusterMember }) {
		list := k.NewList()
		if err := f.Client.List(ctx, list, client.InNamespace(p.Obj.GetNamespace()), sel); err != nil {
			return false, fmt.Errorf("failed to list %ss: %w", k, err)
		}
		if meta.LenList(list) > 0 {
			return true, nil
		}
	}
	return false, nil
}
