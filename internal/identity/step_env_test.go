package identity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestReconcileCredentialsStep(t *testing.T) {
	f := newCredsFixture(t)
	leaks := &leakCheck{t: t}
	collect := func(cr Credentials, err error, prev *metav1.Condition) {
		for _, c := range cr.Verdicts() {
			leaks.verdict(c)
		}
		leaks.events(cr.Events(prev))
		leaks.err(err)
	}
	tcName := uniqueName("c")
	tc := newCluster(t, f.tenant, tcName, "unused", func(c *infrav1.TerraformCluster) {
		c.Spec.Defaults = &infrav1.ClusterDefaults{
			IdentityRef: &infrav1.IdentityReference{Name: f.identity},
			Jobs:        &infrav1.JobPolicy{ServiceAccountName: "fleet"},
		}
	})
	capi := uniqueName("capi")
	newCAPICluster(t, f.tenant, capi, tcName)
	m := newMachine(t, f.tenant, uniqueName("m"), capi, nil)

	t.Run("a machine inheriting its cluster's defaults waits on the override's opt-in, last in order", func(t *testing.T) {
		cr, err := Reconcile(ctx, k8s, k8s, m, tc)
		collect(cr, err, nil)
		must(t, err)
		if cr.Access.Name != f.identity || cr.Access.Source != RefClusterDefaults || !cr.Mirror.Ready() {
			t.Fatalf("access %s, mirror %+v", cr.Access, cr.Mirror.Verdict)
		}
		if cr.Ready() || cr.WaitReason() != infrav1.ServiceAccountNotOptedInReason || cr.RBAC.ServiceAccount != "fleet" {
			t.Fatalf("wait %q, rbac %+v", cr.WaitReason(), cr.RBAC)
		}
		ev := cr.Events(nil)
		if len(ev) != 1 || ev[0].Reason != infrav1.MirrorCreatedEvent {
			t.Fatalf("events %+v", ev)
		}
	})

	t.Run("opted in: every credentials condition True, no wait", func(t *testing.T) {
		must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.tenant, Name: "fleet", Labels: map[string]string{infrav1.RunnerLabel: "true"}}}))
		cr, err := Reconcile(ctx, k8s, k8s, m, tc)
		collect(cr, err, nil)
		must(t, err)
		if !cr.Ready() || cr.WaitReason() != "" {
			t.Fatalf("conditions %+v", cr.Verdicts())
		}
	})

	t.Run("revoked: IdentityAllowed's reason is the wait, the mirror goes, the runner RBAC stays", func(t *testing.T) {
		id := &infrav1.TerraformClusterIdentity{}
		must(t, k8s.Get(ctx, client.ObjectKey{Name: f.identity}, id))
		prev := metav1.Condition{Type: infrav1.IdentityAllowedCondition, Status: metav1.ConditionTrue, Reason: infrav1.IdentityAllowedReason}
		id.Spec.AllowedNamespaces = listOf("elsewhere")
		must(t, k8s.Update(ctx, id))
		cr, err := Reconcile(ctx, k8s, k8s, m, tc)
		collect(cr, err, &prev)
		must(t, err)
		if cr.WaitReason() != infrav1.NamespaceNotAllowedReason || !cr.RBAC.Ready() {
			t.Fatalf("conditions %+v", cr.Verdicts())
		}
		reasons := map[string]bool{}
		for _, e := range cr.Events(&prev) {
			reasons[e.Reason] = true
		}
		if !reasons[infrav1.IdentityNotAllowedEvent] || !reasons[infrav1.MirrorRemovedEvent] {
			t.Fatalf("events %+v", cr.Events(&prev))
		}
		if DeniedTransition(&prev, cr.Access.Verdict) != DeniedNamespace {
			t.Fatal("denial not counted")
		}
	})
	leaks.check()
}
