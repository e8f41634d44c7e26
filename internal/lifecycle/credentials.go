package lifecycle

import (
	"context"
	"fmt"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// credentials resolves the identity, keeps the credential mirror and the
// runner RBAC in place, and sets IdentityAllowed, CredentialsMirrored and
// RunnerRBACReady (internal/identity owns the rules).
func (f *Flow) credentials(ctx context.Context, p *Pass) error {
	prev := p.Before(infrav1.IdentityAllowedCondition)
	creds, err := identity.ReconcileWithMemo(ctx, f.Client, f.sources.Reader(f.APIReader), f.ServiceAccounts, p.Obj, p.TerraformCluster)
	for _, c := range creds.Conditions() {
		p.record(fromReading, c.Type, c.Status, c.Reason, c.Message)
	}
	for _, e := range creds.Events(prev) {
		f.event(p, nil, e.Type, e.Reason, e.Message)
	}
	p.Identity = creds.Access.Name
	p.CredentialsWait = creds.WaitReason()
	if !creds.Access.Allowed() && creds.Access.Condition.Status == metav1ConditionFalse {
		p.record(fromRefusal, infrav1.ApplyJobSucceededCondition, metav1ConditionFalse, infrav1.IdentityNotAllowedReason, creds.Access.Condition.Message)
	}
	if err != nil {
		return fmt.Errorf("failed the credentials step: %w", err)
	}
	return nil
}

// owner returns the object as internal/jobs and internal/state name it.
func (p *Pass) owner() owner.Owner {
	return owner.Of(p.Obj, p.Kind, p.ClusterName)
}
