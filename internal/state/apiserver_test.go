package state

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

func testOwner(ns, name string) owner.Owner {
	return owner.Owner{Kind: v1alpha1.KindTerraformMachine, Namespace: ns, Name: name, UID: types.UID("uid-" + name), ClusterName: "cluster-1"}
}

// writeState stores a state document as the backend would, in n chunks.
func writeState(t *testing.T, e *testEnv, o owner.Owner, doc []byte, n int) string {
	t.Helper()
	suffix, err := SuffixOf(o)
	if err != nil {
		t.Fatal(err)
	}
	e.create(t, secretsAsObjects(o.Namespace, chunkSecrets(o.Namespace, suffix, split(gzipBytes(t, doc), n)))...)
	return suffix
}

func TestAPIServerReadThroughManagedCache(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "cached")
	suffix := writeState(t, e, o, mustJSON(t, sampleDoc(11)), 3)
	other := testOwner(ns, "other")
	writeState(t, e, other, mustJSON(t, sampleDoc(99)), 1)
	// An unrelated Secret outside the cache's selector.
	e.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}, StringData: map[string]string{"k": "v"}})

	c := e.managedCache(t)
	var st *State
	eventually(t, 10*time.Second, func() error {
		var err error
		st, err = Read(ctx, c, ns, suffix, DefaultLimits)
		return err
	})
	if st.Serial != 11 || st.Chunks != 3 || st.ManagedResources != 3 || st.Namespace != ns {
		t.Errorf("read through the cache: %v", st.MarshalLog())
	}
	// The live client reads the same.
	live, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
	if err != nil || live.Digest != st.Digest {
		t.Fatalf("live read: %v", err)
	}
	// Nothing for an object that never applied.
	none, _ := Suffix(ns, v1alpha1.KindTerraformCluster, "fresh")
	if _, err := Read(ctx, c, ns, none, DefaultLimits); !errors.Is(err, ErrNotFound) {
		t.Errorf("no state: %v", err)
	}
}

func TestAPIServerAdopt(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "adopt")
	suffix := writeState(t, e, o, mustJSON(t, sampleDoc(4)), 3)

	st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := Adopt(ctx, e.client, o, st, "h2:first")
	if err != nil || len(patched) != 3 {
		t.Fatalf("adopt: %v %v", patched, err)
	}
	for i := 0; i < 3; i++ {
		var s corev1.Secret
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ChunkName(suffix, i)}, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != o.UID || s.OwnerReferences[0].Kind != string(v1alpha1.KindTerraformMachine) ||
			s.OwnerReferences[0].APIVersion != "infrastructure.cluster.x-k8s.io/v1alpha1" {
			t.Errorf("chunk %d owner refs: %+v", i, s.OwnerReferences)
		}
		if s.OwnerReferences[0].BlockOwnerDeletion != nil && *s.OwnerReferences[0].BlockOwnerDeletion {
			t.Errorf("chunk %d owner reference blocks deletion", i)
		}
		if got := s.Annotations[inputsHashAnnotation]; (i == 0) != (got == "h2:first") {
			t.Errorf("chunk %d inputs hash %q: only the base Secret carries it", i, got)
		}
		if len(s.Data[DataKey]) == 0 {
			t.Errorf("chunk %d lost its data", i)
		}
	}

	t.Run("adopting again writes nothing", func(t *testing.T) {
		st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
		if err != nil || st.InputsHash != "h2:first" {
			t.Fatalf("read: %v", err)
		}
		var writes int
		counting := interceptor.NewClient(e.client, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				writes++
				return c.Patch(ctx, obj, p, opts...)
			},
		})
		patched, err := Adopt(ctx, counting, o, st, "h2:first")
		if err != nil || len(patched) != 0 || writes != 0 {
			t.Errorf("second adoption patched %v (%d writes), %v", patched, writes, err)
		}
	})

	t.Run("a new inputs hash after the next apply only touches the base Secret", func(t *testing.T) {
		st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := Adopt(ctx, e.client, o, st, "h2:second")
		if err != nil || len(patched) != 1 || patched[0] != SecretName(suffix) {
			t.Fatalf("patched %v, %v", patched, err)
		}
	})

	t.Run("a concurrent write makes adoption fail and retry next pass", func(t *testing.T) {
		st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		var base corev1.Secret
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: SecretName(suffix)}, &base); err != nil {
			t.Fatal(err)
		}
		base.Labels["touched"] = "yes"
		if err := e.client.Update(ctx, &base); err != nil {
			t.Fatal(err)
		}
		_, err = Adopt(ctx, e.client, o, st, "h2:third")
		if !apierrors.IsConflict(err) {
			t.Errorf("adoption over a stale read: %v", err)
		}
	})

	t.Run("a recreated object with a new UID replaces the old reference", func(t *testing.T) {
		st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		moved := o
		moved.UID = "uid-after-move"
		if _, err := Adopt(ctx, e.client, moved, st, "h2:second"); err != nil {
			t.Fatal(err)
		}
		var s corev1.Secret
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ChunkName(suffix, 2)}, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "uid-after-move" {
			t.Errorf("owner refs: %+v", s.OwnerReferences)
		}
	})
}

