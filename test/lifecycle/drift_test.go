package lifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// driftEvery sets a TerraformCluster's drift interval and action.
func driftEvery(seconds int32, action infrav1.DriftAction) func(*infrav1.TerraformCluster) {
	return func(tc *infrav1.TerraformCluster) {
		tc.Spec.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To(seconds), Action: action}
	}
}

// dueDrift moves the clock past obj's drift interval (plus its jitter, at
// most a tenth).
func (e *env) dueDrift(_ client.Object, interval time.Duration) {
	e.t.Helper()
	e.advance(interval + interval/10 + time.Second)
}

// TestDriftAndHealth checks the rules of the book pages Drift and Health
// and Drift and Health with tables.
func TestDriftAndHealth(t *testing.T) {
	t.Parallel()

	t.Run("drift_check_waits_one_interval_after_the_apply", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, ""))
		res := e.mustPass(w.TC)
		e.wantNoJob(w.TC)
		if res.RequeueAfter < 9*time.Minute || res.RequeueAfter > 11*time.Minute {
			t.Fatalf("the first drift check is due one interval (+ jitter) after the apply; requeue %v", res.RequeueAfter)
		}
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionUnknown, infrav1.DriftNotCheckedReason)
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationDrift)
		e.wantCondition(w.TC, infrav1.DriftJobSucceededCondition, metav1.ConditionUnknown, infrav1.DriftJobRunningReason)
	})

	t.Run("drift_found_is_reported_and_never_unreadies", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, infrav1.DriftAction("Report")))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDrift)
		e.advance(time.Minute)
		e.finishJob(job, succeeded, driftDoc())
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionTrue, infrav1.DriftReportedReason)
		e.wantCondition(w.TC, infrav1.DriftJobSucceededCondition, metav1.ConditionTrue, infrav1.DriftCheckedReason)
		e.wantCondition(w.TC, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
		e.wantEvent(w.TC, m, corev1.EventTypeWarning, infrav1.DriftDetectedEvent)
		e.wantNoJob(w.TC)
		if status(w.TC).LastDriftCheck == nil {
			t.Fatal("status.lastDriftCheck not set")
		}
		if d := status(w.TC).LastRun.Drift; d == nil || d.Change == nil || *d.Change != 1 {
			t.Fatalf("status.lastRun.drift %+v", d)
		}
	})

	t.Run("no_drift_clears_a_reported_drift", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, ""))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		e.advance(time.Minute)
		e.finishJob(e.wantJob(w.TC, infrav1.OperationDrift), succeeded, driftDoc())
		e.mustPass(w.TC)
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDrift)
		e.advance(time.Minute)
		e.finishJob(job, succeeded, nil)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionFalse, infrav1.NoDriftReason)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DriftResolvedEvent)
	})

	t.Run("failed_drift_check_backs_off_and_never_delays_an_apply", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, ""))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		job := e.wantJob(w.TC, infrav1.OperationDrift)
		e.finishJob(job, failed, nil)
		e.advance(10 * time.Second)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DriftJobSucceededCondition, metav1.ConditionFalse, infrav1.DriftJobFailedReason)
		e.wantNoJob(w.TC)
		// Failures count per operation: an apply is not held back.
		e.update(w.TC, func() { w.TC.Spec.Variables = largeVariables() })
		e.mustPass(w.TC)
		e.wantJob(w.TC, infrav1.OperationApply)
	})

	t.Run("drift_remediation_starts_an_apply", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, infrav1.DriftAction("Remediate")))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		drift := e.wantJob(w.TC, infrav1.OperationDrift)
		e.advance(time.Minute)
		e.finishJob(drift, succeeded, driftDoc())
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		apply := e.wantJob(w.TC, infrav1.OperationApply)
		if apply.Annotations[infrav1.DriftRemediationAnnotation] != "true" {
			t.Fatalf("the remediation apply is not marked: %v", apply.Annotations)
		}
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionTrue, infrav1.DriftRemediatingReason)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DriftRemediationStartedEvent)
	})

	t.Run("successful_remediation_clears_DriftDetected", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, infrav1.DriftAction("Remediate")))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		e.advance(time.Minute)
		e.finishJob(e.wantJob(w.TC, infrav1.OperationDrift), succeeded, driftDoc())
		e.mustPass(w.TC)
		apply := e.wantJob(w.TC, infrav1.OperationApply)
		e.advance(time.Minute)
		e.finishJob(apply, succeeded, nil)
		m := e.mark(w.TC)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionFalse, infrav1.NoDriftReason)
		e.wantEvent(w.TC, m, corev1.EventTypeNormal, infrav1.DriftResolvedEvent)
	})

	t.Run("failed_remediation_falls_back_to_DriftPending", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedTC("prod", driftEvery(600, infrav1.DriftAction("Remediate")))
		e.dueDrift(w.TC, 10*time.Minute)
		e.mustPass(w.TC)
		e.advance(time.Minute)
		e.finishJob(e.wantJob(w.TC, infrav1.OperationDrift), succeeded, driftDoc())
		e.mustPass(w.TC)
		apply := e.wantJob(w.TC, infrav1.OperationApply)
		e.advance(time.Minute)
		e.finishJob(apply, failed, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.DriftDetectedCondition, metav1.ConditionTrue, infrav1.DriftPendingReason)
	})

	t.Run("machine_definite_apply_reading_needs_no_refresh", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		m := e.mark(mw.TM)
		e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		if !provisioned(mw.TM) {
			t.Fatalf("machine not provisioned: %v", status(mw.TM).Conditions)
		}
		e.wantCondition(mw.TM, infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue, infrav1.HealthyReason)
		e.wantCondition(mw.TM, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
		e.wantEvent(mw.TM, m, corev1.EventTypeNormal, infrav1.ProviderIDSetEvent)
		if mw.TM.Spec.ProviderID != "captf://test/instance-1" || len(mw.TM.Status.Addresses) != 1 {
			t.Fatalf("providerID %q, addresses %v", mw.TM.Spec.ProviderID, mw.TM.Status.Addresses)
		}
		e.wantNoJob(mw.TM)
		e.advance(time.Minute)
		e.mustPass(mw.TM)
		e.wantNoJob(mw.TM)
	})

	t.Run("machine_pending_health_refreshes_then_provisions", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.bringUp(mw.TM, stateOf(1, machineOutputs("pending", false), ""))
		if provisioned(mw.TM) {
			t.Fatal("a pending instance provisioned")
		}
		// Before provisioned, a pending instance reads as Provisioning.
		e.wantCondition(mw.TM, infrav1.InfrastructureHealthyCondition, metav1.ConditionFalse, infrav1.ProvisioningReason)
		// The post-apply refresh is due at once.
		refresh := e.wantJob(mw.TM, infrav1.OperationRefresh)
		e.advance(time.Minute)
		e.writeState(mw.TM, stateOf(2, machineOutputs("running", true), e.stateSecret(mw.TM).Annotations[infrav1.InputsHashAnnotation]))
		e.finishJob(refresh, succeeded, nil)
		m := e.mark(mw.TM)
		e.mustPass(mw.TM)
		if !provisioned(mw.TM) {
			t.Fatalf("not provisioned after a running reading: %v", status(mw.TM).Conditions)
		}
		e.wantCondition(mw.TM, infrav1.InfrastructureHealthyCondition, metav1.ConditionTrue, infrav1.HealthyReason)
		e.wantCondition(mw.TM, infrav1.DriftJobSucceededCondition, metav1.ConditionTrue, infrav1.DriftCheckedReason)
		e.wantEvent(mw.TM, m, corev1.EventTypeNormal, infrav1.ProvisionedEvent)
	})

	t.Run("machine_unhealthy_samples_count", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", func(tm *infrav1.TerraformMachine) {
			tm.Spec.Drift = &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](600)}
		})
		e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		hash := e.stateSecret(mw.TM).Annotations[infrav1.InputsHashAnnotation]
		for i := 1; i <= 2; i++ {
			e.dueDrift(mw.TM, 10*time.Minute)
			e.mustPass(mw.TM)
			job := e.wantJob(mw.TM, infrav1.OperationDrift)
			e.advance(time.Minute)
			e.writeState(mw.TM, stateOf(uint64(i+1), machineOutputs("running", false), hash))
			e.finishJob(job, succeeded, nil)
			m := e.mark(mw.TM)
			e.mustPass(mw.TM)
			e.wantCondition(mw.TM, infrav1.InfrastructureHealthyCondition, metav1.ConditionFalse, infrav1.InstanceUnhealthyReason)
			if got := mw.TM.Status.UnhealthySamples; got != int32(i) {
				t.Fatalf("after %d unhealthy samples status.unhealthySamples is %d", i, got)
			}
			if i == 1 {
				e.wantEvent(mw.TM, m, corev1.EventTypeWarning, infrav1.InstanceUnhealthyEvent)
				e.wantCondition(mw.TM, infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason)
			}
		}
	})

	t.Run("cluster_failed_reapply_keeps_Ready", func(t *testing.T) {
		t.Parallel()
		e, w, job := reapplyingCluster(t)
		e.advance(time.Minute)
		e.finishJob(job, failed, nil)
		e.mustPass(w.TC)
		e.wantCondition(w.TC, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		// Flipping the Cluster's InfrastructureReady would suspend every
		// MachineHealthCheck.
		e.wantCondition(w.TC, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
	})

	t.Run("pool_replicas_and_failed_reapply_unreadies", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 2, nil)
		e.bringUp(pw.TMP, stateOf(1, poolOutputs(2), ""))
		if !provisioned(pw.TMP) || !pw.TMP.Status.Ready {
			t.Fatalf("pool not provisioned: %v", status(pw.TMP).Conditions)
		}
		if r := pw.TMP.Status.Replicas; r == nil || *r != 2 || len(pw.TMP.Spec.ProviderIDList) != 2 || len(pw.TMP.Status.Instances) != 2 {
			t.Fatalf("replicas %v, providerIDList %v, instances %d", r, pw.TMP.Spec.ProviderIDList, len(pw.TMP.Status.Instances))
		}
		e.wantCondition(pw.TMP, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
		// A pool is mutable: a replica change re-applies, and a failed
		// re-apply shows in Ready.
		e.update(pw.MachinePool, func() { pw.MachinePool.Spec.Replicas = ptr.To[int32](3) })
		e.advance(time.Minute)
		e.mustPass(pw.TMP)
		for _, j := range e.activeJobs(pw.TMP) {
			// The post-apply refresh may run first.
			if j.Labels[infrav1.OpLabel] == string(infrav1.OperationRefresh) {
				e.finishJob(&j, succeeded, nil)
				e.mustPass(pw.TMP)
			}
		}
		job := e.wantJob(pw.TMP, infrav1.OperationApply)
		e.advance(time.Minute)
		e.finishJob(job, failed, nil)
		e.mustPass(pw.TMP)
		e.wantCondition(pw.TMP, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.ApplyFailedReason)
		e.wantCondition(pw.TMP, infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.NotReadyReason)
	})

	t.Run("pool_autoscaling_writes_replicas_back", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		pw := e.newPool(w, "prod-mp-0", 2, nil)
		e.update(pw.MachinePool, func() {
			pw.MachinePool.Annotations = map[string]string{
				infrav1.AutoscalerMinSizeAnnotation: "1", infrav1.AutoscalerMaxSizeAnnotation: "5",
			}
		})
		m := e.mark(pw.TMP)
		e.bringUp(pw.TMP, stateOf(1, poolOutputs(4), ""))
		e.wantCondition(pw.TMP, infrav1.AutoscalingActiveCondition, metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason)
		e.refresh(pw.MachinePool)
		if r := pw.MachinePool.Spec.Replicas; r == nil || *r != 4 {
			t.Fatalf("MachinePool spec.replicas %v, the module observed 4", r)
		}
		if pw.MachinePool.Annotations[infrav1.ReplicasManagedByAnnotation] != infrav1.ReplicasManagedByCAPTF {
			t.Fatalf("replicas-managed-by not claimed: %v", pw.MachinePool.Annotations)
		}
		e.wantEvent(pw.TMP, m, corev1.EventTypeNormal, infrav1.ReplicasWrittenBackEvent)
	})
}
