package lifecycle

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// TestJobInputs checks the rules of the book page Job Inputs: which
// inputs a Job runs, what re-applies, and the durable inputs Secret.
func TestJobInputs(t *testing.T) {
	t.Parallel()

	t.Run("inputs_change_reapplies_a_mutable_kind", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		before := e.durable(w.TC).Data[contract.TFVarsFile]
		stateHash := e.stateSecret(w.TC).Annotations[infrav1.InputsHashAnnotation]
		e.update(w.TC, func() { w.TC.Spec.Variables = largeVariables() })
		e.advance(time.Minute)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationApply)
		if h := job.Annotations[infrav1.InputsHashAnnotation]; h == "" || h == stateHash {
			t.Fatalf("the re-apply's inputs hash %q equals the state's %q", h, stateHash)
		}
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.InputsChangedEvent)
		after := e.durable(w.TC).Data[contract.TFVarsFile]
		if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`"large"`)) {
			t.Fatalf("the durable inputs were not rewritten at the apply's start: %s", after)
		}
	})

	t.Run("metadata_change_does_not_reapply", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		e.update(w.TC, func() {
			w.TC.Labels["team"] = "blue"
			w.TC.Spec.Source.ImagePullPolicy = infrav1.ImagePullPolicy(corev1.PullAlways)
		})
		e.advance(time.Minute)
		e.mustPass(w.TC)
		e.wantNoJob(w.TC)
	})

	t.Run("machine_inputs_are_never_rerendered_once_provisioned", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		if !provisioned(mw.TM) {
			t.Fatalf("machine not provisioned: %v", status(mw.TM).Conditions)
		}
		durable := e.durable(mw.TM).Data[contract.TFVarsFile]
		// New cluster exports and new bootstrap data reach new machines only.
		out := clusterOutputs()
		out["exports"] = map[string]any{"network": "net-2"}
		e.writeState(w.TC, stateOf(2, out, "h2:cluster-applied-again"))
		bs := e.secret(*mw.Machine.Spec.Bootstrap.DataSecretName)
		bs.Data["value"] = []byte("#cloud-config\nrotated: true\n")
		if err := k8s.Update(e.ctx, bs); err != nil {
			t.Fatal(err)
		}
		e.advance(time.Minute)
		e.mustPass(mw.TM)
		e.wantNoJob(mw.TM)
		if !bytes.Equal(durable, e.durable(mw.TM).Data[contract.TFVarsFile]) {
			t.Fatal("a provisioned machine's durable inputs changed")
		}
	})

	t.Run("machine_waits_for_cluster_infrastructure", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		mw := e.newMachine(w, "prod-md-0", nil)
		e.mustPass(mw.TM)
		res := e.mustPass(mw.TM)
		e.wantCondition(mw.TM, infrav1.DependenciesReadyCondition, metav1.ConditionUnknown, infrav1.WaitingForClusterInfrastructureReason)
		e.wantCondition(mw.TM, infrav1.ReadyCondition, metav1.ConditionUnknown, infrav1.ReadyUnknownReason)
		e.wantNoJob(mw.TM)
		if res.RequeueAfter != 30*time.Second {
			t.Fatalf("a dependency wait requeues after 30s; got %v", res.RequeueAfter)
		}
	})

	t.Run("machine_waits_for_bootstrap_data", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		if err := k8s.Delete(e.ctx, e.secret(*mw.Machine.Spec.Bootstrap.DataSecretName)); err != nil {
			t.Fatal(err)
		}
		e.mustPass(mw.TM)
		e.mustPass(mw.TM)
		e.wantCondition(mw.TM, infrav1.DependenciesReadyCondition, metav1.ConditionUnknown, infrav1.WaitingForBootstrapDataReason)
		e.wantNoJob(mw.TM)
	})

	t.Run("destroy_runs_the_durable_inputs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		durable := e.durable(w.TC)
		// A spec change never applied, then deletion: the destroy runs what
		// was last applied.
		e.update(w.TC, func() { w.TC.Spec.Variables = largeVariables() })
		e.delete(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDestroy)
		run := e.secret(jobs.RunSecretName(job.Name))
		if run == nil || !bytes.Equal(run.Data[contract.TFVarsFile], durable.Data[contract.TFVarsFile]) || !bytes.Equal(run.Data[contract.MainFile], durable.Data[contract.MainFile]) {
			t.Fatal("the destroy does not run the durable inputs")
		}
	})

	t.Run("machine_destroy_without_durable_inputs_waits", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		if err := k8s.Delete(e.ctx, e.durable(mw.TM)); err != nil {
			t.Fatal(err)
		}
		e.delete(mw.TM)
		e.advance(time.Minute)
		res := e.mustPass(mw.TM)
		e.wantCondition(mw.TM, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.DestroyFailedReason)
		e.wantNoJob(mw.TM)
		if res.RequeueAfter != 10*time.Minute {
			t.Fatalf("missing durable inputs requeue after 10m; got %v", res.RequeueAfter)
		}
		if e.gone(mw.TM) {
			t.Fatal("a machine with state but no durable inputs lost its finalizer")
		}
	})

	t.Run("cluster_destroy_without_durable_inputs_falls_back_to_current_inputs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", nil)
		if err := k8s.Delete(e.ctx, e.durable(w.TC)); err != nil {
			t.Fatal(err)
		}
		e.delete(w.TC)
		e.advance(time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDestroy)
		if e.secret(jobs.RunSecretName(job.Name)) == nil {
			t.Fatal("the destroy has no inputs")
		}
	})

	t.Run("pool_destroy_without_durable_inputs_falls_back_to_current_inputs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 2, nil)
		e.bringUp(pw.TMP, stateOf(1, poolOutputs(2), ""))
		if err := k8s.Delete(e.ctx, e.durable(pw.TMP)); err != nil {
			t.Fatal(err)
		}
		e.delete(pw.TMP)
		e.advance(time.Minute)
		e.mustPass(pw.TMP)
		e.wantJob(pw.TMP, infrav1.OperationDestroy)
	})

	t.Run("oversized_inputs_start_no_Job", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.newCluster("prod", nil)
		big := bytes.Repeat([]byte("x"), 1_000_001)
		e.update(w.TC, func() {
			w.TC.Spec.Variables = largeVariables()
			w.TC.Spec.Variables["blob"] = jsonString(string(big))
		})
		e.mustPass(w.TC)
		res := e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.InputsTooLargeReason)
		e.wantNoJob(w.TC)
		if res.RequeueAfter != 10*time.Minute {
			t.Fatalf("oversized inputs requeue after 10m; got %v", res.RequeueAfter)
		}
	})
}
