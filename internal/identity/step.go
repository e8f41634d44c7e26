package identity

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Credentials is the outcome of the credentials step for one object: its
// identity, its credential mirror and its namespace's runner RBAC.
type Credentials struct {
	Access Access
	Mirror MirrorResult
	RBAC   RBACResult
}

// Verdicts are what IdentityAllowed, CredentialsMirrored and
// RunnerRBACReady are to say, in that order.
func (c Credentials) Verdicts() []Verdict {
	return []Verdict{c.Access.Verdict, c.Mirror.Verdict, c.RBAC.Verdict}
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
	for _, cond := range c.Verdicts() {
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
	return append(AccessEvents(prevIdentityAllowed, c.Access.Verdict), c.Mirror.Events()...)
}

// Reconcile runs the credentials step for obj (a TerraformCluster,
// TerraformMachine or TerraformMachinePool), in the book's order: resolve
// and check the identity, keep its mirror (or remove it on revocation),
// keep the namespace's runner RBAC. cluster is obj's TerraformCluster as
// the flow resolved it (obj itself for a TerraformCluster; nil when a
// machine's or pool's cluster is not known yet): a machine or pool without
// its own identityRef or ServiceAccount takes them from it. c is the
// manager's cache, which also gives the namespace's objects whose
// ServiceAccounts the runner RoleBinding binds; live reads the source
// Secret and whatever a label-scoped cache does not hold. The runner RBAC
// is kept whatever the identity's outcome, since other objects of the
// namespace rely on it. Every condition is set even when an error is
// returned; errors are joined.
func Reconcile(ctx context.Context, c client.Client, live client.Reader, obj client.Object, cluster *infrav1.TerraformCluster) (Credentials, error) {
	return ReconcileWithMemo(ctx, c, live, nil, nil, obj, cluster)
}

// ReconcileWithMemo is Reconcile reading the identity's source Secret
// through sources (a SourceWatch; nil reads it with live) and taking the
// namespace's runner ServiceAccounts from memo (nil lists them every time).
func ReconcileWithMemo(ctx context.Context, c client.Client, live, sources client.Reader, memo *ServiceAccountMemo, obj client.Object, cluster *infrav1.TerraformCluster) (Credentials, error) {
	if sources == nil {
		sources = live
	}
	var out Credentials
	var accessErr, mirrorErr, rbacErr error
	out.Access, accessErr = CheckAccess(ctx, c, sources, obj, cluster)
	out.Mirror, mirrorErr = SyncMirror(ctx, c, live, out.Access, obj, cluster)
	out.RBAC, rbacErr = runnerRBAC(ctx, c, live, memo, obj, cluster)
	return out, errors.Join(accessErr, mirrorErr, rbacErr)
}

// runnerRBAC keeps the namespace's runner RBAC for obj: the RoleBinding
// binds the ServiceAccounts of every object of the namespace, so they are
// listed (from the cache, read in place: nothing here writes to them), or
// taken from memo until one of them changes.
func runnerRBAC(ctx context.Context, c client.Client, live client.Reader, memo *ServiceAccountMemo, obj client.Object, cluster *infrav1.TerraformCluster) (RBACResult, error) {
	sas, err := memo.ServiceAccounts(ctx, c, obj.GetNamespace())
	if err != nil {
		return RBACResult{Verdict: RBACVerdict(RBACFacts{Error: err})}, err
	}
	return EnsureRunnerRBAC(ctx, c, live, obj.GetNamespace(), ServiceAccountFor(obj, cluster), sas)
}
