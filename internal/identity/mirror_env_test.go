package identity

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// credsFixture is a source Secret with a sentinel value and an identity
// allowing one tenant namespace.
type credsFixture struct {
	credsNS, tenant, identity string
	source                    *corev1.Secret
}

func newCredsFixture(t testing.TB) credsFixture {
	t.Helper()
	f := credsFixture{credsNS: namespace(t, nil), tenant: namespace(t, nil), identity: uniqueName("aws")}
	f.source = sourceSecret(t, f.credsNS, "aws", map[string][]byte{
		"AWS_ACCESS_KEY_ID":     []byte("AKIAEXAMPLE"),
		"AWS_SECRET_ACCESS_KEY": []byte(sentinel),
		"binary.pem":            {0x00, 0xff, 0x10, '\n'},
	})
	newIdentity(t, f.identity, f.credsNS, "aws", listOf(f.tenant))
	return f
}

// syncCreds runs the credentials step's identity and mirror halves for obj.
func syncCreds(t *testing.T, c client.Client, obj client.Object, cluster *infrav1.TerraformCluster, leaks *leakCheck) (Access, MirrorResult) {
	t.Helper()
	a, err := CheckAccess(ctx, c, k8s, obj, cluster)
	leaks.verdict(a.Verdict)
	leaks.events(AccessEvents(nil, a.Verdict))
	leaks.err(err)
	must(t, err)
	m, err := SyncMirror(ctx, c, k8s, a, obj, cluster)
	leaks.verdict(m.Verdict)
	leaks.events(m.Events())
	leaks.err(err)
	must(t, err)
	return a, m
}

