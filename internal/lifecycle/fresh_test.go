package lifecycle

import (
	"context"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestWritten checks the guard against deciding on a cached version older
// than this manager's own last update.
func TestWritten(t *testing.T) {
	at := func(rv string) *infrav1.TerraformCluster {
		return &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}}
	}
	w := &written{}
	if w.stale(at("10")) {
		t.Fatal("an object this manager never wrote is stale")
	}
	w.wrote("u1", "10", "10")
	if w.stale(at("10")) {
		t.Fatal("a pass that changed nothing marked the object")
	}
	w.wrote("u1", "10", "11")
	if !w.stale(at("10")) {
		t.Fatal("the version the writing pass started from is not stale")
	}
	if w.stale(at("11")) {
		t.Fatal("the written version is stale")
	}
	if w.stale(at("10")) {
		t.Fatal("the mark outlived a newer version")
	}
	// The patch helper's metadata request lands before its status one:
	// the version between them is stale too.
	w.wrote("u1", "12", "13")
	w.wrote("u1", "12", "14")
	if !w.stale(at("13")) {
		t.Fatal("the version between the metadata and the status patch is not stale")
	}
	if w.stale(at("15")) {
		t.Fatal("a newer version, written by someone else, is stale")
	}
	// resourceVersions are opaque: compared for equality only, never as
	// numbers. A version that sorts below the written one as a number,
	// but that this manager's patches did not produce, is not stale.
	w.wrote("u1", "20", "9")
	w.wrote("u1", "20", "30")
	if !w.stale(at("20")) || !w.stale(at("9")) {
		t.Fatal("the starting version and the one between the patches are stale, whatever their order as numbers")
	}
	if w.stale(at("25")) {
		t.Fatal("a version no patch produced is stale because it is below the written one as a number")
	}
	w.wrote("u1", "a", "b")
	if !w.stale(at("a")) || w.stale(at("b")) {
		t.Fatal("opaque versions: only the starting version is stale")
	}
	w.wrote("u1", "11", "12")
	w.forget("u1")
	if w.stale(at("11")) {
		t.Fatal("a forgotten object is still marked")
	}
	var none *written
	if none.stale(at("1")) {
		t.Fatal("a flow without the guard reports stale")
	}
	none.wrote("u1", "1", "2")
}

// TestVersionRecorder checks that the version the patch helper's requests
// produce is learnt, though the helper patches copies of the object.
func TestVersionRecorder(t *testing.T) {
	s := runtime.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc).WithStatusSubresource(tc).Build()
	obj := &infrav1.TerraformCluster{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc), obj); err != nil {
		t.Fatal(err)
	}
	from := obj.ResourceVersion
	rec := &versionRecorder{Client: c}
	h, err := patch.NewHelper(obj, rec)
	if err != nil {
		t.Fatal(err)
	}
	obj.Annotations = map[string]string{"a": "b"}
	obj.Status.StateSecretSuffix = "x"
	if err := h.Patch(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	live := &infrav1.TerraformCluster{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc), live); err != nil {
		t.Fatal(err)
	}
	if rec.version != live.ResourceVersion || rec.version == from {
		t.Fatalf("recorded version %q, want the live %q (started from %q)", rec.version, live.ResourceVersion, from)
	}
}

// staleReader reads an object as it was when the pass started, as the
// manager's cache does right after the pass's own patch.
type staleReader struct {
	client.Client
	at client.Object
}

func (s staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(s.at.DeepCopyObject()).Elem())
	return nil
}

// conflictCounter counts the status patches the API server refused.
type conflictCounter struct {
	client.Client
	conflicts *int
}

func (c conflictCounter) Status() client.SubResourceWriter {
	return conflictStatus{c.Client.Status(), c.conflicts}
}

type conflictStatus struct {
	client.SubResourceWriter
	conflicts *int
}

func (s conflictStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, p, opts...)
	if apierrors.IsConflict(err) {
		*s.conflicts++
	}
	return err
}

