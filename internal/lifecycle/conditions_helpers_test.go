package lifecycle

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// setCondition stands for a pass that recorded condition t and wrote it:
// the fact is recorded and the object carries it, as after computeConditions.
func setCondition(p *Pass, t string, status metav1.ConditionStatus, reason, message string) {
	p.record(fromReading, t, status, reason, message)
	conditions.Set(p.Obj, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
}
