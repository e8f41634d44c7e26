package identity

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestCheckAccessReasons walks every IdentityAllowed reason against a real
// API server.
func TestCheckAccessReasons(t *testing.T) {
	creds := namespace(t, nil)
	tenant := namespace(t, map[string]string{"team": "blue"})
	other := namespace(t, nil)
	sourceSecret(t, creds, "aws", map[string][]byte{"AWS_SECRET_ACCESS_KEY": []byte(sentinel)})

	byList := uniqueName("by-list")
	newIdentity(t, byList, creds, "aws", listOf(tenant))
	bySelector := uniqueName("by-selector")
	newIdentity(t, bySelector, creds, "aws", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}})
	everyNS := uniqueName("every")
	newIdentity(t, everyNS, creds, "aws", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}})
	noneAllowed := uniqueName("none")
	newIdentity(t, noneAllowed, creds, "aws", nil)
	noSecret := uniqueName("no-secret")
	newIdentity(t, noSecret, creds, "missing", listOf(tenant, other))

	leaks := &leakCheck{t: t}
	cases := []struct {
		name     string
		ns       string
		identity string
		status   metav1.ConditionStatus
		reason   string
	}{
		{"list names the namespace: True/IdentityAllowed", tenant, byList, metav1.ConditionTrue, infrav1.IdentityAllowedReason},
		{"list excludes the namespace: False/NamespaceNotAllowed", other, byList, metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
		{"selector matches the Namespace's labels: True/IdentityAllowed", tenant, bySelector, metav1.ConditionTrue, infrav1.IdentityAllowedReason},
		{"selector does not match: False/NamespaceNotAllowed", other, bySelector, metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
		{"selector: {} allows all", other, everyNS, metav1.ConditionTrue, infrav1.IdentityAllowedReason},
		{"allowedNamespaces unset allows none", tenant, noneAllowed, metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason},
		{"the named TCI does not exist: False/IdentityNotFound", tenant, "no-such-identity", metav1.ConditionFalse, infrav1.IdentityNotFoundReason},
		{"identity's secretRef Secret missing: False/SecretNotFound", tenant, noSecret, metav1.ConditionFalse, infrav1.SecretNotFoundReason},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			obj := newCluster(t, tt.ns, uniqueName("c"), tt.identity, nil)
			a, err := CheckAccess(ctx, k8s, k8s, obj, nil)
			must(t, err)
			wantVerdict(t, a.Verdict, tt.status, tt.reason)
			if a.Name != tt.identity || a.Source != RefOwn {
				t.Fatalf("resolved %q (%s)", a.Name, a.Source)
			}
			if a.Allowed() != (tt.status == metav1.ConditionTrue) || (a.SourceHash != "") != a.Allowed() {
				t.Fatalf("allowed %v, source hash %q", a.Allowed(), a.SourceHash)
			}
			leaks.verdict(a.Verdict)
		})
	}

	t.Run("no identityRef (own or inherited): False/IdentityNotFound", func(t *testing.T) {
		m := newMachine(t, tenant, uniqueName("m"), "", nil)
		a, err := CheckAccess(ctx, k8s, k8s, m, nil)
		must(t, err)
		wantVerdict(t, a.Verdict, metav1.ConditionFalse, infrav1.IdentityNotFoundReason)
	})

	t.Run("a machine falls back to its cluster's defaults, found through the Cluster's infrastructureRef", func(t *testing.T) {
		tcName := uniqueName("c")
		newCluster(t, tenant, tcName, byList, func(c *infrav1.TerraformCluster) {
			c.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: &infrav1.IdentityReference{Name: bySelector}}
		})
		capiName := uniqueName("capi")
		newCAPICluster(t, tenant, capiName, tcName)
		m := newMachine(t, tenant, uniqueName("m"), capiName, nil)
		cl, err := ClusterOf(ctx, k8s, m)
		must(t, err)
		if cl == nil || cl.Name != tcName {
			t.Fatalf("ClusterOf: %v", cl)
		}
		a, err := CheckAccess(ctx, k8s, k8s, m, cl)
		must(t, err)
		if a.Name != bySelector || a.Source != RefClusterDefaults || !a.Allowed() {
			t.Fatalf("got %s", a)
		}
		p := newPool(t, tenant, uniqueName("p"), capiName, func(p *infrav1.TerraformMachinePool) {
			p.Spec.IdentityRef = &infrav1.IdentityReference{Name: noSecret}
		})
		a, err = CheckAccess(ctx, k8s, k8s, p, cl)
		must(t, err)
		if a.Name != noSecret || a.Source != RefOwn {
			t.Fatalf("a pool's own identityRef wins: %s", a)
		}
	})

	t.Run("transient error during the check: Unknown/IdentityCheckFailed and an error", func(t *testing.T) {
		// A user the API server authenticates but RBAC grants nothing:
		// every read is Forbidden, which is not "not found".
		user, err := testEnv.AddUser(ctrlenvtest.User{Name: "nobody"}, nil)
		must(t, err)
		denied, err := client.New(user.Config(), client.Options{Scheme: testScheme})
		must(t, err)
		obj := newCluster(t, tenant, uniqueName("c"), byList, nil)
		a, err := CheckAccess(ctx, denied, denied, obj, nil)
		if err == nil {
			t.Fatal("no error returned")
		}
		wantVerdict(t, a.Verdict, metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason)
		// The identity is readable but the Secret is not.
		a, err = CheckAccess(ctx, k8s, denied, obj, nil)
		if err == nil || !strings.Contains(err.Error(), "aws") {
			t.Fatalf("error %v", err)
		}
		wantVerdict(t, a.Verdict, metav1.ConditionUnknown, infrav1.IdentityCheckFailedReason)
		leaks.verdict(a.Verdict)
		leaks.err(err)
	})

	t.Run("any other kind is refused with an error", func(t *testing.T) {
		if _, err := CheckAccess(ctx, k8s, k8s, &rbacv1.RoleBinding{}, nil); err == nil {
			t.Fatal("no error")
		}
	})
	leaks.check()
}
