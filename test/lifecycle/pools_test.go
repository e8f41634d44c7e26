package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// autoscaled are valid autoscaler annotations, min 2 and max 5.
func autoscaled() map[string]string {
	return map[string]string{infrav1.AutoscalerMinSizeAnnotation: "2", infrav1.AutoscalerMaxSizeAnnotation: "5"}
}

// runVars are the tfvars of a running Job's run Secret.
func (e *env) runVars(job *batchv1.Job) *corev1.Secret {
	e.t.Helper()
	run := e.secret(jobs.RunSecretName(job.Name))
	if run == nil {
		e.t.Fatalf("the Job %s has no run Secret", job.Name)
	}
	return run
}

// wantPoolVars asserts the replicas and autoscaling inputs of a run or
// durable inputs Secret.
func (e *env) wantPoolVars(s *corev1.Secret, replicas int, enabled bool, minSize, maxSize int) {
	e.t.Helper()
	var vars map[string]any
	if err := json.Unmarshal(s.Data[contract.TFVarsFile], &vars); err != nil {
		e.t.Fatal(err)
	}
	want := map[string]any{"enabled": enabled, "min": float64(minSize), "max": float64(maxSize)}
	got, _ := vars[contract.InputAutoscaling].(map[string]any)
	if vars[contract.InputReplicas] != float64(replicas) || fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Fatalf("%s renders replicas %v and autoscaling %v; want %d and %v", s.Name, vars[contract.InputReplicas], got, replicas, want)
	}
}

// cloudScales rewrites the pool's state as the module's refresh would find
// a scaling group the cloud resized to n members, keeping the state's
// inputs hash: a refresh changes outputs, never inputs.
func (e *env) cloudScales(pw *poolWorld, serial uint64, n int) {
	e.t.Helper()
	hash := e.stateSecret(pw.TMP).Annotations[infrav1.InputsHashAnnotation]
	if hash == "" {
		e.t.Fatal("the pool's state carries no inputs hash")
	}
	e.writeState(pw.TMP, stateOf(serial, poolOutputs(n), hash))
}

// finishRefreshes finishes the pool's running refresh Jobs (succeeded) with
// a pass after each, and fails on any other operation: the membership
// refresh is all a cloud-side scale may run.
func (e *env) finishRefreshes(pw *poolWorld) int {
	e.t.Helper()
	n := 0
	for range 5 {
		active := e.activeJobs(pw.TMP)
		if len(active) == 0 {
			return n
		}
		for _, j := range active {
			if op := j.Labels[infrav1.OpLabel]; op != string(infrav1.OperationRefresh) {
				e.t.Fatalf("the pool runs a %s Job %s; only a membership refresh may run", op, j.Name)
			}
			e.finishJob(&j, succeeded, nil)
			n++
		}
		e.mustPass(pw.TMP)
	}
	e.t.Fatalf("the pool keeps starting refresh Jobs: %v", jobNames(e.activeJobs(pw.TMP)))
	return n
}

// applyJobs counts the pool's apply Jobs, finished or not.
func (e *env) applyJobs(pw *poolWorld) int {
	e.t.Helper()
	n := 0
	for _, j := range e.jobsOf(pw.TMP) {
		if j.Labels[infrav1.OpLabel] == string(infrav1.OperationApply) {
			n++
		}
	}
	return n
}

