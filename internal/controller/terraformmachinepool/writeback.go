package terraformmachinepool

import (
	"fmt"

	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// writeBack is what the SyncReplicas patch changes on the MachinePool.
type writeBack struct {
	// claim sets cluster.x-k8s.io/replicas-managed-by: captf.
	claim bool
	// release removes CAPTF's own replicas-managed-by.
	release bool
	// replicas is the observed value to write to spec.replicas (nil: none).
	replicas *int32
}

func (w writeBack) changed() bool { return w.claim || w.release || w.replicas != nil }

// planWriteBack decides the write-back (Contract - MachinePool Role,
// "Write-back (autoscaling.enabled)"). With autoscaling enabled, CAPTF
// claims replicas-managed-by when the annotation is absent or "false":
// Cluster API counts the annotation as set for any value except the literal
// "false" (hasTruthyAnnotationValue), so "false" is absent. A foreign
// truthy value means another controller manages the replicas and is left
// untouched. While CAPTF holds the claim, a known status.replicas that
// differs from spec.replicas is written back, raw. With autoscaling off,
// CAPTF removes the annotation only when it still carries captf, and never
// writes spec.replicas.
func planWriteBack(ann map[string]string, enabled bool, status, spec *int32) writeBack {
	value, set := ann[infrav1.ReplicasManagedByAnnotation]
	captf := set && value == infrav1.ReplicasManagedByCAPTF
	if !enabled {
		return writeBack{release: captf}
	}
	var w writeBack
	if !set || value == "false" {
		w.claim, captf = true, true
	}
	if captf && status != nil && (spec == nil || *spec != *status) {
		r := *status
		w.replicas = &r
	}
	return w
}

// autoscalingFinding is what the pool's autoscaling is (Machine Pools,
// "Choose fixed replicas or autoscaling"), for AutoscalingActive: active
// (ReplicasManagedByModule) while the annotations are valid and the
// MachinePool's replicas-managed-by is absent, "false" or CAPTF's own;
// not active with ReplicasManagedExternally when they are valid but another
// controller's truthy value holds replicas-managed-by (no write-back then);
// otherwise not active, with the parse's reason.
func autoscalingFinding(auto inputs.AutoscalingResult, ann map[string]string) lifecycle.Autoscaling {
	if !auto.Enabled {
		return lifecycle.Autoscaling{Reason: auto.Reason, Message: auto.Message}
	}
	if v, set := ann[infrav1.ReplicasManagedByAnnotation]; set && v != "false" && v != infrav1.ReplicasManagedByCAPTF {
		return lifecycle.Autoscaling{Reason: infrav1.ReplicasManagedExternallyReason,
			Message: fmt.Sprintf("the MachinePool's %s annotation is %q: another controller manages spec.replicas, CAPTF writes nothing back", infrav1.ReplicasManagedByAnnotation, v)}
	}
	return lifecycle.Autoscaling{Active: true, Reason: auto.Reason,
		Message: fmt.Sprintf("min %d, max %d: the module owns the desired capacity, written back to the MachinePool's spec.replicas", auto.Min, auto.Max)}
}
