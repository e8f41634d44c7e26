package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// clusterctlCRDLabel is the label clusterctl init puts on every component
// of a provider it installs; clusterctl move discovers the kinds of the
// CRDs that carry it.
const clusterctlCRDLabel = "clusterctl.cluster.x-k8s.io"

// crdsLabelledForClusterctl checks the API server's CRDs carry the labels
// clusterctl move discovers its kinds by (TestMain installs them labelled,
// labelledForClusterctl): every CRD clusterctl's label, the
// TerraformClusterIdentity CRD the move-hierarchy label.
func crdsLabelledForClusterctl(t *testing.T) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := k8s.List(context.Background(), &crds); err != nil {
		t.Fatal(err)
	}
	identity := false
	for _, crd := range crds.Items {
		if _, ok := crd.Labels[clusterctlCRDLabel]; !ok {
			t.Fatalf("CRD %s lacks the %s label clusterctl init puts on it", crd.Name, clusterctlCRDLabel)
		}
		if crd.Spec.Names.Kind == "TerraformClusterIdentity" {
			_, identity = crd.Labels[infrav1.MoveHierarchyLabel]
		}
	}
	if !identity {
		t.Fatalf("the TerraformClusterIdentity CRD lacks the %s label", infrav1.MoveHierarchyLabel)
	}
}

