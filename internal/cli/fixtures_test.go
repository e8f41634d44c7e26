package cli

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// now is the fixed clock of the rendering tests.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

func cond(typ string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: *ago(time.Hour)}
}

func objMeta(ns, name, cluster, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: map[string]string{clusterNameLabel: cluster}}
}

// job is a runner Job of kind/name that finished (or started, when state
// is Running) d ago.
func job(ns, kind, owner, name string, op infrav1.Operation, state string, d time.Duration) batchv1.Job {
	j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, CreationTimestamp: *ago(d + time.Minute),
		Labels: map[string]string{
			infrav1.ManagedLabel: "true", infrav1.OwnerKindLabel: kind, infrav1.OwnerNameLabel: owner,
			infrav1.OpLabel: string(op),
		},
		Annotations: map[string]string{},
	}}
	j.Status.StartTime = ago(d + time.Minute)
	switch state {
	case "Succeeded":
		j.Status.CompletionTime = ago(d)
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: *ago(d)}}
	case "Failed", "Blocked":
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: *ago(d)}}
		if state == "Blocked" {
			j.Annotations[infrav1.DestructivePlanBlockedAnnotation] = "true"
			j.Annotations[infrav1.InputsHashAnnotation] = "h1:blockedinputs"
		}
	case "Running":
		j.Status.Active = 1
	}
	return j
}

