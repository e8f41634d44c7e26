package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The manager's ServiceAccount and the roles config/rbac binds to it.
const (
	ManagerNamespace      = "captf-system"
	ManagerServiceAccount = "captf-controller-manager"
	// ManagerUser is the user name the ServiceAccount authenticates as.
	ManagerUser        = "system:serviceaccount:" + ManagerNamespace + ":" + ManagerServiceAccount
	ManagerRole        = "captf-manager-role"
	LeaderElectionRole = "captf-leader-election-role"
)

// ManagerIdentity installs config/rbac as the provider's manifests do (the
// manager's ServiceAccount, its ClusterRole and leader-election Role with
// their bindings, the runner's and the autoscaler's ClusterRoles) and
// returns a client configuration that authenticates as that ServiceAccount
// with a token the API server issued for it: a manager run with it holds
// exactly the shipped RBAC. It returns once the authorizer allows every
// rule of both roles (it learns of new bindings some time after they are
// written).
func ManagerIdentity(ctx context.Context, root string, e *env.Env) (*rest.Config, error) {
	k, err := tools.Path("kustomize")
	if err != nil {
		return nil, err
	}
	rendered, err := exec.CommandContext(ctx, k, "build", filepath.Join(root, "config", "rbac")).Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/rbac: %w", err)
	}
	objs, err := Decode(rendered)
	if err != nil {
		return nil, err
	}
	if err := Apply(ctx, e.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ManagerNamespace}}); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := Apply(ctx, e.Client, o); err != nil {
			return nil, err
		}
	}
	if err := waitForManagerRBAC(ctx, e); err != nil {
		return nil, err
	}
	tr, err := e.Clientset.CoreV1().ServiceAccounts(ManagerNamespace).CreateToken(ctx, ManagerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to request a token for %s: %w", ManagerUser, err)
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// waitForManagerRBAC asks the authorizer, as the manager's ServiceAccount,
// for every rule of its ClusterRole (cluster-wide) and leader-election
// Role (in its namespace) until each is allowed.
func waitForManagerRBAC(ctx context.Context, e *env.Env) error {
	var cr rbacv1.ClusterRole
	var lr rbacv1.Role
	if err := e.Client.Get(ctx, client.ObjectKey{Name: ManagerRole}, &cr); err != nil {
		return err
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ManagerNamespace, Name: LeaderElectionRole}, &lr); err != nil {
		return err
	}
	type ask struct {
		ns string
		p  Permission
	}
	var asks []ask
	for _, p := range Grants(cr.Rules) {
		asks = append(asks, ask{"", p})
	}
	for _, p := range Grants(lr.Rules) {
		asks = append(asks, ask{ManagerNamespace, p})
	}
	last, ok := WaitFor(ctx, time.Minute, func() (bool, string) {
		var refused []string
		for _, a := range asks {
			res, sub, _ := strings.Cut(a.p.Resource, "/")
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   ManagerUser,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ManagerNamespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: a.ns, Group: a.p.Group, Resource: res, Subresource: sub, Name: a.p.Name, Verb: a.p.Verb,
				},
			}}
			got, err := e.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			if !got.Status.Allowed {
				refused = append(refused, a.p.String())
			}
		}
		return len(refused) == 0, fmt.Sprintf("not yet allowed: %s", strings.Join(refused, ", "))
	})
	if !ok {
		return fmt.Errorf("the shipped RBAC did not take effect for %s: %s", ManagerUser, last)
	}
	return nil
}