// TestClusterctlMove runs a cluster's objects through clusterctl's own move
// library (the object graph, its serialisation and its restore with the
// owner chain rebuilt), the way clusterctl move carries them, and checks
// the book's promises (Lifecycle Walkthroughs, clusterctl move; Terraform
// State; Identities and Credentials, Move considerations):
//
//   - what moves: the Terraform* objects and their identity, the state
//     Secrets, the backups, the durable inputs and the credential mirror;
//     not the identity's source Secret, not the Leases, not status;
//   - what the target does with it: every latch (provisioned, providerID,
//     control_plane_initialized, the endpoint, captf.io/applied) rebuilt
//     from the state and the Secrets, with no Job.
//
// The move is clusterctl move's two halves on one API server: the source's
// objects written out by the mover (ToDirectory, which pauses the Cluster
// as move does), deleted as move deletes them (delete-for-move, then their
// finalizers stripped) with the Jobs and Leases a target would not have,
// and created again by the mover (FromDirectory) with new UIDs and no
// status. test/e2e's move scenario (make move) runs a real move between
// two environments.
//
// It does not run in parallel: move lists a cluster-scoped kind
// cluster-wide, so it would copy the identities of the other tests too,
// which they delete when they end.
func TestClusterctlMove(t *testing.T) {
	crdsLabelledForClusterctl(t)
	e := newEnv(t)
	ctx := e.ctx

	// The source: the cluster applied, then re-applied once Cluster API
	// reported the control plane initialized; one machine applied.
	w := e.newCluster("mv", nil)
	e.bringUp(w.TC, stateOf(1, clusterOutputs(), ""))
	e.updateStatus(w.Cluster, func() {
		w.Cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
		w.Cluster.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		w.Cluster.Status.Conditions = []metav1.Condition{{Type: clusterv1.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue, Reason: clusterv1.ClusterControlPlaneInitializedReason, LastTransitionTime: metav1.Now()}}
	})
	// Re-applied until its inputs settle (the endpoint latched from the
	// first apply's outputs, then control_plane_initialized).
	serial := uint64(1)
	for e.mustPass(w.TC); len(e.activeJobs(w.TC)) > 0; e.mustPass(w.TC) {
		if serial++; serial > 4 {
			t.Fatalf("the cluster keeps re-applying: %v", jobNames(e.jobsOf(w.TC)))
		}
		job := e.wantJob(w.TC, infrav1.OperationApply)
		e.advance(30 * time.Second)
		e.writeState(w.TC, stateOf(serial, clusterOutputs(), ""))
		e.finishJob(job, succeeded, nil)
	}
	if on, _ := inputs.LastControlPlaneInitialized(e.durable(w.TC).Data[contract.TFVarsFile]); !on {
		t.Fatal("the source's cluster inputs do not have control_plane_initialized true")
	}
	mw := e.newMachine(w, "mv-0", nil)
	// Cluster API's machine controller makes the Cluster own the Machine:
	// that is how move finds the Machine and what it owns.
	e.update(mw.Machine, func() {
		mw.Machine.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
			Name: w.Cluster.Name, UID: w.Cluster.UID}}
	})
	e.bringUp(mw.TM, stateOf(1, machineOutputs("running", true), ""))
	e.updateStatus(mw.Machine, func() {
		mw.Machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: "mv-0"}
	})
	e.mustPass(mw.TM)
	for _, o := range []client.Object{w.TC, mw.TM} {
		if !provisioned(o) {
			t.Fatalf("%s %s is not provisioned on the source: %v", kindOf(o), o.GetName(), status(o).Conditions)
		}
	}
	providerID := mw.TM.Spec.ProviderID
	endpoint := w.TC.Spec.ControlPlaneEndpoint
	if providerID == "" || endpoint.Host == "" {
		t.Fatalf("source: providerID %q, endpoint %+v: want both latched", providerID, endpoint)
	}
	// clusterctl move pauses the Cluster while a Job runs and waits for
	// the block: an apply of a variables change, finished while paused,
	// is booked by the paused pass, which clears the block. Its state
	// must leave with that apply's inputs hash recorded.
	e.update(w.TC, func() { w.TC.Spec.Variables = largeVariables() })
	e.mustPass(w.TC)
	held := e.wantJob(w.TC, infrav1.OperationApply)
	e.update(w.Cluster, func() { w.Cluster.Spec.Paused = ptr.To(true) })
	e.advance(30 * time.Second)
	serial++
	// The backend rewrites the state's data; the annotations stay.
	e.writeState(w.TC, stateOf(serial, clusterOutputs(), e.stateSecret(w.TC).Annotations[infrav1.InputsHashAnnotation]))
	e.finishJob(held, succeeded, nil)
	e.mustPass(w.TC)
	if _, blocked := w.TC.Annotations[infrav1.BlockMoveAnnotation]; blocked {
		t.Fatal("the paused pass did not clear the move block once the Job finished")
	}
	if got := e.stateSecret(w.TC).Annotations[infrav1.InputsHashAnnotation]; got != held.Annotations[infrav1.InputsHashAnnotation] {
		t.Errorf("the state leaves with inputs hash %q, want the held apply's %q", got, held.Annotations[infrav1.InputsHashAnnotation])
	}
	// move itself starts from an unpaused Cluster and pauses it.
	e.update(w.Cluster, func() { w.Cluster.Spec.Paused = nil })
	jobsBefore := len(e.jobsOf(w.TC)) + len(e.jobsOf(mw.TM))
	oldUID := w.TC.UID

	// Written out by clusterctl's mover, as move reads the source.
	dir := t.TempDir()
	c, err := clusterctl.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	from := clusterctl.Kubeconfig{Path: kubeconfig}
	if err := c.Move(ctx, clusterctl.MoveOptions{FromKubeconfig: from, Namespace: e.ns, ToDirectory: dir}); err != nil {
		t.Fatalf("clusterctl move to a directory: %v", err)
	}
	moved := readMoved(t, dir)

	// What moves.
	want := []string{
		"Cluster/mv", "Machine/mv-0", "TerraformCluster/mv", "TerraformMachine/mv-0",
		"TerraformClusterIdentity/" + e.identity,
		"Secret/" + state.SecretName(e.suffixOf(w.TC)), "Secret/" + state.SecretName(e.suffixOf(mw.TM)),
		"Secret/captf-inputs-c-mv", "Secret/captf-inputs-m-mv-0",
		"Secret/" + identity.MirrorName(e.identity),
	}
	backups := e.secretsWithPrefix("captf-state-backup-")
	if len(backups) < 3 {
		t.Fatalf("%d state backups on the source, want one per state serial read (3)", len(backups))
	}
	for _, b := range backups {
		want = append(want, "Secret/"+b.Name)
	}
	for _, k := range want {
		if _, ok := moved[k]; !ok {
			t.Errorf("clusterctl move does not carry %s (it carries %v)", k, keys(moved))
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// What does not: the identity's source Secret (copied by hand), the
	// per-run Secrets (none once every Job is booked), anything else.
	for k := range moved {
		if strings.HasPrefix(k, "Secret/") && !slices.Contains(want, k) {
			t.Errorf("clusterctl move carries %s, which the book does not move", k)
		}
	}

	// Deleted from the source as move deletes: delete-for-move, delete,
	// finalizers stripped. A target has no Jobs, pods or Leases of the
	// moved objects: those go too.
	for k, o := range moved {
		if o.GetNamespace() == "" {
			continue // cluster-scoped: move creates it on the target if missing, never deletes it
		}
		if strings.HasPrefix(k, "TerraformMachine/") || strings.HasPrefix(k, "TerraformCluster/") || strings.HasPrefix(k, "Cluster/") || strings.HasPrefix(k, "Machine/") || strings.HasPrefix(k, "Secret/") {
			deleteForMove(t, o)
		}
	}
	for _, list := range []client.ObjectList{&batchv1.JobList{}, &corev1.PodList{}, &coordinationv1.LeaseList{}} {
		if err := k8s.List(ctx, list, client.InNamespace(e.ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			if err := k8s.Delete(ctx, o.(client.Object), client.GracePeriodSeconds(0), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Identities of other tests' namespaces were discovered too (a
	// cluster-scoped kind is listed cluster-wide, as move does): they stay
	// out of this test's restore.
	for k := range moved {
		if strings.HasPrefix(k, "TerraformClusterIdentity/") && k != "TerraformClusterIdentity/"+e.identity {
			if err := os.Remove(filepath.Join(dir, "TerraformClusterIdentity__"+strings.TrimPrefix(k, "TerraformClusterIdentity/")+".yaml")); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Created again by clusterctl's mover, as move creates on the target.
	if err := c.Move(ctx, clusterctl.MoveOptions{ToKubeconfig: from, FromDirectory: dir}); err != nil {
		t.Fatalf("clusterctl move from a directory: %v", err)
	}
	e.refresh(w.Cluster)
	e.refresh(w.TC)
	e.refresh(mw.Machine)
	e.refresh(mw.TM)
	if w.TC.UID == oldUID {
		t.Fatal("the TerraformCluster kept its UID: it was not created again")
	}
	if ptr.Deref(w.Cluster.Spec.Paused, false) {
		t.Fatal("the Cluster is still paused after the move")
	}
	// Not status: nothing in it is load-bearing.
	for _, o := range []client.Object{w.TC, mw.TM} {
		if s := status(o); s.Initialization != nil || len(s.Conditions) > 0 || s.LastRun != nil {
			t.Fatalf("%s %s arrived with status %+v, want none", kindOf(o), o.GetName(), s)
		}
	}
	// The target's Cluster API has not caught up yet: the Cluster's status
	// is empty, so only the durable inputs remember control_plane_initialized.
	// With no status, the last drift check is unknown: each object runs
	// one (a plan, no change) before anything else is due.
	for _, o := range []client.Object{w.TC, mw.TM} {
		e.mustPass(o)
		if active := e.activeJobs(o); len(active) > 0 {
			drift := e.wantJob(o, infrav1.OperationDrift)
			e.advance(30 * time.Second)
			e.finishJob(drift, succeeded, nil)
		}
		e.mustPass(o)
		e.mustPass(o)
		e.wantNoJob(o)
	}

	// Every latch rebuilt from the state and the Secrets, with no Job.
	for _, o := range []client.Object{w.TC, mw.TM} {
		for _, j := range e.jobsOf(o) {
			if op := j.Labels[infrav1.OpLabel]; op != string(infrav1.OperationDrift) {
				t.Errorf("%s %s ran a %s Job %s on the target, want none", kindOf(o), o.GetName(), op, j.Name)
			}
		}
	}
	for _, o := range []client.Object{w.TC, mw.TM} {
		if !provisioned(o) {
			t.Errorf("%s %s is not provisioned on the target: %v", kindOf(o), o.GetName(), status(o).Conditions)
		}
		e.wantCondition(o, infrav1.StateReadableCondition, metav1.ConditionTrue, infrav1.StateReadReason)
		if d := e.durable(o); d == nil || d.Annotations[infrav1.AppliedAnnotation] != "true" {
			t.Errorf("%s %s: the durable inputs lost %s", kindOf(o), o.GetName(), infrav1.AppliedAnnotation)
		}
		if s := status(o); s.StateSecretSuffix != e.suffixOf(o) {
			t.Errorf("%s %s: status.stateSecretSuffix %q, want %q", kindOf(o), o.GetName(), s.StateSecretSuffix, e.suffixOf(o))
		}
	}
	if mw.TM.Spec.ProviderID != providerID {
		t.Errorf("providerID %q on the target, want %q", mw.TM.Spec.ProviderID, providerID)
	}
	if w.TC.Spec.ControlPlaneEndpoint != endpoint {
		t.Errorf("endpoint %+v on the target, want %+v", w.TC.Spec.ControlPlaneEndpoint, endpoint)
	}
	if on, _ := inputs.LastControlPlaneInitialized(e.durable(w.TC).Data[contract.TFVarsFile]); !on {
		t.Error("the target's cluster inputs lost control_plane_initialized")
	}
	// The state arrived owned by the new objects, so it goes with them.
	for _, o := range []client.Object{w.TC, mw.TM} {
		s := e.stateSecret(o)
		if s == nil || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != o.GetUID() {
			t.Errorf("%s %s: state Secret %v not owned by the moved object", kindOf(o), o.GetName(), s)
		}
	}
	if want := int(serial) + 1; jobsBefore != want { // the cluster's applies and the machine's
		t.Errorf("%d Jobs on the source, want %d", jobsBefore, want)
	}
}

// readMoved reads the objects clusterctl's mover wrote to dir, keyed
// "<Kind>/<name>".
func readMoved(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, de := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("%s: %v", de.Name(), err)
		}
		out[u.GetKind()+"/"+u.GetName()] = u
	}
	return out
}

// deleteForMove deletes o from the source as clusterctl move does: the
// delete-for-move annotation first, then the delete, then its finalizers
// removed.
func deleteForMove(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
		t.Fatalf("read %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	patch := []byte(`[{"op":"add","path":"/metadata/annotations","value":{"` + infrav1.DeleteForMoveAnnotation + `":""}}]`)
	if err := k8s.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("annotate %s %s for move: %v", o.GetKind(), o.GetName(), err)
	}
	if err := k8s.Delete(ctx, live); err != nil {
		t.Fatalf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	if len(live.GetFinalizers()) > 0 {
		if err := k8s.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`))); err != nil {
			t.Fatalf("strip the finalizers of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