func TestMirrorLifecycle(t *testing.T) {
	f := newCredsFixture(t)
	leaks := &leakCheck{t: t}
	tc1 := newCluster(t, f.tenant, uniqueName("c"), f.identity, nil)
	name := MirrorName(f.identity)

	var first *corev1.Secret
	t.Run("first use in the namespace creates a byte copy with labels, annotations and a non-blocking owner reference", func(t *testing.T) {
		a, m := syncCreds(t, k8s, tc1, nil, leaks)
		wantVerdict(t, m.Verdict, metav1.ConditionTrue, infrav1.MirroredReason)
		if !m.Created || m.Name != name || m.Namespace != f.tenant {
			t.Fatalf("result %+v", m)
		}
		ev := m.Events()
		if len(ev) != 1 || ev[0].Reason != infrav1.MirrorCreatedEvent || ev[0].Type != corev1.EventTypeNormal {
			t.Fatalf("events %+v", ev)
		}
		s := getSecretT(t, f.tenant, name)
		if s == nil {
			t.Fatal("no mirror")
		}
		first = s
		if len(s.Data) != len(f.source.Data) {
			t.Fatalf("keys %d, want %d", len(s.Data), len(f.source.Data))
		}
		for k, v := range f.source.Data {
			if !bytes.Equal(s.Data[k], v) {
				t.Fatalf("key %s is not a byte copy", k)
			}
		}
		if s.Type != corev1.SecretTypeOpaque {
			t.Fatalf("type %s", s.Type)
		}
		wantLabels := map[string]string{infrav1.ManagedLabel: "true", infrav1.MirroredLabel: "true", infrav1.MoveLabel: ""}
		for k, v := range wantLabels {
			if got, ok := s.Labels[k]; !ok || got != v {
				t.Fatalf("label %s=%q, want %q", k, got, v)
			}
		}
		if s.Annotations[infrav1.IdentityAnnotation] != f.identity || s.Annotations[infrav1.SourceHashAnnotation] != SourceHash(f.source.Data) || a.SourceHash != SourceHash(f.source.Data) {
			t.Fatalf("annotations %v", s.Annotations)
		}
		for k, v := range s.Annotations {
			if strings.Contains(v, sentinel) || strings.Contains(k, sentinel) {
				t.Fatal("an annotation carries a credential value")
			}
		}
		if len(s.OwnerReferences) != 1 {
			t.Fatalf("owners %+v", s.OwnerReferences)
		}
		o := s.OwnerReferences[0]
		if o.UID != tc1.UID || o.Kind != string(infrav1.KindTerraformCluster) || o.APIVersion != infrav1.GroupVersion.String() || o.Name != tc1.Name {
			t.Fatalf("owner %+v", o)
		}
		if (o.Controller != nil && *o.Controller) || (o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion) {
			t.Fatalf("owner reference is blocking or a controller: %+v", o)
		}
		// The leak check reads the log too: make sure it records this
		// package's lines.
		logMu.Lock()
		logged := strings.Join(logLines, "\n")
		logMu.Unlock()
		if !strings.Contains(logged, "Wrote credential mirror") {
			t.Fatal("the write was not logged")
		}
	})

	t.Run("a reconcile that changes nothing writes nothing", func(t *testing.T) {
		_, m := syncCreds(t, k8s, tc1, nil, leaks)
		if m.Created || m.Updated || m.Removed || len(m.Events()) != 0 {
			t.Fatalf("result %+v", m)
		}
		if s := getSecretT(t, f.tenant, name); s.ResourceVersion != first.ResourceVersion {
			t.Fatal("mirror rewritten with nothing changed")
		}
	})

	tm := newMachine(t, f.tenant, uniqueName("m"), "", func(m *infrav1.TerraformMachine) {
		m.Spec.IdentityRef = &infrav1.IdentityReference{Name: f.identity}
	})
	t.Run("an owner reference for every object that uses it, added, never duplicated", func(t *testing.T) {
		for range 2 {
			_, m := syncCreds(t, k8s, tm, nil, leaks)
			if m.Created {
				t.Fatal("MirrorCreated is due only for the object that created it")
			}
		}
		s := getSecretT(t, f.tenant, name)
		if len(s.OwnerReferences) != 2 || s.OwnerReferences[0].UID != tc1.UID || s.OwnerReferences[1].UID != tm.UID || s.OwnerReferences[1].Kind != string(infrav1.KindTerraformMachine) {
			t.Fatalf("owners %+v", s.OwnerReferences)
		}
	})

	t.Run("rotation: source data edited, hash and mirror change", func(t *testing.T) {
		before := getSecretT(t, f.tenant, name)
		src := &corev1.Secret{}
		must(t, k8s.Get(ctx, client.ObjectKeyFromObject(f.source), src))
		src.Data["AWS_SECRET_ACCESS_KEY"] = []byte(sentinel + "-rotated")
		must(t, k8s.Update(ctx, src))

		a, m := syncCreds(t, k8s, tm, nil, leaks)
		if !m.Updated || m.Created {
			t.Fatalf("result %+v", m)
		}
		wantVerdict(t, m.Verdict, metav1.ConditionTrue, infrav1.MirroredReason)
		after := getSecretT(t, f.tenant, name)
		if after.Annotations[infrav1.SourceHashAnnotation] == before.Annotations[infrav1.SourceHashAnnotation] {
			t.Fatal("source hash did not move")
		}
		if after.Annotations[infrav1.SourceHashAnnotation] != SourceHash(src.Data) || a.SourceHash != SourceHash(src.Data) {
			t.Fatal("source hash is not the new data's")
		}
		if string(after.Data["AWS_SECRET_ACCESS_KEY"]) != sentinel+"-rotated" {
			t.Fatal("mirror data not rewritten")
		}
		if len(after.OwnerReferences) != 2 {
			t.Fatalf("owners lost on rewrite: %+v", after.OwnerReferences)
		}
	})

	t.Run("a mirror edited in place is restored from the source", func(t *testing.T) {
		s := getSecretT(t, f.tenant, name)
		s.Data["AWS_ACCESS_KEY_ID"] = []byte("tampered")
		must(t, k8s.Update(ctx, s))
		_, m := syncCreds(t, k8s, tc1, nil, leaks)
		if !m.Updated {
			t.Fatal("not rewritten")
		}
		if got := getSecretT(t, f.tenant, name); string(got.Data["AWS_ACCESS_KEY_ID"]) != "AKIAEXAMPLE" {
			t.Fatal("data not restored")
		}
	})

	t.Run("revocation: namespace dropped, mirror deleted whatever objects still reference it", func(t *testing.T) {
		id := &infrav1.TerraformClusterIdentity{}
		must(t, k8s.Get(ctx, client.ObjectKey{Name: f.identity}, id))
		id.Spec.AllowedNamespaces = listOf("some-other-namespace")
		must(t, k8s.Update(ctx, id))

		a, m := syncCreds(t, k8s, tm, nil, leaks)
		wantVerdict(t, a.Verdict, metav1.ConditionFalse, infrav1.NamespaceNotAllowedReason)
		wantVerdict(t, m.Verdict, metav1.ConditionUnknown, infrav1.MirrorPendingReason)
		if !m.Removed {
			t.Fatal("mirror not removed")
		}
		ev := m.Events()
		if len(ev) != 1 || ev[0].Reason != infrav1.MirrorRemovedEvent {
			t.Fatalf("events %+v", ev)
		}
		if getSecretT(t, f.tenant, name) != nil {
			t.Fatal("mirror still there with two objects referencing it")
		}
		// The other object's pass finds nothing left to remove.
		_, m = syncCreds(t, k8s, tc1, nil, leaks)
		if m.Removed {
			t.Fatal("removed twice")
		}

		// Access restored: the mirror comes back.
		must(t, k8s.Get(ctx, client.ObjectKey{Name: f.identity}, id))
		id.Spec.AllowedNamespaces = listOf(f.tenant)
		must(t, k8s.Update(ctx, id))
		_, m = syncCreds(t, k8s, tc1, nil, leaks)
		if !m.Created || !m.Ready() {
			t.Fatalf("not re-created: %+v", m)
		}
	})

	t.Run("source Secret gone: IdentityAllowed False/SecretNotFound, mirror pending and left alone", func(t *testing.T) {
		must(t, k8s.Delete(ctx, f.source))
		a, m := syncCreds(t, k8s, tc1, nil, leaks)
		wantVerdict(t, a.Verdict, metav1.ConditionFalse, infrav1.SecretNotFoundReason)
		wantVerdict(t, m.Verdict, metav1.ConditionUnknown, infrav1.MirrorPendingReason)
		if m.Removed || getSecretT(t, f.tenant, name) == nil {
			t.Fatal("mirror removed")
		}
	})

	t.Run("last owner gone: released owners, then the mirror deleted", func(t *testing.T) {
		removed, err := ReleaseMirrors(ctx, k8s, k8s, tm)
		must(t, err)
		if len(removed) != 0 {
			t.Fatalf("removed %v while tc1 still owns it", removed)
		}
		s := getSecretT(t, f.tenant, name)
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != tc1.UID {
			t.Fatalf("owners %+v", s.OwnerReferences)
		}
		removed, err = ReleaseMirrors(ctx, k8s, k8s, tc1)
		must(t, err)
		if len(removed) != 1 || removed[0] != name {
			t.Fatalf("removed %v", removed)
		}
		if getSecretT(t, f.tenant, name) != nil {
			t.Fatal("mirror with no owner left")
		}
	})
	leaks.check()
}