func listBackupSecrets(t *testing.T, e *testEnv, ns, suffix string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	if err := e.client.List(context.Background(), &list, client.InNamespace(ns), backupSelector(suffix)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestAPIServerBackups(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "backed")
	suffix, _ := SuffixOf(o)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	// putState replaces the state Secrets with a state of the given serial
	// in n chunks, as a new apply would.
	putState := func(serial uint64, n int) *State {
		t.Helper()
		if err := DeleteState(ctx, e.client, ns, suffix); err != nil {
			t.Fatal(err)
		}
		writeState(t, e, o, mustJSON(t, sampleDoc(serial)), n)
		st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	st := putState(1, 3)
	st.InputsHash = "h2:one"
	out, err := SyncBackups(ctx, e.client, o, st, nil, BackupOptions{Keep: 2, SourceJob: "captf-m-backed-apply-a1-aaaaaa", Now: t0})
	if err != nil || out.Taken == nil || out.Taken.Serial != 1 || out.Skipped {
		t.Fatalf("first backup: %+v %v", out, err)
	}
	secrets := listBackupSecrets(t, e, ns, suffix)
	if len(secrets) != 3 {
		t.Fatalf("backup of a 3-chunk state has %d Secrets", len(secrets))
	}
	for _, s := range secrets {
		idx := s.Annotations[backupChunkAnnotation]
		if want := BackupChunkName(suffix, 1, int(idx[0]-'0')); s.Name != want {
			t.Errorf("backup chunk %s named %s", idx, s.Name)
		}
		src := st.secrets[int(idx[0]-'0')]
		if string(s.Data[DataKey]) != string(src.Data[DataKey]) {
			t.Errorf("backup chunk %s is not a verbatim copy", idx)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != o.UID {
			t.Errorf("backup %s is not owned by the object: %+v", s.Name, s.OwnerReferences)
		}
		if v, ok := s.Labels[moveLabel]; !ok || v != "" {
			t.Errorf("backup %s lacks the clusterctl move label", s.Name)
		}
		for _, k := range []string{managedLabel, stateBackupLabel} {
			if s.Labels[k] != "true" {
				t.Errorf("backup %s label %s = %q", s.Name, k, s.Labels[k])
			}
		}
		if s.Labels[stateBackupSuffixLabel] != suffix || s.Labels[ownerKindLabel] != string(v1alpha1.KindTerraformMachine) || s.Labels[ownerNameLabel] != "backed" || s.Labels[clusterNameLabel] != "cluster-1" {
			t.Errorf("backup %s labels: %v", s.Name, s.Labels)
		}
		for k, want := range map[string]string{
			backupSerialAnnotation: "1", backupLineageAnnotation: st.Lineage, backupTakenAtAnnotation: "2026-03-01T10:00:00Z",
			backupSourceJobAnnotation: "captf-m-backed-apply-a1-aaaaaa", backupDigestAnnotation: st.Digest,
			backupResourcesAnnotation: "3", backupSetAnnotation: BackupName(suffix, 1), backupChunksAnnotation: "3",
		} {
			if s.Annotations[k] != want {
				t.Errorf("backup %s annotation %s = %q, want %q", s.Name, k, s.Annotations[k], want)
			}
		}
		if (idx == "0") != (s.Annotations[inputsHashAnnotation] == "h2:one") {
			t.Errorf("inputs hash belongs on chunk 0 of a backup only (%s)", s.Name)
		}
		if _, ok := s.Labels[BackendStateLabel]; ok {
			t.Errorf("a backup must not carry the backend's labels, or the reader would take it for state")
		}
	}
	// The state still reads: backups are not mistaken for chunks.
	if _, err := Read(ctx, e.client, ns, suffix, DefaultLimits); err != nil {
		t.Fatalf("read after backup: %v", err)
	}

	t.Run("an unchanged serial is not backed up again", func(t *testing.T) {
		out, err := SyncBackups(ctx, e.client, o, st, nil, BackupOptions{Keep: 2, Now: t0.Add(time.Minute)})
		if err != nil || out.Taken != nil || len(out.Pruned) != 0 || len(out.Backups) != 1 {
			t.Errorf("%+v %v", out, err)
		}
	})

	t.Run("a failed copy is skipped, not recorded, and retried next pass", func(t *testing.T) {
		st2 := putState(2, 2)
		failing := interceptor.NewClient(e.client, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if obj.GetName() == BackupName(suffix, 2) {
					return apierrors.NewServiceUnavailable("injected")
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		out, err := SyncBackups(ctx, failing, o, st2, nil, BackupOptions{Keep: 2, Now: t0.Add(2 * time.Minute)})
		if err == nil || !out.Skipped || out.SkipReason != "copy failed" || out.Taken != nil {
			t.Fatalf("failed copy: %+v %v", out, err)
		}
		if got, _ := ListBackups(ctx, e.client, ns, suffix); len(got) != 1 {
			t.Fatalf("a failed copy must not list as a backup: %+v", got)
		}
		out, err = SyncBackups(ctx, e.client, o, st2, nil, BackupOptions{Keep: 2, Now: t0.Add(3 * time.Minute)})
		if err != nil || out.Taken == nil || out.Taken.Serial != 2 {
			t.Fatalf("retry: %+v %v", out, err)
		}
	})

	t.Run("the oldest complete set beyond --state-backups is pruned in the same pass", func(t *testing.T) {
		st3 := putState(3, 1)
		out, err := SyncBackups(ctx, e.client, o, st3, nil, BackupOptions{Keep: 2, Now: t0.Add(4 * time.Minute)})
		if err != nil || out.Taken == nil || fmt.Sprint(out.Pruned) != "[1]" {
			t.Fatalf("%+v %v", out, err)
		}
		got, _ := ListBackups(ctx, e.client, ns, suffix)
		if len(got) != 2 || got[0].Serial != 3 || got[1].Serial != 2 || got[0].Bytes != st3.CompressedBytes {
			t.Fatalf("backups after pruning: %+v", got)
		}
		if n := len(listBackupSecrets(t, e, ns, suffix)); n != 3 {
			t.Errorf("pruning left %d Secrets, want 3 (1 + 2 chunks)", n)
		}
		if sb := StatusBackups(out.Backups); len(sb) != 2 || sb[0].Serial != 3 {
			t.Errorf("status backups: %+v", sb)
		}
	})

	t.Run("--state-backups=0 takes none and deletes none", func(t *testing.T) {
		st4 := putState(4, 1)
		out, err := SyncBackups(ctx, e.client, o, st4, nil, BackupOptions{Keep: 0, Now: t0.Add(5 * time.Minute)})
		if err != nil || out.Taken != nil || len(out.Pruned) != 0 || len(out.Backups) != 2 {
			t.Errorf("%+v %v", out, err)
		}
	})

	t.Run("no backups are taken while the object is being deleted", func(t *testing.T) {
		st5 := putState(5, 1)
		out, err := SyncBackups(ctx, e.client, o, st5, nil, BackupOptions{Keep: 5, Deleting: true, Now: t0.Add(6 * time.Minute)})
		if err != nil || out.Taken != nil || len(out.Backups) != 2 {
			t.Errorf("%+v %v", out, err)
		}
	})

	t.Run("restore input is the chosen backup's chunks in order", func(t *testing.T) {
		r, err := RestoreInput(ctx, e.client, ns, suffix, 2)
		if err != nil {
			t.Fatal(err)
		}
		if r.Serial != 2 || len(r.Chunks) != 2 || r.Resources != 3 {
			t.Fatalf("restore: serial %d, %d chunks, %d resources", r.Serial, len(r.Chunks), r.Resources)
		}
		c, err := Decode(r.Chunks, DefaultLimits)
		if err != nil || c.Serial != 2 {
			t.Fatalf("restore chunks decode: %v", err)
		}
		if _, err := RestoreInput(ctx, e.client, ns, suffix, 1); !errors.Is(err, ErrBackupNotFound) {
			t.Errorf("pruned backup: %v", err)
		}
		// A damaged backup is refused.
		var s corev1.Secret
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: BackupChunkName(suffix, 3, 0)}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[DataKey] = append([]byte{}, s.Data[DataKey][:10]...)
		if err := e.client.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
		if _, err := RestoreInput(ctx, e.client, ns, suffix, 3); !errors.Is(err, ErrBackupDamaged) {
			t.Errorf("damaged backup: %v", err)
		}
	})
}

// TestAPIServerUnreadableStatesAreNeverBackedUp stores each kind of broken
// state in the apiserver and checks that each reads with its own error, and
// that the backup pass skips it.
func TestAPIServerUnreadableStatesAreNeverBackedUp(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	good := gzipBytes(t, mustJSON(t, sampleDoc(5)))
	huge := func() []byte {
		big := make([]byte, 65<<20)
		for i := range big {
			big[i] = ' '
		}
		copy(big, `{"version":4,"serial":1,"lineage":"l","x":"`)
		big[len(big)-2], big[len(big)-1] = '"', '}'
		return gzipBytes(t, big)
	}()
	envelope := gzipBytes(t, []byte(`{"serial":5,"lineage":"l","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"QUJD","encryption_version":"v0"}`))

	type layout func(suffix string) []corev1.Secret
	chunks := func(p []byte, n int) layout {
		return func(suffix string) []corev1.Secret { return chunkSecrets(ns, suffix, split(p, n)) }
	}
	for i, tc := range []struct {
		name   string
		secs   layout
		kind   error
		reason string
	}{
		{"good: read, and backed up", chunks(good, 4), nil, ""},
		{"33 chunks", chunks(good, 33), ErrTooManyChunks, ReasonCorrupt},
		{"65 MiB decompressed", chunks(huge, 3), ErrTooLarge, ReasonCorrupt},
		{"a missing middle chunk", func(s string) []corev1.Secret { c := chunks(good, 4)(s); return append(c[:1], c[2:]...) }, ErrChunkMissing, ReasonInconsistent},
		{"a duplicate chunk", func(s string) []corev1.Secret {
			c := chunks(good, 3)(s)
			d := *c[2].DeepCopy()
			d.Name = SecretName(s) + "-part-002"
			return append(c, d)
		}, ErrChunkDuplicate, ReasonInconsistent},
		{"a stranger Secret with the labels", func(s string) []corev1.Secret {
			return append(chunks(good, 2)(s), backendSecret(ns, s, "stranger-"+s, good))
		}, ErrUnexpectedSecret, ReasonInconsistent},
		{"truncated gzip", chunks(good[:len(good)-20], 1), ErrGzip, ReasonCorrupt},
		{"bad JSON", chunks(gzipBytes(t, []byte(`{"version":4,"serial":5,"lineage":"l","resources":[{]}`)), 2), ErrJSON, ReasonCorrupt},
		{"encrypted", chunks(envelope, 1), ErrEncrypted, ReasonEncrypted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOwner(ns, fmt.Sprintf("case-%d", i))
			suffix, _ := SuffixOf(o)
			e.create(t, secretsAsObjects(ns, tc.secs(suffix))...)
			st, err := Read(ctx, e.client, ns, suffix, DefaultLimits)
			if tc.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if st != nil || !errors.Is(err, tc.kind) || ReasonOf(err) != tc.reason {
					t.Fatalf("read = %v, %v; want %v (%s)", st != nil, err, tc.kind, tc.reason)
				}
				for _, other := range []error{ErrTooManyChunks, ErrTooLarge, ErrChunkMissing, ErrChunkDuplicate, ErrUnexpectedSecret, ErrGzip, ErrJSON, ErrEncrypted} {
					if other != tc.kind && errors.Is(err, other) {
						t.Errorf("error %v also matches %v", err, other)
					}
				}
			}
			out, berr := SyncBackups(ctx, e.client, o, st, err, BackupOptions{Keep: 5})
			if berr != nil {
				t.Fatal(berr)
			}
			n := len(listBackupSecrets(t, e, ns, suffix))
			if tc.kind == nil {
				if out.Taken == nil || n != 4 {
					t.Errorf("good state: taken %v, %d backup Secrets", out.Taken, n)
				}
				return
			}
			if !out.Skipped || out.Taken != nil || n != 0 {
				t.Errorf("unreadable state: skipped=%v taken=%v, %d backup Secrets", out.Skipped, out.Taken, n)
			}
			if !strings.Contains(out.SkipReason, tc.kind.Error()) {
				t.Errorf("skip reason %q does not say why", out.SkipReason)
			}
		})
	}
}

func TestAPIServerDeleteStateAndLock(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := e.namespace(t)
	o := testOwner(ns, "gone")
	suffix := writeState(t, e, o, mustJSON(t, sampleDoc(2)), 3)
	stranger := backendSecret(ns, suffix, "stranger-"+suffix, []byte("x"))
	holder := "lock-1"
	e.create(t, &stranger, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LockLeaseName(suffix), Namespace: ns, Annotations: map[string]string{
			LockInfoAnnotation: `{"ID":"lock-1","Operation":"OperationTypeApply","Info":"","Who":"runner@captf-m-gone-apply-a1-abcdef-zx9k2","Version":"1.12.6","Created":"2026-01-01T00:00:00Z","Path":""}`,
		}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	})

	l, err := ReadLock(ctx, e.client, ns, suffix)
	if err != nil || !l.Held() || l.Info == nil || l.Info.Operation != "OperationTypeApply" {
		t.Fatalf("lock: %+v %v", l, err)
	}
	v := ClassifyLock(l, LockOwners{Jobs: []string{"captf-m-gone-apply-a1-abcdef"}})
	if v.Holder != LockStale || v.ID != "lock-1" {
		t.Errorf("verdict %+v", v)
	}

	if err := DeleteState(ctx, e.client, ns, suffix); err != nil {
		t.Fatal(err)
	}
	var list corev1.SecretList
	if err := e.client.List(ctx, &list, client.InNamespace(ns), backendSelector(suffix)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != stranger.Name {
		t.Errorf("after cleanup: %d Secrets left", len(list.Items))
	}
	if l, err := ReadLock(ctx, e.client, ns, suffix); err != nil || l.Exists {
		t.Errorf("lock Lease after cleanup: %+v %v", l, err)
	}
	if err := DeleteState(ctx, e.client, ns, suffix); err != nil {
		t.Errorf("cleanup twice: %v", err)
	}
}
