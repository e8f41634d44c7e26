package cli

import (
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// Row is what status shows of one object; -o json and -o yaml print it as
// is.
type Row struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Ready is the Ready condition's status, its Reason and Message.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// LastRun is status.lastRun, with when its Job finished when the Job
	// is still there.
	LastRun *RunInfo `json:"lastRun,omitempty"`
	// Active is status.activeJob.
	Active *RunInfo `json:"activeJob,omitempty"`
	// NextCheck is when the next drift check is due, estimated from status
	// and the object's drift settings; nil when drift checks are off.
	NextCheck *time.Time `json:"nextCheck,omitempty"`
	// WaitingOn says what keeps the object from moving on, if anything.
	WaitingOn string `json:"waitingOn,omitempty"`
	// Hint is the command that answers WaitingOn, when there is one.
	Hint         string `json:"hint,omitempty"`
	Image        string `json:"image,omitempty"`
	StateSerial  int64  `json:"stateSerial,omitempty"`
	StateBackups int    `json:"stateBackups,omitempty"`
	Deleting     bool   `json:"deleting,omitempty"`
	// Jobs are the object's Jobs, oldest first, in a cluster's tree.
	Jobs []JobRow `json:"jobs,omitempty"`
}

// RunInfo is one Job run of an object.
type RunInfo struct {
	Job       string `json:"job"`
	Operation string `json:"operation"`
	// Outcome is succeeded, running, or why it failed: "failed at <step>",
	// blocked, plan-changed, interrupted, image-layout.
	Outcome string     `json:"outcome"`
	At      *time.Time `json:"at,omitempty"`
}

// Settings are the manager settings status cannot read from the API and
// assumes.
type Settings struct {
	// DriftDefault is the manager's --drift-default-interval.
	DriftDefault time.Duration
}

// rowFor builds the row of o from the object and its Jobs (any Jobs of the
// namespace; the ones not its own are ignored). Pure: tests feed objects.
func rowFor(o object, owner *infrav1.TerraformCluster, js []batchv1.Job, s Settings) Row {
	w := o.w
	st := w.GetWorkspaceStatus()
	r := Row{
		Namespace:    w.GetNamespace(),
		Kind:         o.kind.Kind,
		Name:         w.GetName(),
		Ready:        "Unknown",
		Image:        w.GetWorkspace().Source.Image,
		StateSerial:  st.ObservedStateSerial,
		StateBackups: len(st.StateBackups),
		Deleting:     w.GetDeletionTimestamp() != nil,
	}
	if c := meta.FindStatusCondition(st.Conditions, infrav1.ReadyCondition); c != nil {
		r.Ready, r.Reason, r.Message = string(c.Status), c.Reason, c.Message
	}
	// Job names repeat across namespaces: key them by both.
	byName := map[string]*batchv1.Job{}
	for i := range js {
		byName[js[i].Namespace+"/"+js[i].Name] = &js[i]
	}
	if lr := st.LastRun; lr != nil {
		r.LastRun = &RunInfo{Job: lr.Job, Operation: string(lr.Operation), Outcome: outcome(lr.Error)}
		if j := byName[r.Namespace+"/"+lr.Job]; j != nil {
			r.LastRun.At = finishedAt(j)
		}
	}
	if a := st.ActiveJob; a != nil {
		r.Active = &RunInfo{Job: a.Name, Operation: string(a.Operation), Outcome: "running"}
		if a.StartTime != nil {
			t := a.StartTime.Time
			r.Active.At = &t
		}
	}
	r.NextCheck = nextCheck(o, owner, s)
	r.WaitingOn, r.Hint = waitingOn(o)
	return r
}

// outcome names a last run's result.
func outcome(e *infrav1.RunError) string {
	switch {
	case e == nil:
		return "succeeded"
	case e.Kind == infrav1.RunErrorStep && e.Step != "":
		return "failed at " + e.Step
	case e.Kind == infrav1.RunErrorStep:
		return "failed"
	}
	return string(e.Kind)
}