func TestMirrorNeverOverwritesForeignSecret(t *testing.T) {
	f := newCredsFixture(t)
	leaks := &leakCheck{t: t}
	name := MirrorName(f.identity)
	cases := []struct {
		name   string
		secret *corev1.Secret
	}{
		{"a user's Secret of the mirror's name", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "mine"}},
			Data:       map[string][]byte{"mine": []byte("keep")},
		}},
		{"a mirror of a different captf.io/identity", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: MirrorLabels(), Annotations: map[string]string{infrav1.IdentityAnnotation: "someone-else"}},
			Data:       map[string][]byte{"mine": []byte("keep")},
		}},
		{"managed-labeled but without captf.io/mirrored", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{infrav1.ManagedLabel: "true"}, Annotations: map[string]string{infrav1.IdentityAnnotation: f.identity}},
			Data:       map[string][]byte{"mine": []byte("keep")},
		}},
	}
	for _, withCache := range []bool{false, true} {
		for _, tt := range cases {
			t.Run(fmt.Sprintf("%s (manager cache %v)", tt.name, withCache), func(t *testing.T) {
				ns := namespace(t, nil)
				id := &infrav1.TerraformClusterIdentity{}
				must(t, k8s.Get(ctx, client.ObjectKey{Name: f.identity}, id))
				id.Spec.AllowedNamespaces.List = append(id.Spec.AllowedNamespaces.List, ns)
				must(t, k8s.Update(ctx, id))
				s := tt.secret.DeepCopy()
				s.Namespace = ns
				must(t, k8s.Create(ctx, s))
				obj := newCluster(t, ns, uniqueName("c"), f.identity, nil)

				c := client.Client(k8s)
				if withCache {
					c = managerClient(t)
				}
				var m MirrorResult
				eventually(t, func() error {
					a, err := CheckAccess(ctx, c, k8s, obj, nil)
					if err != nil || !a.Allowed() {
						return fmt.Errorf("access %s: %v", a, err)
					}
					m, err = SyncMirror(ctx, c, k8s, a, obj, nil)
					leaks.verdict(m.Verdict)
					leaks.err(err)
					return err
				})
				wantVerdict(t, m.Verdict, metav1.ConditionFalse, infrav1.MirrorFailedReason)
				if m.Created || m.Updated {
					t.Fatalf("result %+v", m)
				}
				got := getSecretT(t, ns, name)
				if got.ResourceVersion != s.ResourceVersion || string(got.Data["mine"]) != "keep" || len(got.Data) != 1 || len(got.OwnerReferences) != 0 {
					t.Fatal("foreign Secret was written to")
				}
				// Nor is it removed on revocation or release.
				removed, err := RemoveMirror(ctx, k8s, ns, f.identity)
				must(t, err)
				if removed {
					t.Fatal("foreign Secret removed")
				}
			})
		}
	}
	leaks.check()
}

