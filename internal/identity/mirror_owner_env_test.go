package identity

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestMirrorOwnedOncePerCluster: a cluster's machines keep the credential
// mirror alive through their TerraformCluster's owner reference (book:
// Identities and Credentials; MirrorOwner), so a fleet of any size adds
// one owner reference and bring-up writes the mirror once; a machine whose
// own identity the cluster does not name owns that mirror itself; the
// mirror goes when its last owner releases it.
func TestMirrorOwnedOncePerCluster(t *testing.T) {
	f := newCredsFixture(t)
	leaks := &leakCheck{t: t}
	name := MirrorName(f.identity)
	tcName, capi := uniqueName("c"), uniqueName("capi")
	tc := newCluster(t, f.tenant, tcName, f.identity, func(c *infrav1.TerraformCluster) {
		c.Finalizers = []string{infrav1.TerraformClusterFinalizer}
	})
	newCAPICluster(t, f.tenant, capi, tcName)
	other := uniqueName("other")
	newIdentity(t, other, f.credsNS, "aws", listOf(f.tenant))

	const n = 30
	machines := make([]*infrav1.TerraformMachine, n)
	for i := range machines {
		machines[i] = newMachine(t, f.tenant, uniqueName("m"), capi, nil)
	}
	odd := newMachine(t, f.tenant, uniqueName("m"), capi, func(m *infrav1.TerraformMachine) {
		m.Spec.IdentityRef = &infrav1.IdentityReference{Name: other}
	})
	owners := func(ns, name string) []types.UID {
		s := getSecretT(t, ns, name)
		if s == nil {
			return nil
		}
		var out []types.UID
		for _, r := range s.OwnerReferences {
			out = append(out, r.UID)
		}
		return out
	}

	t.Run("the cluster's fleet adds one owner reference, and the mirror is written once", func(t *testing.T) {
		syncCreds(t, k8s, tc, nil, leaks)
		rv := getSecretT(t, f.tenant, name).ResourceVersion
		for _, m := range machines {
			_, res := syncCreds(t, k8s, m, tc, leaks)
			if !res.Ready() || res.Created || res.Updated {
				t.Fatalf("machine %s: %+v", m.Name, res)
			}
		}
		if got := owners(f.tenant, name); len(got) != 1 || got[0] != tc.UID {
			t.Fatalf("owners %v, want only the TerraformCluster %s", got, tc.UID)
		}
		if got := getSecretT(t, f.tenant, name).ResourceVersion; got != rv {
			t.Fatal("the machines' passes rewrote the mirror")
		}
	})

	t.Run("a machine's own identity the cluster does not name: that mirror is the machine's", func(t *testing.T) {
		_, res := syncCreds(t, k8s, odd, tc, leaks)
		if !res.Created {
			t.Fatalf("result %+v", res)
		}
		if got := owners(f.tenant, MirrorName(other)); len(got) != 1 || got[0] != odd.UID {
			t.Fatalf("owners %v, want the machine %s", got, odd.UID)
		}
	})

	t.Run("machines released on deletion leave the cluster's mirror in place", func(t *testing.T) {
		for _, m := range machines {
			removed, err := ReleaseMirrors(ctx, k8s, k8s, m)
			must(t, err)
			if len(removed) != 0 {
				t.Fatalf("machine %s removed %v", m.Name, removed)
			}
		}
		if getSecretT(t, f.tenant, name) == nil {
			t.Fatal("mirror deleted while its cluster exists")
		}
		removed, err := ReleaseMirrors(ctx, k8s, k8s, odd)
		must(t, err)
		if len(removed) != 1 || removed[0] != MirrorName(other) {
			t.Fatalf("removed %v", removed)
		}
	})

	t.Run("a machine of a cluster being deleted owns the mirror itself, so it outlives the cluster", func(t *testing.T) {
		must(t, k8s.Delete(ctx, tc))
		deleting := &infrav1.TerraformCluster{}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(tc), deleting))
		if deleting.DeletionTimestamp == nil {
			t.Fatal("cluster not deleting")
		}
		last := machines[0]
		_, res := syncCreds(t, k8s, last, deleting, leaks)
		if !res.Updated {
			t.Fatalf("result %+v", res)
		}
		if got := owners(f.tenant, name); len(got) != 2 || got[1] != last.UID {
			t.Fatalf("owners %v", got)
		}
		removed, err := ReleaseMirrors(ctx, k8s, k8s, deleting)
		must(t, err)
		if len(removed) != 0 || getSecretT(t, f.tenant, name) == nil {
			t.Fatalf("the cluster's release deleted the mirror a machine still owns (removed %v)", removed)
		}
		removed, err = ReleaseMirrors(ctx, k8s, k8s, last)
		must(t, err)
		if len(removed) != 1 || getSecretT(t, f.tenant, name) != nil {
			t.Fatalf("the last owner's release left the mirror (removed %v)", removed)
		}
		deleting.Finalizers = nil
		must(t, k8s.Update(ctx, deleting))
	})
	leaks.check()
}