// TestVersionRecorderReadsItsOwnPatch: after a write earlier in the pass
// (the finalizer's patch), the patch helper writes the conditions (an
// optimistic-lock patch) on the version that write produced, not on the
// older one the cache still holds: no conflict, no retry. When the pass
// started from a version older than the API server's (someone else wrote
// in between), the read after the conflict is live: one conflict.
func TestVersionRecorderReadsItsOwnPatch(t *testing.T) {
	s := runtime.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, other := range []bool{false, true} {
		tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(tm).WithStatusSubresource(tm).Build()
		obj := &infrav1.TerraformMachine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tm), obj); err != nil {
			t.Fatal(err)
		}
		conflicts := 0
		cached := staleReader{Client: conflictCounter{c, &conflicts}, at: obj.DeepCopy()}
		rec := &versionRecorder{Client: cached, Live: c}
		if other {
			// Someone else writes after the pass's read.
			theirs := obj.DeepCopy()
			theirs.Labels = map[string]string{"theirs": "x"}
			if err := c.Update(ctx, theirs); err != nil {
				t.Fatal(err)
			}
		} else {
			// The pass's own write before its status patch.
			base := obj.DeepCopy()
			obj.Finalizers = []string{"f"}
			if err := rec.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
				t.Fatal(err)
			}
		}
		h, err := patch.NewHelper(obj, rec)
		if err != nil {
			t.Fatal(err)
		}
		obj.Status.StateSecretSuffix = "x"
		meta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Ready"})
		if err := h.Patch(ctx, obj, patch.WithOwnedConditions{Conditions: []string{infrav1.ReadyCondition}}); err != nil {
			t.Fatalf("someone else wrote: %v: %v", other, err)
		}
		live := &infrav1.TerraformMachine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tm), live); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(live.Status.Conditions, infrav1.ReadyCondition) || live.Status.StateSecretSuffix != "x" {
			t.Fatalf("someone else wrote: %v: the patch did not land: %+v", other, live.Status)
		}
		if want := map[bool]int{false: 0, true: 1}[other]; conflicts != want {
			t.Errorf("someone else wrote: %v: %d conflicts, want %d", other, conflicts, want)
		}
	}
}

// TestOwnWritesWakeNothing checks the For predicate: an update that is
// this manager's own write (status, or the metadata and spec a pass wrote
// as it went on) does not wake the object again, while anyone else's
// update, a finalizer or deletion change, and a write a pass waits for do.
func TestOwnWritesWakeNothing(t *testing.T) {
	at := func(rv string, finalizers ...string) *infrav1.TerraformMachine {
		return &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv, Finalizers: finalizers}}
	}
	annotated := func(rv string) *infrav1.TerraformMachine {
		m := at(rv)
		m.Annotations = map[string]string{"clusterctl.cluster.x-k8s.io/block-move": "true"}
		return m
	}
	withProviderID := func(rv string) *infrav1.TerraformMachine {
		m := at(rv)
		m.Generation = 2
		m.Spec.ProviderID = "p://1"
		return m
	}
	deleting := func(rv string) *infrav1.TerraformMachine {
		m := at(rv)
		m.DeletionTimestamp = &metav1.Time{}
		return m
	}
	update := func(f *Flow, old, new *infrav1.TerraformMachine) bool {
		return f.notOwnWrite().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}
	cases := []struct {
		name     string
		wrote    []string // from, then each version a patch produced
		waiting  bool
		old, new *infrav1.TerraformMachine
		wake     bool
	}{
		{"nothing written by this manager", nil, false, at("10"), at("11"), true},
		{"the status patch this manager wrote", []string{"10", "11", "12"}, false, at("11"), at("12"), false},
		{"the version between the metadata and the status patch", []string{"10", "11", "12"}, false, at("10"), at("11"), false},
		{"someone else's status write after it", []string{"10", "11", "12"}, false, at("12"), at("13"), true},
		{"someone else's write between, as a number", []string{"10", "12"}, false, at("10"), at("11"), true},
		{"an older version than the writing pass started from", []string{"10", "11", "12"}, false, at("9"), at("10"), true},
		{"a finalizer change, though this manager wrote it", []string{"10", "11", "12"}, false, at("11"), at("12", "f"), true},
		{"the move block this manager set", []string{"10", "11", "12"}, false, at("10"), annotated("11"), false},
		{"the provider ID this manager wrote", []string{"10", "11", "12"}, false, at("10"), withProviderID("11"), false},
		{"someone else's annotation", []string{"10", "11", "12"}, false, at("12"), annotated("13"), true},
		{"the deletion, at a version this manager wrote", []string{"10", "11"}, false, at("10"), deleting("11"), true},
		{"the write a pass found the cache behind of", []string{"10", "11", "12"}, true, at("11"), at("12"), true},
		{"opaque versions this manager wrote", []string{"a", "b"}, false, at("a"), at("b"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Flow{written: &written{}}
			for _, v := range c.wrote[min(1, len(c.wrote)):] {
				f.written.wrote("u1", c.wrote[0], v)
			}
			if c.waiting && !f.written.stale(at(c.wrote[0])) {
				t.Fatal("the starting version is not stale")
			}
			if got := update(f, c.old, c.new); got != c.wake {
				t.Errorf("wake = %v, want %v", got, c.wake)
			}
		})
	}
}
