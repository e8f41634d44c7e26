package setup

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// fakeLiveness says live for the suffixes, objects and identities it holds.
type fakeLiveness struct {
	suffixes, objects, identities map[string]bool
}

func (f fakeLiveness) suffixLive(ns, suffix string) bool { return f.suffixes[ns+"/"+suffix] }
func (f fakeLiveness) objectLive(k infrav1.WorkloadKind, ns, name string) bool {
	return f.objects[string(k)+" "+ns+"/"+name]
}
func (f fakeLiveness) identityLive(name string) bool { return f.identities[name] }

// stateChunk is a chunk Secret of suffix as the backend labels it.
func stateChunk(ns, suffix string, index int, data []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: state.ChunkName(suffix, index), Labels: map[string]string{
			infrav1.ManagedLabel: "true", state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix, state.BackendWorkspaceLabel: state.Workspace,
		}},
		Data: map[string][]byte{state.DataKey: data},
	}
}

func durable(ns string, kind infrav1.WorkloadKind, name string, uid types.UID) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lifecycle.DurableName(kind, name),
			Labels: map[string]string{infrav1.ManagedLabel: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: infrav1.GroupVersion.String(), Kind: string(kind), Name: name, UID: uid,
			}}},
		Data: map[string][]byte{"main.tf.json": []byte("{}")},
	}
}

func mirror(ns, id string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: identity.MirrorName(id), Labels: identity.MirrorLabels(),
			Annotations: map[string]string{infrav1.IdentityAnnotation: id}},
		Data: map[string][]byte{"key": []byte("captf-sentinel-credential-5c1e")},
	}
}

// TestKeepsData is the rule of what the manager's Secret cache keeps the
// data of (Security Model: a label anyone can set does not make a Secret
// CAPTF's): a state chunk, durable inputs Secret or mirror bound to a live
// object, nothing else.
func TestKeepsData(t *testing.T) {
	sfx, _ := state.Suffix("team", infrav1.KindTerraformMachine, "m1")
	ghost, _ := state.Suffix("team", infrav1.KindTerraformMachine, "ghost")
	live := fakeLiveness{
		suffixes:   map[string]bool{"team/" + sfx: true},
		objects:    map[string]bool{"TerraformMachine team/m1": true},
		identities: map[string]bool{"aws": true},
	}
	renamed := stateChunk("team", sfx, 0, nil)
	renamed.Name = "tfstate-default-" + sfx + "-copy"
	foreignOwner := durable("team", infrav1.KindTerraformMachine, "m1", "u1")
	foreignOwner.OwnerReferences[0].Name = "m2"
	cases := []struct {
		name string
		s    *corev1.Secret
		want bool
	}{
		{"the base chunk of a live object's state", stateChunk("team", sfx, 0, nil), true},
		{"a later chunk of it", stateChunk("team", sfx, 5, nil), true},
		{"a chunk past the reader's 32", stateChunk("team", sfx, 32, nil), false},
		{"a state chunk of a suffix no object has", stateChunk("team", ghost, 0, nil), false},
		{"the same chunk in another namespace", stateChunk("other", sfx, 0, nil), false},
		{"a Secret with the state labels and another name", renamed, false},
		{"a live object's durable inputs", durable("team", infrav1.KindTerraformMachine, "m1", "u1"), true},
		{"durable inputs of an object that does not exist", durable("team", infrav1.KindTerraformMachine, "m2", "u2"), false},
		{"durable inputs owned by another object", foreignOwner, false},
		{"the mirror of an existing identity", mirror("team", "aws"), true},
		{"a mirror of an identity that does not exist", mirror("team", "gcp"), false},
		{"a tenant's Secret labeled managed", secret("team", "big", map[string]string{infrav1.ManagedLabel: "true"}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := keepsData(c.s, live); got != c.want {
				t.Fatalf("keepsData = %v, want %v", got, c.want)
			}
		})
	}
}