// bringUp is one namespace's cluster: a settled TerraformCluster, a
// machine whose apply runs, a machine whose apply failed, and a pool
// waiting for its bootstrap data; plus a second namespace whose cluster
// waits for a plan approval.
func bringUp() ([]object, []batchv1.Job) {
	tc := &infrav1.TerraformCluster{ObjectMeta: objMeta("team-a", "demo", "demo", "uid-demo")}
	tc.Spec.Source.Image = "registry.example/cluster:v1"
	tc.Spec.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To[int32](600)}
	tc.Spec.Defaults = &infrav1.ClusterDefaults{Drift: &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](1200)}}
	tc.Status.Conditions = []metav1.Condition{
		cond(infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, ""),
		cond(infrav1.ApplyJobSucceededCondition, metav1.ConditionTrue, infrav1.ApplySucceededReason, ""),
	}
	tc.Status.LastRun = &infrav1.LastRun{Job: "demo-c-drift-a1", Operation: infrav1.OperationDrift}
	tc.Status.LastDriftCheck = ago(2 * time.Minute)
	tc.Status.ObservedStateSerial = 4
	tc.Status.StateBackups = []infrav1.StateBackup{{Serial: 4, TakenAt: *ago(time.Hour), Bytes: 812}, {Serial: 3, TakenAt: *ago(2 * time.Hour), Bytes: 790}}

	cp := &infrav1.TerraformMachine{ObjectMeta: objMeta("team-a", "demo-cp-abcde", "demo", "uid-cp")}
	cp.Spec.Source.Image = "registry.example/machine:v1"
	cp.Status.Conditions = []metav1.Condition{cond(infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason, "ApplyJobSucceeded: no apply yet")}
	cp.Status.ActiveJob = &infrav1.ActiveJob{Name: "demo-cp-abcde-m-apply-a1", Operation: infrav1.OperationApply, Attempt: 1, StartTime: ago(30 * time.Second)}

	failed := &infrav1.TerraformMachine{ObjectMeta: objMeta("team-a", "demo-md-fghij", "demo", "uid-md")}
	failed.Spec.Source.Image = "registry.example/machine:v1"
	failed.Status.Conditions = []metav1.Condition{
		cond(infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason, "Job demo-md-fghij-m-apply-a2 failed at step apply:\nError: quota exceeded"),
		cond(infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason, "quota exceeded"),
	}
	failed.Status.LastRun = &infrav1.LastRun{Job: "demo-md-fghij-m-apply-a2", Operation: infrav1.OperationApply,
		Error: &infrav1.RunError{Kind: infrav1.RunErrorStep, Step: "apply", Summary: "Error: quota exceeded"}}

	pool := &infrav1.TerraformMachinePool{ObjectMeta: objMeta("team-a", "demo-pool", "demo", "uid-pool")}
	pool.Spec.Source.Image = "registry.example/pool:v1"
	pool.Status.Conditions = []metav1.Condition{
		cond(infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "waiting for the MachinePool's bootstrap data"),
		cond(infrav1.DependenciesReadyCondition, metav1.ConditionFalse, infrav1.WaitingForBootstrapDataReason, "waiting for the MachinePool's bootstrap data"),
	}

	manual := &infrav1.TerraformCluster{ObjectMeta: objMeta("team-b", "reviewed", "reviewed", "uid-reviewed")}
	manual.Spec.Source.Image = "registry.example/cluster:v2"
	manual.Spec.ApplyPolicy = infrav1.ApplyPolicyManual
	manual.Spec.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To[int32](0)}
	manual.Status.Conditions = []metav1.Condition{
		cond(infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, ""),
		cond(infrav1.ApplyJobSucceededCondition, metav1.ConditionUnknown, infrav1.PlanAwaitingApprovalReason, "plan p1:abc: 0 to add, 1 to change, 0 to destroy; approve with: ..."),
	}
	manual.Status.LastRun = &infrav1.LastRun{Job: "reviewed-c-plan-a1", Operation: infrav1.OperationPlan}
	manual.Status.Plan = &infrav1.PlanPreview{InputsHash: "h1:manualinputs", Job: "reviewed-c-plan-a1", PlanHash: "p1:abc", Change: 1,
		Resources: []string{"terraform_data.substrate (update)"}, CreatedAt: ago(5 * time.Minute)}

	blocked := &infrav1.TerraformCluster{ObjectMeta: objMeta("team-b", "guarded", "guarded", "uid-guarded")}
	blocked.Spec.Source.Image = "registry.example/cluster:v3"
	blocked.Status.Conditions = []metav1.Condition{
		cond(infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason, ""),
		cond(infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.DestructivePlanBlockedReason,
			"plan deletes or replaces 1 resource(s); approve inputs hash h1:blockedinputs to apply: terraform_data.substrate (replace)"),
	}
	blocked.Status.LastRun = &infrav1.LastRun{Job: "guarded-c-apply-a3", Operation: infrav1.OperationApply,
		Error: &infrav1.RunError{Kind: infrav1.RunErrorBlocked, Summary: "plan deletes or replaces 1 resource(s)"}}

	objs := []object{
		{kind: kindOf(infrav1.KindTerraformMachinePool), w: pool}, {kind: kindOf(infrav1.KindTerraformMachine), w: failed}, {kind: kindOf(infrav1.KindTerraformCluster), w: manual},
		{kind: kindOf(infrav1.KindTerraformMachine), w: cp}, {kind: kindOf(infrav1.KindTerraformCluster), w: tc}, {kind: kindOf(infrav1.KindTerraformCluster), w: blocked},
	}
	js := []batchv1.Job{
		job("team-a", "TerraformCluster", "demo", "demo-c-apply-a1", infrav1.OperationApply, "Succeeded", 50*time.Minute),
		job("team-a", "TerraformCluster", "demo", "demo-c-drift-a1", infrav1.OperationDrift, "Succeeded", 2*time.Minute),
		job("team-a", "TerraformMachine", "demo-cp-abcde", "demo-cp-abcde-m-apply-a1", infrav1.OperationApply, "Running", 30*time.Second),
		job("team-a", "TerraformMachine", "demo-md-fghij", "demo-md-fghij-m-apply-a1", infrav1.OperationApply, "Failed", 20*time.Minute),
		job("team-a", "TerraformMachine", "demo-md-fghij", "demo-md-fghij-m-apply-a2", infrav1.OperationApply, "Failed", 8*time.Minute),
		job("team-b", "TerraformCluster", "reviewed", "reviewed-c-plan-a1", infrav1.OperationPlan, "Succeeded", 5*time.Minute),
		job("team-b", "TerraformCluster", "guarded", "guarded-c-apply-a3", infrav1.OperationApply, "Blocked", 3*time.Minute),
	}
	return objs, js
}

// kindOf returns the description of the workload kind wk.
func kindOf(wk infrav1.WorkloadKind) kind { return kindsOf([]infrav1.WorkloadKind{wk})[0] }
