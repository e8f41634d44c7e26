package lifecycle

import (
	"context"
	"fmt"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// credentials resolves the identity and keeps the credential mirror and the
// runner RBAC in place (internal/identity owns the rules); its outcome is
// the fact IdentityAllowed, CredentialsMirrored, RunnerRBACReady and a
// refused ApplyJobSucceeded are set from.
func (f *Flow) credentials(ctx context.Context, p *Pass) error {
	prev := p.Before(infrav1.IdentityAllowedCondition)
	creds, err := identity.ReconcileWithMemo(ctx, f.Client, f.sources.Reader(f.APIReader), f.Sources, f.ServiceAccounts, p.Obj, p.TerraformCluster)
	p.facts.credentials = &creds
	for _, e := range creds.Events(prev) {
		f.event(p, nil, e.Type, e.Reason, e.Message)
	}
	p.Identity = creds.Access.Name
	p.CredentialsWait = creds.WaitReason()
	if err != nil {
		return fmt.Errorf("failed the credentials step: %w", err)
	}
	return nil
}

// owner returns the object as internal/jobs and internal/state name it.
func (p *Pass) owner() owner.Owner {
	return owner.Of(p.Obj, p.Kind, p.ClusterName)
}