// TestMachinePools follows the book's Machine Pools page ("Choose fixed
// replicas or autoscaling", "Check the group's members") and Contract -
// MachinePool Role ("Write-back (autoscaling.enabled)", the replicas and
// autoscaling inputs) through whole passes.
func TestMachinePools(t *testing.T) {
	t.Parallel()

	// Both annotations valid, spec.replicas unset and replicas-managed-by
	// "false" (which Cluster API counts as absent): the first apply renders
	// min, CAPTF claims the annotation and writes the observed count back;
	// a cloud-side scale seen by a membership refresh reaches
	// spec.replicas with one ReplicasWrittenBack event and no apply,
	// since replicas is not part of the inputs hash while autoscaled.
	// Removing both annotations gives the claim back and spec.replicas is
	// authoritative again.
	t.Run("autoscaled_pool_writes_cloud_side_scale_back_without_an_apply", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 2, nil)
		e.update(pw.MachinePool, func() {
			pw.MachinePool.Annotations = autoscaled()
			pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation] = "false"
			pw.MachinePool.Spec.Replicas = nil
		})
		m := e.mark(pw.TMP)
		e.bringUp(pw.TMP, stateOf(1, poolOutputs(2), ""))
		e.wantPoolVars(e.durable(pw.TMP), 2, true, 2, 5)
		c := e.wantCondition(pw.TMP, infrav1.AutoscalingActiveCondition, metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason)
		if c.Message == "" {
			t.Error("AutoscalingActive True says nothing about min and max")
		}
		e.refresh(pw.MachinePool)
		if got := pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation]; got != infrav1.ReplicasManagedByCAPTF {
			t.Fatalf("replicas-managed-by %q after the first apply; want %q (\"false\" counts as absent)", got, infrav1.ReplicasManagedByCAPTF)
		}
		if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 2 {
			t.Fatalf("MachinePool spec.replicas %v after the first apply; want the observed 2", r)
		}
		if n := len(e.eventsOf(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)); n != 1 {
			t.Fatalf("%d ReplicasWrittenBack events for unset → 2; want 1", n)
		}

		// The cloud's scaling group grows to 4.
		e.cloudScales(pw, 2, 4)
		e.advance(2 * time.Minute)
		m = e.mark(pw.TMP)
		e.mustPass(pw.TMP)
		if e.finishRefreshes(pw) == 0 {
			t.Fatal("no membership refresh ran after the refresh interval")
		}
		e.refresh(pw.TMP)
		e.refresh(pw.MachinePool)
		if r := pw.TMP.Status.Replicas; r == nil || *r != 4 || len(pw.TMP.Spec.ProviderIDList) != 4 {
			t.Fatalf("status.replicas %v, providerIDList %v after the cloud scaled to 4", r, pw.TMP.Spec.ProviderIDList)
		}
		if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 4 {
			t.Fatalf("MachinePool spec.replicas %v; want the cloud's 4 written back", r)
		}
		evs := e.eventsOf(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal {
			t.Fatalf("ReplicasWrittenBack events for 2 → 4: %v; want one Normal", evs)
		}
		// More passes: nothing left to write, no apply.
		m = e.mark(pw.TMP)
		e.advance(10 * time.Second)
		e.mustPass(pw.TMP)
		e.finishRefreshes(pw)
		e.wantNoEvent(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)
		if n := e.applyJobs(pw); n != 1 {
			t.Fatalf("%d apply Jobs; a cloud-side scale of an autoscaled pool must not re-apply", n)
		}

		// Autoscaling off: the claim is given back and spec.replicas, now
		// 3, is what the next apply renders; nothing is written back.
		m = e.mark(pw.TMP)
		e.update(pw.MachinePool, func() {
			delete(pw.MachinePool.Annotations, infrav1.AutoscalerMinSizeAnnotation)
			delete(pw.MachinePool.Annotations, infrav1.AutoscalerMaxSizeAnnotation)
			pw.MachinePool.Spec.Replicas = ptr.To[int32](3)
		})
		e.advance(time.Minute)
		e.mustPass(pw.TMP)
		e.wantCondition(pw.TMP, infrav1.AutoscalingActiveCondition, metav1.ConditionFalse, infrav1.AutoscalingDisabledReason)
		e.refresh(pw.MachinePool)
		if v, ok := pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation]; ok {
			t.Fatalf("replicas-managed-by %q kept after the autoscaler annotations were removed", v)
		}
		if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 3 {
			t.Fatalf("MachinePool spec.replicas %v; the user's 3 is authoritative again", r)
		}
		e.wantNoEvent(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)
		var next *batchv1.Job
		for range 3 {
			active := e.activeJobs(pw.TMP)
			if len(active) == 1 && active[0].Labels[infrav1.OpLabel] == string(infrav1.OperationApply) {
				next = &active[0]
				break
			}
			for _, j := range active {
				e.finishJob(&j, succeeded, nil)
			}
			e.mustPass(pw.TMP)
		}
		if next == nil {
			t.Fatalf("no apply after autoscaling was turned off; Jobs %v", jobNames(e.jobsOf(pw.TMP)))
		}
		e.wantPoolVars(e.runVars(next), 3, false, 0, 0)
	})

	// Invalid annotations: AutoscalingActive False/AutoscalingAnnotationsInvalid
	// and a plain apply of spec.replicas, with nothing claimed.
	for _, tc := range []struct{ name, minSize, maxSize string }{
		{"min_above_max", "5", "2"},
		{"negative", "-1", "4"},
		{"not_a_number", "2", "five"},
	} {
		t.Run("invalid_autoscaler_annotations_"+tc.name+"_apply_plainly", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.provisionedCluster("prod")
			pw := e.newPool(w, "prod-mp-0", 3, nil)
			e.update(pw.MachinePool, func() {
				pw.MachinePool.Annotations = map[string]string{
					infrav1.AutoscalerMinSizeAnnotation: tc.minSize, infrav1.AutoscalerMaxSizeAnnotation: tc.maxSize,
				}
			})
			m := e.mark(pw.TMP)
			e.bringUp(pw.TMP, stateOf(1, poolOutputs(4), ""))
			e.wantPoolVars(e.durable(pw.TMP), 3, false, 0, 0)
			c := e.wantCondition(pw.TMP, infrav1.AutoscalingActiveCondition, metav1.ConditionFalse, infrav1.AutoscalingAnnotationsInvalidReason)
			if c.Message == "" {
				t.Error("AutoscalingAnnotationsInvalid does not say what is wrong")
			}
			e.refresh(pw.MachinePool)
			if v, ok := pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation]; ok {
				t.Fatalf("replicas-managed-by %q claimed with invalid annotations", v)
			}
			if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 3 {
				t.Fatalf("MachinePool spec.replicas %v; want the user's 3 untouched", r)
			}
			e.wantNoEvent(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)
		})
	}

	// Another controller's replicas-managed-by is left alone: no claim, no
	// write-back, AutoscalingActive False/ReplicasManagedExternally.
	t.Run("foreign_replicas_managed_by_is_left_alone", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 2, nil)
		e.update(pw.MachinePool, func() {
			pw.MachinePool.Annotations = autoscaled()
			pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation] = "someone-else"
		})
		m := e.mark(pw.TMP)
		e.bringUp(pw.TMP, stateOf(1, poolOutputs(4), ""))
		e.wantCondition(pw.TMP, infrav1.AutoscalingActiveCondition, metav1.ConditionFalse, infrav1.ReplicasManagedExternallyReason)
		e.refresh(pw.MachinePool)
		if got := pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation]; got != "someone-else" {
			t.Fatalf("replicas-managed-by %q; another controller's value must stay", got)
		}
		if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 2 {
			t.Fatalf("MachinePool spec.replicas %v; nothing may be written back under a foreign claim", r)
		}
		e.wantNoEvent(pw.TMP, m, infrav1.ReplicasWrittenBackEvent)
	})

	// spec.providerIDList is the module's list sorted and de-duplicated;
	// status.instances keeps at most 1000 entries, said in OutputsValid.
	t.Run("provider_id_list_sorted_deduplicated_and_instances_capped", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 3, nil)
		out := poolOutputs(0)
		out["provider_id_list"] = []any{"captf://test/pool-2", "captf://test/pool-0", "captf://test/pool-2", "captf://test/pool-1"}
		out["replicas"] = 3
		inst := make([]any, 0, 1001)
		for i := range 1001 {
			inst = append(inst, map[string]any{"provider_id": fmt.Sprintf("captf://test/pool-%04d", i), "state": "running"})
		}
		out["instances"] = inst
		e.bringUp(pw.TMP, stateOf(1, out, ""))
		want := []string{"captf://test/pool-0", "captf://test/pool-1", "captf://test/pool-2"}
		if !slices.Equal(pw.TMP.Spec.ProviderIDList, want) {
			t.Fatalf("spec.providerIDList %v; want %v", pw.TMP.Spec.ProviderIDList, want)
		}
		if n := len(pw.TMP.Status.Instances); n != contract.MaxInstances {
			t.Fatalf("status.instances has %d entries; want the cap %d", n, contract.MaxInstances)
		}
		e.wantCondition(pw.TMP, infrav1.OutputsValidCondition, metav1.ConditionTrue, infrav1.InstancesTruncatedReason)
	})
}
