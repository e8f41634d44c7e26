package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func find(objs []object, name string) object {
	for _, o := range objs {
		if o.w.GetName() == name {
			return o
		}
	}
	panic("no object " + name)
}

// TestPendingApproval checks what plan show and plan approve name (book:
// Plan Approval): under applyPolicy Manual the plan hash of status.plan,
// written to captf.io/approve-plan; for a blocked destructive plan the
// inputs hash the blocked Job carries, written to
// captf.io/approve-destructive-plan; nothing otherwise.
func TestPendingApproval(t *testing.T) {
	objs, js := bringUp()

	manual := pendingApproval(find(objs, "reviewed"), js)
	if manual == nil || manual.Annotation != infrav1.ApprovePlanAnnotation || manual.Hash != "p1:abc" || manual.Job != "reviewed-c-plan-a1" {
		t.Errorf("Manual plan: got %+v, want captf.io/approve-plan=p1:abc from Job reviewed-c-plan-a1", manual)
	}

	blocked := pendingApproval(find(objs, "guarded"), js)
	if blocked == nil || blocked.Annotation != infrav1.ApproveDestructivePlanAnnotation || blocked.Hash != "h1:blockedinputs" ||
		len(blocked.Resources) != 1 || blocked.Resources[0] != "terraform_data.substrate (replace)" {
		t.Errorf("blocked destructive plan: got %+v, want captf.io/approve-destructive-plan=h1:blockedinputs naming terraform_data.substrate (replace)", blocked)
	}

	// The blocked Job gone (pruned): the hash still comes from the
	// condition message the controller wrote.
	if a := pendingApproval(find(objs, "guarded"), nil); a == nil || a.Hash != "h1:blockedinputs" {
		t.Errorf("blocked destructive plan without its Job: got %+v, want the hash from the condition message", a)
	}

	// A drift check ran after the blocked apply (a blocked remediation
	// keeps drift checks running): the newest blocked apply Job still
	// gives the hash, not the drift Job.
	g := find(objs, "guarded")
	g.w.GetWorkspaceStatus().LastRun = &infrav1.LastRun{Job: "guarded-c-drift-a9", Operation: infrav1.OperationDrift}
	g.w.GetWorkspaceStatus().Conditions[1].Message = "blocked"
	if a := pendingApproval(g, js); a == nil || a.Hash != "h1:blockedinputs" || a.Job != "guarded-c-apply-a3" {
		t.Errorf("blocked plan after a drift check: got %+v, want the blocked Job's hash", a)
	}

	for _, name := range []string{"demo", "demo-md-fghij", "demo-pool"} {
		if a := pendingApproval(find(objs, name), js); a != nil {
			t.Errorf("%s waits for no approval, got %+v", name, a)
		}
	}

	// A plan that stopped waiting (applied) is not approvable even while
	// status.plan lags.
	r := find(objs, "reviewed").w.(*infrav1.TerraformCluster)
	r.Status.Conditions[1] = cond(infrav1.ApplyJobSucceededCondition, metav1.ConditionTrue, infrav1.ApplySucceededReason, "")
	if a := pendingApproval(find(objs, "reviewed"), js); a != nil {
		t.Errorf("an applied plan is still approvable: %+v", a)
	}
}

// TestAbandonable checks the book's conditions on
// captf.io/abandon-infrastructure: only a deleting object whose state is
// lost (StateReadable False/StateLost) may be abandoned.
func TestAbandonable(t *testing.T) {
	objs, _ := bringUp()
	o := find(objs, "demo-md-fghij")
	if why := abandonable(o); !strings.Contains(why, "not being deleted") {
		t.Errorf("a live object: %q, want a refusal naming that it is not being deleted", why)
	}
	o.w.SetDeletionTimestamp(ago(time.Minute))
	if why := abandonable(o); !strings.Contains(why, "state is not lost") {
		t.Errorf("a deleting object with its state: %q, want a refusal naming the state", why)
	}
	st := o.w.GetWorkspaceStatus()
	st.Conditions = append(st.Conditions, cond(infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLockedReason, ""))
	if why := abandonable(o); !strings.Contains(why, "StateLocked") {
		t.Errorf("a deleting object whose state is locked: %q, want a refusal naming StateLocked", why)
	}
	st.Conditions[len(st.Conditions)-1] = cond(infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason, "")
	if why := abandonable(o); why != "" {
		t.Errorf("a deleting object whose state is lost: %q, want it abandonable", why)
	}
}

// TestParseTarget checks KIND/NAME in kubectl's spellings.
func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"terraformcluster/a": "TerraformCluster", "TerraformCluster/a": "TerraformCluster", "tc/a": "TerraformCluster",
		"terraformclusters.infrastructure.cluster.x-k8s.io/a": "TerraformCluster",
		"tm/a": "TerraformMachine", "terraformmachines/a": "TerraformMachine", "tmp/a": "TerraformMachinePool",
	} {
		got, err := parseTarget(in)
		if err != nil || got.kind.Kind != want || got.name != "a" {
			t.Errorf("parseTarget(%q) = %v, %v; want %s/a", in, got, err, want)
		}
	}
	for _, in := range []string{"a", "tc/", "/a", "cluster/a", "tc/a/b"} {
		if _, err := parseTarget(in); err == nil {
			t.Errorf("parseTarget(%q) accepted", in)
		}
	}
}

// TestWaitingOnLostState checks that a lost state names the restore, and
// on a deleting object the abandon too (Terraform State; stuck destroy
// runbook).
func TestWaitingOnLostState(t *testing.T) {
	objs, _ := bringUp()
	o := find(objs, "demo")
	st := o.w.GetWorkspaceStatus()
	st.Conditions = append(st.Conditions, cond(infrav1.StateReadableCondition, metav1.ConditionFalse, infrav1.StateLostReason, ""))
	if w, h := waitingOn(o); !strings.Contains(w, "restore") || !strings.Contains(h, "kubectl captf restore terraformcluster/demo -n team-a") {
		t.Errorf("lost state: %q %q", w, h)
	}
	o.w.SetDeletionTimestamp(ago(time.Minute))
	if w, _ := waitingOn(o); !strings.Contains(w, "abandon") {
		t.Errorf("lost state while deleting: %q, want abandon named", w)
	}
}

// TestAbandonConfirmation: abandon goes ahead only when the object's name
// is typed back; an empty answer, no input and another name are refusals.
func TestAbandonConfirmation(t *testing.T) {
	for in, want := range map[string]bool{"demo\n": true, "  demo  \n": true, "demo": true, "\n": false, "": false, "dem\n": false, "demo-2\n": false} {
		if got, err := confirmed(strings.NewReader(in), "demo"); got != want || err != nil {
			t.Errorf("confirmed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