func TestMirrorWithManagerCache(t *testing.T) {
	f := newCredsFixture(t)
	leaks := &leakCheck{t: t}
	c := managerClient(t)
	obj := newCluster(t, f.tenant, uniqueName("c"), f.identity, nil)
	_, m := syncCreds(t, c, obj, nil, leaks)
	if !m.Created || !m.Ready() {
		t.Fatalf("result %+v", m)
	}
	// The cache may not have seen the new mirror yet: a second pass must
	// neither fail nor write again once it has.
	eventually(t, func() error {
		_, m = syncCreds(t, c, obj, nil, leaks)
		if m.Created || m.Updated {
			return fmt.Errorf("pass wrote: %+v", m)
		}
		return nil
	})
	// Someone strips the managed label: the mirror falls out of the cache,
	// and is recognized live and relabeled.
	s := getSecretT(t, f.tenant, m.Name)
	delete(s.Labels, infrav1.ManagedLabel)
	must(t, k8s.Update(ctx, s))
	eventually(t, func() error {
		_, m = syncCreds(t, c, obj, nil, leaks)
		if got := getSecretT(t, f.tenant, m.Name); got.Labels[infrav1.ManagedLabel] != "true" {
			return fmt.Errorf("not relabeled")
		}
		return nil
	})
	wantVerdict(t, m.Verdict, metav1.ConditionTrue, infrav1.MirroredReason)
	leaks.check()
}

func TestMirrorLongIdentityName(t *testing.T) {
	creds, tenant := namespace(t, nil), namespace(t, nil)
	sourceSecret(t, creds, "s", map[string][]byte{"K": []byte(sentinel)})
	long := strings.Repeat("a", 200) + "." + strings.Repeat("b", 45) + uniqueName("")
	newIdentity(t, long, creds, "s", listOf(tenant))
	obj := newCluster(t, tenant, uniqueName("c"), long, nil)
	leaks := &leakCheck{t: t}
	_, m := syncCreds(t, k8s, obj, nil, leaks)
	if !m.Created || len(m.Name) > 253 || m.Name == MirrorPrefix+long {
		t.Fatalf("name %q (%d)", m.Name, len(m.Name))
	}
	nss, err := MirrorNamespaces(ctx, k8s, &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: long}, Spec: infrav1.TerraformClusterIdentitySpec{AllowedNamespaces: listOf(tenant)}})
	must(t, err)
	if len(nss) != 1 || nss[0] != tenant {
		t.Fatalf("namespaces %v", nss)
	}
	leaks.check()
}

func TestEnsureMirrorErrorsCarryNoCredential(t *testing.T) {
	f := newCredsFixture(t)
	obj := newCluster(t, f.tenant, uniqueName("c"), f.identity, nil)
	a, err := CheckAccess(ctx, k8s, k8s, obj, nil)
	must(t, err)
	// An object the API server never stored has no UID: the write is
	// refused before anything is sent, with a clear error.
	ghost := obj.DeepCopy()
	ghost.UID = ""
	m, err := SyncMirror(ctx, k8s, k8s, a, ghost, nil)
	if err == nil {
		t.Fatal("no error")
	}
	wantVerdict(t, m.Verdict, metav1.ConditionFalse, infrav1.MirrorFailedReason)
	// A namespace that does not exist: the API server refuses the create.
	gone := obj.DeepCopy()
	gone.Namespace = "no-such-namespace"
	m, err = SyncMirror(ctx, k8s, k8s, a, gone, nil)
	if err == nil || !apierrors.IsNotFound(err) {
		t.Fatalf("error %v", err)
	}
	wantVerdict(t, m.Verdict, metav1.ConditionFalse, infrav1.MirrorFailedReason)
	leaks := &leakCheck{t: t}
	leaks.verdict(m.Verdict)
	leaks.err(err)
	leaks.check()
}