// finishedAt is when a Job finished (or started, while it runs).
func finishedAt(j *batchv1.Job) *time.Time {
	if j.Status.CompletionTime != nil {
		t := j.Status.CompletionTime.Time
		return &t
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) && c.Status == corev1.ConditionTrue {
			t := c.LastTransitionTime.Time
			return &t
		}
	}
	if j.Status.StartTime != nil {
		t := j.Status.StartTime.Time
		return &t
	}
	return nil
}

// nextCheck estimates when the next drift check is due: the later of the
// last drift check and the last refresh, plus the effective interval and
// the object's jitter (book: Drift and Health). Nil when drift checks are
// off, or no check or refresh has run yet.
func nextCheck(o object, owner *infrav1.TerraformCluster, s Settings) *time.Time {
	st := o.w.GetWorkspaceStatus()
	iv := effectiveDrift(o, owner, s)
	if !iv.Enabled {
		return nil
	}
	var last time.Time
	for _, t := range []*metav1.Time{st.LastDriftCheck, st.LastRefresh} {
		if t != nil && t.After(last) {
			last = t.Time
		}
	}
	if last.IsZero() {
		return nil
	}
	next := last.Add(iv.Interval + decide.Jitter(string(o.w.GetUID()), iv.Interval))
	return &next
}

// effectiveDrift is the object's drift interval, as the manager works it
// out: its own, its TerraformCluster's defaults (owner, for a machine or
// pool), or the manager's default.
func effectiveDrift(o object, owner *infrav1.TerraformCluster, s Settings) decide.DriftInterval {
	caps := o.w.Capabilities()
	ds := decide.DriftSettings{ManagerDefault: s.DriftDefault, IntervalSeconds: o.w.GetDriftPolicy().IntervalSeconds}
	if caps.ClusterMember && owner != nil && owner.Spec.Defaults != nil && owner.Spec.Defaults.Drift != nil {
		ds.DefaultsIntervalSeconds = owner.Spec.Defaults.Drift.IntervalSeconds
	}
	return decide.EffectiveDriftInterval(caps, ds)
}

// waitingOn says what keeps the object from moving on, most pressing
// first, and the command that answers it.
func waitingOn(o object) (string, string) {
	w := o.w
	st := w.GetWorkspaceStatus()
	cond := func(t string) *metav1.Condition { return meta.FindStatusCondition(st.Conditions, t) }
	is := func(t string, s metav1.ConditionStatus, reasons ...string) *metav1.Condition {
		c := cond(t)
		if c == nil || c.Status != s {
			return nil
		}
		if len(reasons) == 0 {
			return c
		}
		for _, r := range reasons {
			if c.Reason == r {
				return c
			}
		}
		return nil
	}
	ref, ns := o.ref(), w.GetNamespace()
	if c := is(infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason); c != nil {
		if w.GetDeletionTimestamp() != nil {
			return "state lost while deleting: restore a backup or abandon", fmt.Sprintf("kubectl captf restore %s -n %s", ref, ns)
		}
		return "state lost: restore a backup", fmt.Sprintf("kubectl captf restore %s -n %s", ref, ns)
	}
	if a := st.ActiveJob; a != nil {
		return fmt.Sprintf("%s Job %s", a.Operation, a.Name), fmt.Sprintf("kubectl captf logs %s -n %s", ref, ns)
	}
	if is(infrav1.PausedCondition, metav1.ConditionTrue) != nil {
		return "paused", ""
	}
	if c := is(infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.PlanAwaitingApprovalReason, infrav1.PlanChangedReason); c != nil {
		return "plan approval", fmt.Sprintf("kubectl captf plan show %s -n %s", ref, ns)
	}
	if c := is(infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.DestructivePlanBlockedReason); c != nil {
		return "destructive-plan approval", fmt.Sprintf("kubectl captf plan show %s -n %s", ref, ns)
	}
	if c := is(infrav1.StateReadableCondition, metav1.ConditionFalse); c != nil {
		h := ""
		if c.Reason == infrav1.StateLockedReason {
			h = fmt.Sprintf("kubectl captf unlock %s -n %s", ref, ns)
		}
		return "state: " + c.Reason, h
	}
	for _, t := range []string{infrav1.DependenciesReadyCondition, infrav1.IdentityAllowedCondition, infrav1.CredentialsMirroredCondition, infrav1.RunnerRBACReadyCondition} {
		if c := cond(t); c != nil && c.Status != metav1.ConditionTrue {
			return c.Reason, ""
		}
	}
	if c := is(infrav1.RestoreJobSucceededCondition, metav1.ConditionFalse); c != nil {
		return "restore: " + c.Reason, fmt.Sprintf("kubectl captf logs %s -n %s --op restore", ref, ns)
	}
	if c := is(infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse); c != nil && st.LastRun != nil && st.LastRun.Error != nil {
		return "retry after " + c.Reason, fmt.Sprintf("kubectl captf logs %s -n %s", ref, ns)
	}
	return "", ""
}

