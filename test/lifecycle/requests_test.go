package lifecycle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// writes counts one pass's writes to the object it reconciles.
type writes struct {
	status, object int
}

// countingPass runs one pass of obj whose writes go through funcs (nil:
// none) and counts its patches of obj and of obj's status.
func (e *env) countingPass(obj client.Object, before func(subResource string)) (writes, error) {
	e.t.Helper()
	var w writes
	mine := func(o client.Object) bool {
		return o.GetNamespace() == obj.GetNamespace() && o.GetName() == obj.GetName() && kindOf(o) == kindOf(obj)
	}
	err := e.passFailing(obj, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if mine(o) {
				w.object++
			}
			return c.Patch(ctx, o, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if mine(o) && sub == "status" {
				w.status++
				if before != nil {
					before(sub)
				}
			}
			return c.Status().Patch(ctx, o, p, opts...)
		},
	})
	return w, err
}

// The Reconcile Lifecycle and DESIGN: one deferred status patch per pass.
// A pass writes its status, conditions and the other fields together, with
// one patch, and its metadata or spec changes with at most one more.
func TestOneStatusPatchPerPass(t *testing.T) {
	t.Parallel()

	t.Run("machine_bring_up", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		check := func(step string) {
			t.Helper()
			n, err := e.countingPass(mw.TM, nil)
			if err != nil {
				t.Fatalf("%s: pass failed: %v", step, err)
			}
			if n.status > 1 || n.object > 1 {
				t.Errorf("%s: the pass patched the status %d times and the object %d times, want at most once each", step, n.status, n.object)
			}
		}
		check("finalizer")
		check("apply Job created")
		job := e.wantJob(mw.TM, infrav1.OperationApply)
		e.advance(30 * time.Second)
		e.writeState(mw.TM, stateOf(1, machineOutputs("running", true), ""))
		e.finishJob(job, succeeded, nil)
		check("apply finished")
		e.advance(time.Minute)
		check("settled")
		e.wantCondition(mw.TM, infrav1.ReadyCondition, metav1.ConditionTrue, infrav1.ReadyReason)
	})

	// The status patch carries the version the pass read: a write by
	// someone else in between makes it conflict, and the pass then merges
	// its conditions onto the latest object instead of overwriting it.
	t.Run("concurrent_write_is_kept", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		mw := e.newMachine(w, "prod-md-0", nil)
		e.mustPass(mw.TM) // finalizer
		raced := false
		n, err := e.countingPass(mw.TM, func(string) {
			if raced {
				return
			}
			raced = true
			cur := &infrav1.TerraformMachine{}
			if err := k8s.Get(e.ctx, client.ObjectKeyFromObject(mw.TM), cur); err != nil {
				t.Fatal(err)
			}
			cur.Status.Conditions = append(cur.Status.Conditions, metav1.Condition{
				Type: "ExampleOther", Status: metav1.ConditionTrue, Reason: "SetElsewhere", LastTransitionTime: metav1.Now(),
			})
			if err := k8s.Status().Update(e.ctx, cur); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatalf("pass failed: %v", err)
		}
		if !raced || n.status < 2 {
			t.Fatalf("the race did not happen (status patches %d)", n.status)
		}
		if c := conditionOf(mw.TM, "ExampleOther"); c == nil {
			t.Errorf("the condition another writer set was overwritten: %v", mw.TM.Status.Conditions)
		}
		e.wantJob(mw.TM, infrav1.OperationApply)
		if c := conditionOf(mw.TM, infrav1.ReadyCondition); c == nil {
			t.Errorf("the pass's own conditions were not written: %v", mw.TM.Status.Conditions)
		}
	})
}
