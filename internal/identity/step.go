package identity

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Credentials is the outcome of the credentials step for one object: its
// identity, its credential mirror and its namespace's runner RBAC.
type Credentials struct {
	Access Access
	Mirror MirrorResult
	RBAC   RBACResult
}

// Conditions are IdentityAllowed, CredentialsMirrored and RunnerRBACReady,
// to set on the object.
func (c Credentials) Conditions() []metav1.Condition {
	return []metav1.Condition{c.Access.Condition, c.Mirror.Condition, c.RBAC.Condition}
}

// Ready reports whether a Job may start: the identity allows the namespace,
// the mirror is in place and the runner RBAC is ready.
func (c Credentials) Ready() bool {
	return c.Access.Allowed() && c.Mirror.Ready() && c.RBAC.Ready()
}

// WaitReason is the reason of the first of the three conditions that is
// not True ("" when Ready): what holds every Job, destroy and restore
// included (decide.Observation.CredentialsWait).
func (c Credentials) WaitReason() string {
	for _, cond := range c.Conditions() {
		if cond.Status != metav1.ConditionTrue {
			return cond.Reason
		}
	}
	return ""
}

// Events are the events this step made due, given the object's
// IdentityAllowed condition before the step (nil when unset):
// IdentityNotAllowed, MirrorCreated, MirrorRemoved.
func (c Credentials) Events(prevIdentityAllowed *metav1.Condition) []Event {
	return append(AccessEvents(prevIdentityAllowed, c.Access.Condition), c.Mirror.Events()...)
}

// Reconcile runs the credentials step for obj (a TerraformCluster,
// TerraformMachine or TerraformMachinePool), in the book's order: resolve
// and check the identity, keep its mirror (or remove it on revocation),
// keep the namespace's runner RBAC. The namespace's objects, and through
// them a machine's or pool's TerraformCluster, are read with c (the
// manager's cache); live reads the source Secret and whatever a
// label-scoped cache does not hold. The runner RBAC is kept whatever the
// identity's outcome, since other objects of the namespace rely on it.
// Every condition is set even when an error is returned; errors are
// joined.
func Reconcile(ctx context.Context, c client.Client, live client.Reader, obj client.Object) (Credentials, error) {
	var out Credentials
	w, err := ListWorkloads(ctx, c, obj.GetNamespace())
	if err != nil {
		// Without the namespace's objects neither the cluster fallback
		// nor the RoleBinding's subjects can be computed.
		f := AccessFacts{Namespace: obj.GetNamespace(), CheckError: err}
		out.Access = Access{Namespace: obj.GetNamespace(), Condition: AccessCondition(f)}
		out.Mirror, _ = SyncMirror(ctx, c, live, out.Access, obj)
		out.RBAC.Condition = RBACCondition(RBACFacts{Error: err})
		return out, err
	}
	cluster := w.ClusterFor(obj)
	var accessErr, mirrorErr, rbacErr error
	out.Access, accessErr = CheckAccess(ctx, c, live, obj, cluster)
	out.Mirror, mirrorErr = SyncMirror(ctx, c, live, out.Access, obj)
	out.RBAC, rbacErr = EnsureRunnerRBAC(ctx, c, live, obj.GetNamespace(), ServiceAccountFor(obj, cluster), RunnerServiceAccounts(w))
	return out, errors.Join(accessErr, mirrorErr, rbacErr)
}
