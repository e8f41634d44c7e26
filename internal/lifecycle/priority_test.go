package lifecycle

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestFinishedJobsFirst: the update in which a Job finishes wakes its owner
// ahead of everything queued before it (the pass that reads the result
// sets Ready); any other Job update wakes it at the ordinary priority.
func TestFinishedJobsFirst(t *testing.T) {
	s := runtime.NewScheme()
	if err := infrav1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvk := infrav1.GroupVersion.WithKind(string(infrav1.KindTerraformMachine))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	h := FinishedJobsFirst(handler.EnqueueRequestForOwner(s, mapper, &infrav1.TerraformMachine{}, handler.OnlyControllerOwner()))

	job := func(owner string, conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-" + owner, ResourceVersion: "1", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner, UID: types.UID("u-" + owner), Controller: ptr.To(true),
			}}},
			Status: batchv1.JobStatus{Conditions: conds},
		}
	}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	failed := batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}
	update := func(q priorityqueue.PriorityQueue[reconcile.Request], old, new *batchv1.Job) {
		new.ResourceVersion = "2"
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: new}, q)
	}

	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	// Queued first: a running Job's update, a finished Job seen again.
	update(q, job("running"), job("running"))
	update(q, job("again", complete), job("again", complete))
	// Then two Jobs finish.
	update(q, job("succeeded"), job("succeeded", complete))
	update(q, job("failed"), job("failed", failed))

	want := []struct {
		name     string
		priority int
	}{{"succeeded", JobFinishedPriority}, {"failed", JobFinishedPriority}, {"running", 0}, {"again", 0}}
	for _, w := range want {
		item, priority, _ := q.GetWithPriority()
		if item.Name != w.name || priority != w.priority {
			t.Fatalf("next %s at priority %d, want %s at %d", item.Name, priority, w.name, w.priority)
		}
		q.Done(item)
	}
}

// TestOrdinaryRequeues: a pass's requeue goes back at priority 0 whatever
// the priority that woke it.
func TestOrdinaryRequeues(t *testing.T) {
	r := OrdinaryRequeues(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: 1}, nil
	})
	res, _ := r(context.Background(), reconcile.Request{})
	if res.Priority == nil || *res.Priority != 0 || res.RequeueAfter != 1 {
		t.Fatalf("result %+v, want priority 0 and the requeue kept", res)
	}
}