// JobRow is one runner Job in the tree.
type JobRow struct {
	Name      string     `json:"name"`
	Operation string     `json:"operation"`
	State     string     `json:"state"`
	At        *time.Time `json:"at,omitempty"`
}

// jobRows are the Jobs of o, oldest first.
func jobRows(o object, js []batchv1.Job) []JobRow {
	var out []JobRow
	var mine []batchv1.Job
	for _, j := range js {
		if j.Namespace == o.w.GetNamespace() && j.Labels[infrav1.OwnerKindLabel] == o.kind.Kind && j.Labels[infrav1.OwnerNameLabel] == owner.LabelValue(o.w.GetName()) {
			mine = append(mine, j)
		}
	}
	sort.SliceStable(mine, func(a, b int) bool {
		if !mine[a].CreationTimestamp.Equal(&mine[b].CreationTimestamp) {
			return mine[a].CreationTimestamp.Before(&mine[b].CreationTimestamp)
		}
		return mine[a].Name < mine[b].Name
	})
	for i := range mine {
		j := &mine[i]
		out = append(out, JobRow{Name: j.Name, Operation: j.Labels[infrav1.OpLabel], State: jobState(j), At: finishedAt(j)})
	}
	return out
}

// jobState is a Job's state as CAPTF classified it, when it did.
func jobState(j *batchv1.Job) string {
	switch {
	case j.Annotations[infrav1.DestructivePlanBlockedAnnotation] == "true":
		return "Blocked"
	case j.Annotations[infrav1.PlanChangedAnnotation] == "true":
		return "PlanChanged"
	case j.Annotations[infrav1.InterruptedAnnotation] == "true":
		return "Interrupted"
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return "Succeeded"
		case batchv1.JobFailed:
			return "Failed"
		}
	}
	if j.Status.Active > 0 {
		return "Running"
	}
	return "Pending"
}

// sortObjects orders by namespace, kind (cluster, machine, pool), name.
func sortObjects(os []object) {
	rank := func(k kind) int {
		for i, kd := range kinds {
			if kd.Kind == k.Kind {
				return i
			}
		}
		return len(kinds)
	}
	sort.SliceStable(os, func(a, b int) bool {
		x, y := os[a], os[b]
		if x.w.GetNamespace() != y.w.GetNamespace() {
			return x.w.GetNamespace() < y.w.GetNamespace()
		}
		if rank(x.kind) != rank(y.kind) {
			return rank(x.kind) < rank(y.kind)
		}
		return x.w.GetName() < y.w.GetName()
	})
}

// clusterNameLabel is Cluster API's clusterv1.ClusterNameLabel, spelled
// here so the plugin does not load Cluster API's packages to start.
const clusterNameLabel = "cluster.x-k8s.io/cluster-name"

// clusterName is the Cluster API Cluster an object belongs to.
func clusterName(w metav1.Object) string {
	return w.GetLabels()[clusterNameLabel]
}
