package lifecycle

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// setCondition stands for a pass that set condition t: the object carries
// it, as after setConditions.
func setCondition(p *Pass, t string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(p.Obj, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message})
}
