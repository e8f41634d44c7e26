package identity

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestIdentityStatusAndUsage(t *testing.T) {
	creds := namespace(t, nil)
	nsA, nsB, nsC := namespace(t, nil), namespace(t, nil), namespace(t, nil)
	name := uniqueName("aws")
	id := newIdentity(t, name, creds, "aws", &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}})
	leaks := &leakCheck{t: t}

	t.Run("False/SecretNotFound while its Secret is missing", func(t *testing.T) {
		st, err := ObserveIdentity(ctx, k8s, k8s, id)
		must(t, err)
		wantCond(t, st.Ready, infrav1.ReadyCondition, metav1.ConditionFalse, infrav1.SecretNotFoundReason)
		ev := SetIdentityStatus(id, st)
		if len(ev) != 1 || ev[0].Reason != infrav1.IdentitySecretNotFoundEvent || ev[0].Type != corev1.EventTypeWarning {
			t.Fatalf("events %+v", ev)
		}
		must(t, k8s.Status().Update(ctx, id))
		leaks.cond(st.Ready)
		leaks.events(ev)
	})

	sourceSecret(t, creds, "aws", map[string][]byte{"TOKEN": []byte(sentinel)})
	// Objects in two namespaces use it: a cluster in A, and in B a machine
	// inheriting it from its cluster's spec.defaults.
	tcA := newCluster(t, nsA, uniqueName("c"), name, nil)
	tcBName := uniqueName("c")
	tcB := newCluster(t, nsB, tcBName, "another-identity", func(c *infrav1.TerraformCluster) {
		c.Spec.Defaults = &infrav1.ClusterDefaults{IdentityRef: &infrav1.IdentityReference{Name: name}}
	})
	capi := uniqueName("capi")
	newCAPICluster(t, nsB, capi, tcBName)
	mB := newMachine(t, nsB, uniqueName("m"), capi, func(m *infrav1.TerraformMachine) { m.Finalizers = []string{infrav1.TerraformMachineFinalizer} })
	for _, o := range []struct {
		obj     client.Object
		cluster *infrav1.TerraformCluster
	}{{tcA, nil}, {mB, tcB}} {
		a, err := CheckAccess(ctx, k8s, k8s, o.obj, o.cluster)
		must(t, err)
		m, err := SyncMirror(ctx, k8s, k8s, a, o.obj, o.cluster)
		must(t, err)
		if !m.Ready() {
			t.Fatalf("mirror %+v", m.Verdict)
		}
	}
	// A namespace holding a foreign Secret of the mirror's name does not
	// count as holding a mirror.
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsC, Name: MirrorName(name), Labels: map[string]string{infrav1.MirroredLabel: "true"}}}))

	t.Run("True/SecretFound once its Secret exists; status.namespaces lists every namespace holding a mirror, sorted", func(t *testing.T) {
		st, err := ObserveIdentity(ctx, k8s, k8s, id)
		must(t, err)
		wantCond(t, st.Ready, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.SecretFoundReason)
		want := []string{nsA, nsB}
		if nsB < nsA {
			want = []string{nsB, nsA}
		}
		if fmt.Sprint(st.Namespaces) != fmt.Sprint(want) {
			t.Fatalf("namespaces %v, want %v", st.Namespaces, want)
		}
		ev := SetIdentityStatus(id, st)
		if len(ev) != 1 || ev[0].Reason != infrav1.IdentitySecretFoundEvent {
			t.Fatalf("events %+v", ev)
		}
		must(t, k8s.Status().Update(ctx, id))
		got := &infrav1.TerraformClusterIdentity{}
		must(t, k8s.Get(ctx, client.ObjectKey{Name: name}, got))
		if fmt.Sprint(got.Status.Namespaces) != fmt.Sprint(want) || got.Status.Conditions[0].Reason != infrav1.SecretFoundReason {
			t.Fatalf("stored status %+v", got.Status)
		}
		leaks.cond(st.Ready)
		leaks.events(ev)
	})

	t.Run("the delete guard's data: objects resolving to it, deleting ones included, and namespaces with mirrors", func(t *testing.T) {
		must(t, k8s.Delete(ctx, mB)) // held by its finalizer: still deleting
		u, err := UsageOf(ctx, k8s, id)
		must(t, err)
		wantUsers := []ObjectRef{{infrav1.KindTerraformCluster, nsA, tcA.Name}, {infrav1.KindTerraformMachine, nsB, mB.Name}}
		if nsB < nsA {
			wantUsers[0], wantUsers[1] = wantUsers[1], wantUsers[0]
		}
		if fmt.Sprint(u.Users) != fmt.Sprint(wantUsers) || len(u.Namespaces) != 2 || !u.InUse() {
			t.Fatalf("usage %+v", u)
		}
		// tcB itself uses another identity: not a user of this one.
		for _, r := range u.Users {
			if r.Name == tcB.Name {
				t.Fatal("a cluster's defaults are not the cluster's own identity")
			}
		}
	})

	t.Run("once nothing resolves to it and its mirrors are released, it may be deleted", func(t *testing.T) {
		// mB inherits the identity from tcB's defaults: the mirror in
		// nsB is tcB's (MirrorOwner), released when tcB goes.
		for _, o := range []client.Object{tcA, mB, tcB} {
			_, err := ReleaseMirrors(ctx, k8s, k8s, o)
			must(t, err)
		}
		m := &infrav1.TerraformMachine{}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(mB), m))
		m.Finalizers = nil
		must(t, k8s.Update(ctx, m))
		must(t, k8s.Delete(ctx, tcA))
		u, err := UsageOf(ctx, k8s, id)
		must(t, err)
		if u.InUse() {
			t.Fatalf("usage %+v", u)
		}
		st, err := ObserveIdentity(ctx, k8s, k8s, id)
		must(t, err)
		if len(st.Namespaces) != 0 {
			t.Fatalf("namespaces %v", st.Namespaces)
		}
	})
	leaks.check()
}
