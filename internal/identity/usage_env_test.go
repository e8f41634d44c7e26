package identity

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// lookAlike creates, in namespace, a Secret of identity's mirror name
// carrying every label and annotation a real mirror carries, with owners.
func lookAlike(t *testing.T, namespace, identity string, owners ...metav1.OwnerReference) {
	t.Helper()
	lbls := MirrorLabels()
	must(t, k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: MirrorName(identity), Labels: lbls, OwnerReferences: owners,
			Annotations: map[string]string{infrav1.IdentityAnnotation: identity, infrav1.SourceHashAnnotation: SourceHash(nil)}},
		Data: map[string][]byte{"TOKEN": []byte("forged")},
	}))
}

func ownerRef(kind infrav1.WorkloadKind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: infrav1.GroupVersion.String(), Kind: string(kind), Name: name, UID: uid}
}

// TestUsageCountsOnlyAllowedNamespacesAndCAPTFMirrors: an identity's delete
// guard and status.namespaces (Identities and Credentials, "Delete an
// identity") count only objects in namespaces the identity allows and
// mirrors CAPTF made: its labels, and an owner reference to an existing
// TerraformCluster, TerraformMachine or TerraformMachinePool of the
// namespace with that object's UID. A tenant elsewhere, or one forging a
// mirror, cannot keep the identity from being deleted.
func TestUsageCountsOnlyAllowedNamespacesAndCAPTFMirrors(t *testing.T) {
	creds := namespace(t, nil)
	home, spare, forged := namespace(t, nil), namespace(t, nil), namespace(t, nil)
	teamNS := namespace(t, map[string]string{"team": "blue"})
	outside := namespace(t, nil)
	name := uniqueName("guarded")
	sourceSecret(t, creds, "s", map[string][]byte{"TOKEN": []byte(sentinel)})
	id := newIdentity(t, name, creds, "s", &infrav1.AllowedNamespaces{
		List:     []string{home, spare, forged},
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}},
	})
	leaks := &leakCheck{t: t}

	// The real users: a cluster in a listed namespace and one in a
	// namespace the selector matches, each with the mirror CAPTF makes.
	real := newCluster(t, home, uniqueName("real"), name, nil)
	team := newCluster(t, teamNS, uniqueName("team"), name, nil)
	for _, o := range []*infrav1.TerraformCluster{real, team} {
		if _, m := syncCreds(t, k8s, o, nil, leaks); !m.Ready() {
			t.Fatalf("mirror %+v", m.Verdict)
		}
	}

	// A tenant the identity does not allow: a cluster naming it, and a
	// mirror forged to perfection, owned by that cluster.
	squatter := newCluster(t, outside, uniqueName("squatter"), name, nil)
	lookAlike(t, outside, name, ownerRef(infrav1.KindTerraformCluster, squatter.Name, squatter.UID))
	// In allowed namespaces: a look-alike owned by nothing, and one whose
	// owner reference names an existing cluster with another UID and a
	// machine that does not exist.
	lookAlike(t, spare, name)
	decoy := newCluster(t, forged, uniqueName("decoy"), "another-identity", nil)
	lookAlike(t, forged, name, ownerRef(infrav1.KindTerraformCluster, decoy.Name, "not-"+decoy.UID),
		ownerRef(infrav1.KindTerraformMachine, "ghost", "0a8c2f4e-ghost"))

	want := []string{home, teamNS}
	slices.Sort(want)
	t.Run("status.namespaces lists only the allowed namespaces holding a mirror CAPTF made", func(t *testing.T) {
		st, err := ObserveIdentity(ctx, k8s, k8s, id)
		must(t, err)
		if fmt.Sprint(st.Namespaces) != fmt.Sprint(want) {
			t.Fatalf("namespaces %v, want %v (look-alikes in %s, %s, %s)", st.Namespaces, want, outside, spare, forged)
		}
	})
	t.Run("the delete guard counts only users in allowed namespaces", func(t *testing.T) {
		u, err := UsageOf(ctx, k8s, id)
		must(t, err)
		wantUsers := []ObjectRef{{infrav1.KindTerraformCluster, home, real.Name}, {infrav1.KindTerraformCluster, teamNS, team.Name}}
		slices.SortFunc(wantUsers, compareRefs)
		if fmt.Sprint(u.Users) != fmt.Sprint(wantUsers) || fmt.Sprint(u.Namespaces) != fmt.Sprint(want) {
			t.Fatalf("usage %+v, want users %v and namespaces %v", u, wantUsers, want)
		}
	})
	t.Run("once the real users and their mirrors are gone, the look-alikes and the squatter hold nothing", func(t *testing.T) {
		for _, o := range []*infrav1.TerraformCluster{real, team} {
			removed, err := ReleaseMirrors(ctx, k8s, k8s, o)
			must(t, err)
			if len(removed) != 1 {
				t.Fatalf("released %v", removed)
			}
			must(t, k8s.Delete(ctx, o))
		}
		u, err := UsageOf(ctx, k8s, id)
		must(t, err)
		if u.InUse() {
			t.Fatalf("usage %+v: %s", u, u.Reason(name))
		}
		st, err := ObserveIdentity(ctx, k8s, k8s, id)
		must(t, err)
		if len(st.Namespaces) != 0 {
			t.Fatalf("namespaces %v", st.Namespaces)
		}
		// The squatter and every look-alike are still there.
		for _, ns := range []string{outside, spare, forged} {
			must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: MirrorName(name)}, &corev1.Secret{}))
		}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(squatter), &infrav1.TerraformCluster{}))
	})
	t.Run("a namespace that stops matching the selector stops counting", func(t *testing.T) {
		again := newCluster(t, teamNS, uniqueName("again"), name, nil)
		_, _ = syncCreds(t, k8s, again, nil, leaks)
		if u, err := UsageOf(ctx, k8s, id); err != nil || !u.InUse() {
			t.Fatalf("usage %+v, %v", u, err)
		}
		nsObj := &corev1.Namespace{}
		must(t, k8s.Get(ctx, client.ObjectKey{Name: teamNS}, nsObj))
		nsObj.Labels["team"] = "red"
		must(t, k8s.Update(ctx, nsObj))
		u, err := UsageOf(ctx, k8s, id)
		must(t, err)
		if u.InUse() {
			t.Fatalf("usage %+v", u)
		}
	})
	leaks.check()
}