// TestManagerCacheKeepsOnlyBoundSecretData runs the manager's Secret cache
// on a real API server with a hostile tenant's Secrets beside a machine's
// own: a 1 MiB Secret labeled captf.io/managed, a state chunk for a suffix
// no object has and a mirror of an identity that does not exist are held
// as metadata only, marked so a reader goes live; the machine's state and
// durable inputs keep their data, and a state written before its object
// exists keeps it once it changes after.
func TestManagerCacheKeepsOnlyBoundSecretData(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	const team = "tenant-cache"
	create(t, c, ns(team))
	m1 := wakeMachine("m1", "c1", "", nil, nil)
	m1.Namespace = team
	create(t, c, m1)
	sfx, _ := state.Suffix(team, infrav1.KindTerraformMachine, "m1")
	late, _ := state.Suffix(team, infrav1.KindTerraformMachine, "late")
	ghost, _ := state.Suffix(team, infrav1.KindTerraformMachine, "ghost")
	big := secret(team, "tenant-big", map[string]string{infrav1.ManagedLabel: "true"})
	big.Data = map[string][]byte{"blob": bytes.Repeat([]byte{'x'}, 1000_000)}
	create(t, c,
		stateChunk(team, sfx, 0, []byte("m1-state")),
		durable(team, infrav1.KindTerraformMachine, "m1", m1.UID),
		stateChunk(team, ghost, 0, []byte("ghost-state")),
		stateChunk(team, late, 0, []byte("late-state")),
		mirror(team, "no-such-identity"),
		big,
	)

	gate := &secretGate{}
	opts := cacheOptions(DefaultOptions(), gate)
	opts.Scheme = NewScheme()
	mc, err := gate.newCache(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mc.Start(ctx) }()
	sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
	defer scancel()
	if !mc.WaitForCacheSync(sctx) {
		t.Fatal("the cache did not sync")
	}
	cached := func(name string) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			err := mc.Get(ctx, client.ObjectKey{Namespace: team, Name: name}, s)
			if err == nil || time.Now().After(deadline) {
				if err != nil {
					t.Fatalf("%s not cached: %v", name, err)
				}
				return s
			}
		}
	}
	for _, name := range []string{state.SecretName(sfx), lifecycle.DurableName(infrav1.KindTerraformMachine, "m1")} {
		if s := cached(name); len(s.Data) == 0 || state.DataDropped(s) {
			t.Errorf("%s: its data was dropped from the cache", name)
		}
	}
	for _, name := range []string{"tenant-big", state.SecretName(ghost), state.SecretName(late), identity.MirrorName("no-such-identity")} {
		if s := cached(name); len(s.Data) != 0 || !state.DataDropped(s) {
			t.Errorf("%s: cached with %d data keys, want none and the dropped mark", name, len(s.Data))
		}
	}
	if _, err := state.Read(ctx, mc, team, ghost, state.DefaultLimits); !errors.Is(err, state.ErrNotCached) {
		t.Errorf("reading a dropped state through the cache: %v, want ErrNotCached", err)
	}
	if st, err := state.Read(ctx, mc, team, sfx, state.DefaultLimits); !errors.Is(err, state.ErrJSON) && !errors.Is(err, state.ErrGzip) {
		t.Errorf("reading m1's state through the cache: %v (%v), want it decoded (and refused as not gzip)", st, err)
	}

	// The object arrives after its state: the next change of the state
	// Secret is cached whole.
	lateTM := wakeMachine("late", "c1", "", nil, nil)
	lateTM.Namespace = team
	create(t, c, lateTM)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if mc.Get(ctx, client.ObjectKeyFromObject(lateTM), &infrav1.TerraformMachine{}) == nil || time.Now().After(deadline) {
			break
		}
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: team, Name: state.SecretName(late)}, s); err != nil {
		t.Fatal(err)
	}
	s.Annotations = map[string]string{"touched": "1"}
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got := cached(state.SecretName(late))
		if string(got.Data[state.DataKey]) == "late-state" && !state.DataDropped(got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late object's state stays cached without its data: %v", got.Annotations)
		}
	}
}
