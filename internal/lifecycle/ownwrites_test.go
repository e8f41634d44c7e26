package lifecycle

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestOwnSecretAndJobWritesWakeNothing checks the Secret and Job watches'
// predicate: the event of a write the flow made itself (a create, a
// patch, a deletion) wakes no pass, while anyone else's write to the same
// object, and a write at a version the flow did not produce, does.
func TestOwnSecretAndJobWritesWakeNothing(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	own := &ownWrites{}
	c := recordingClient{Client: fake.NewClientBuilder().WithScheme(s).Build(), own: own}
	pred := own.predicate()
	created := func(o client.Object) bool { return pred.Create(event.CreateEvent{Object: o}) }
	updated := func(o client.Object) bool { return pred.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: o}) }
	deleted := func(o client.Object) bool { return pred.Delete(event.DeleteEvent{Object: o}) }

	run := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "captf-run-x"}}
	if err := c.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	createdAt := run.DeepCopy()
	base := run.DeepCopy()
	run.Labels = map[string]string{"handed": "true"}
	if err := c.Patch(ctx, run, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if created(createdAt) {
		t.Error("the flow's own create woke a pass")
	}
	if updated(run) {
		t.Error("the flow's own patch woke a pass")
	}
	if !updated(run) {
		t.Error("the same version seen again (a resync) did not wake a pass")
	}
	theirs := run.DeepCopy()
	theirs.ResourceVersion = "999"
	if !updated(theirs) {
		t.Error("someone else's write did not wake a pass")
	}
	if err := c.Delete(ctx, run); err != nil {
		t.Fatal(err)
	}
	if deleted(run) {
		t.Error("the flow's own deletion woke a pass")
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "captf-m-x-apply-a1-0"}}
	if !deleted(job) {
		t.Error("a deletion the flow did not make did not wake a pass")
	}
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if created(job) {
		t.Error("the flow's own Job woke a pass")
	}
	finished := job.DeepCopy()
	finished.ResourceVersion = "1000"
	if !updated(finished) {
		t.Error("the Job controller's update did not wake a pass")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if !created(cm) {
		t.Error("a kind the flow does not remember was dropped")
	}
}
