package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// faultNamespaces is how many namespaces fault-000, fault-001, ... the
// shared manager leaves to the fault scenarios' own managers: the sample's
// chains use 0 to 2, the other scenarios 40 to 52, the matrix (make chaos)
// 62 and 63 for its recordings and 64 and up for its points; a point's
// second bring-up takes one of those no scenario uses (matrixSpares).
const faultNamespaces = 128

func faultNamespace(i int) string { return fmt.Sprintf("fault-%03d", i) }

// excludedNamespaces are the namespaces the shared manager does not watch.
func excludedNamespaces() []string {
	out := append([]string{restartNamespace}, shardNamespaces...)
	for i := range faultNamespaces {
		out = append(out, faultNamespace(i))
	}
	return out
}

// faultBringUp is a bring-up in the shape of the reference one (a
// TerraformCluster, control-plane and worker TerraformMachines with their
// Machines and Nodes, the Cluster initialized by Cluster API), in a
// namespace of its own whose only manager is the scenario's.
type faultBringUp struct {
	w            *world
	ns, name     string
	cps, workers int
	machines     []string
	timeline     *framework.Timeline
	// hold, when set, holds every plan of the object holdOwner and
	// holdName name (the no-op modules' hold_endpoint) until the scenario
	// releases it.
	hold                *framework.Hold
	holdOwner, holdName string
	// tuneMachine, when set, changes each TerraformMachine before it is
	// created.
	tuneMachine func(*infrav1.TerraformMachine)
	// faults is the API connection of the manager startFaultScenario runs.
	faults        *framework.Faults
	managerCancel context.CancelFunc
	managerDone   chan error
}

// names are the scenario's object names, longest first, for write sites.
func (b *faultBringUp) names() []string {
	out := append([]string{b.name}, b.machines...)
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return append(out, b.ns)
}

func newFaultBringUp(t *testing.T, i, cps, workers int) *faultBringUp {
	ns := faultNamespace(i)
	b := &faultBringUp{w: start(t, ns), ns: ns, name: "f", cps: cps, workers: workers}
	for i := range cps {
		b.machines = append(b.machines, fmt.Sprintf("%s-cp-%d", b.name, i))
	}
	for i := range workers {
		b.machines = append(b.machines, fmt.Sprintf("%s-worker-%d", b.name, i))
	}
	return b
}

// run starts a manager scoped to the scenario's namespace, its API
// connection wrapped by wrap (nil: as is); stop stops it.
func (b *faultBringUp) run(ctx context.Context, wrap func(*framework.Faults, context.CancelFunc)) *framework.Faults {
	r := b.replica(ctx, wrap, nil)
	b.managerCancel, b.managerDone = r.cancel, r.done
	return r.faults
}

// replica is one manager of a scenario: its API connection's faults, and
// how to stop it and wait for it.
type replica struct {
	faults *framework.Faults
	cancel context.CancelFunc
	done   chan error
}

// replica starts a manager scoped to the scenario's namespace, its API
// connection wrapped by wrap and its options changed by tune (each may be
// nil).
func (b *faultBringUp) replica(ctx context.Context, wrap func(*framework.Faults, context.CancelFunc), tune func(*setup.Options)) replica {
	mctx, cancel := context.WithCancel(ctx)
	f := &framework.Faults{Names: b.names()}
	if wrap != nil {
		wrap(f, cancel)
	}
	o := managerOptions(b.w.images.Runner)
	o.Namespace = b.ns
	o.WebhookPort = 0 // the shared manager serves the webhooks
	if tune != nil {
		tune(&o)
	}
	r := replica{faults: f, cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- framework.RunObservedManager(mctx, b.w.e, o, framework.Observe{Wrap: f.Wrap})
	}()
	return r
}

// startFaultScenario starts a fault scenario: a bring-up of one control-plane
// machine in namespace fault-<i>, its manager running and its objects
// created, within 15 minutes; the manager is stopped when the test ends.
func startFaultScenario(t *testing.T, i int) (*faultBringUp, context.Context) {
	b := newFaultBringUp(t, i, 1, 0)
	ctx := faultContext(t)
	b.start(ctx)
	return b, ctx
}

// startHeldFaultScenario is startFaultScenario with the runs of one of its
// objects held (faultBringUp.holdRuns).
func startHeldFaultScenario(t *testing.T, i int, owner string) (*faultBringUp, context.Context) {
	b := newFaultBringUp(t, i, 1, 0)
	b.holdRuns(owner)
	ctx := faultContext(t)
	b.start(ctx)
	return b, ctx
}

// faultContext is a scenario's context: 15 minutes.
func faultContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// holdRuns holds the runs of one of the scenario's objects (hold): owner
// is "TerraformCluster" or "TerraformMachine" (the first machine); its
// first run waits, its state lock held, until the scenario releases the
// hold. Call before start.
func (b *faultBringUp) holdRuns(owner string) {
	name := b.name
	if owner == "TerraformMachine" {
		name = b.machines[0]
	}
	b.holdObject(owner, name)
}

// holdObject holds the runs of the scenario's object owner/name, as
// holdRuns does. Call before apply.
func (b *faultBringUp) holdObject(owner, name string) {
	h, err := framework.StartHold(b.w.e.APIServerHost)
	if err != nil {
		b.w.t.Fatal(err)
	}
	b.w.t.Cleanup(h.Close)
	b.hold, b.holdOwner, b.holdName = h, owner, name
}

// start runs the scenario's manager (stopped when the test ends) and
// creates the bring-up's objects.
func (b *faultBringUp) start(ctx context.Context) {
	b.faults = b.run(ctx, nil)
	b.w.t.Cleanup(b.stop)
	b.apply(ctx)
}

// stop stops the scenario's manager and waits for it.
func (b *faultBringUp) stop() {
	if b.managerCancel == nil {
		return
	}
	b.managerCancel()
	<-b.managerDone
	b.managerCancel = nil
}

// apply starts the timeline and creates the bring-up's objects.
func (b *faultBringUp) apply(ctx context.Context) {
	t, w := b.w.t, b.w
	tl, err := framework.StartTimeline(ctx, w.e.Config, scheme(), b.ns)
	if err != nil {
		t.Fatal(err)
	}
	b.timeline = tl
	w.identityFor(ctx, b.ns)
	kubeconfig, err := os.ReadFile(w.e.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	w.create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: b.name + "-kubeconfig", Namespace: b.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: b.name}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": kubeconfig},
	})
	cluster, tc := w.clusterObjects(b.ns, b.name, nil)
	cluster.Spec.ClusterNetwork = clusterv1.ClusterNetwork{
		APIServerPort: 6443,
		Pods:          clusterv1.NetworkRanges{CIDRBlocks: []string{"192.168.0.0/16"}},
		Services:      clusterv1.NetworkRanges{CIDRBlocks: []string{"10.128.0.0/12"}},
	}
	objs := []client.Object{cluster, tc}
	var holdVars map[string]apiextensionsv1.JSON
	if b.hold != nil {
		holdVars = map[string]apiextensionsv1.JSON{"hold_endpoint": {Raw: []byte(strconv.Quote(b.hold.URL))}}
	}
	if b.holdOwner == "TerraformCluster" {
		tc.Spec.Variables = holdVars
	}
	for _, m := range b.machines {
		labels := map[string]string{clusterv1.ClusterNameLabel: b.name}
		if strings.Contains(m, "-cp-") {
			labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		var vars map[string]apiextensionsv1.JSON
		if b.holdOwner == "TerraformMachine" && m == b.holdName {
			vars = holdVars
		}
		tm := &infrav1.TerraformMachine{
			ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: b.ns, Labels: labels},
			Spec:       infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: w.images.Machine}, Variables: vars}},
		}
		if b.tuneMachine != nil {
			b.tuneMachine(tm)
		}
		objs = append(objs,
			&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: m + "-bootstrap", Namespace: b.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: b.name}},
				Type:       clusterv1.ClusterSecretType,
				Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
			},
			tm,
			&clusterv1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: b.ns, Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: b.name, Version: "v1.36.3",
					Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(m + "-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: m},
				},
			},
			// The Node (cluster-scoped, so named after the namespace too)
			// with the provider ID the no-op machine module reports.
			&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: b.ns + "-" + m},
				Spec:       corev1.NodeSpec{ProviderID: "noop:///" + b.ns + "/" + m},
			},
		)
	}
	w.create(ctx, objs...)
	t.Cleanup(func() {
		for _, m := range b.machines {
			_ = w.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: b.ns + "-" + m}})
		}
	})
}

// machinesUp reports whether every machine of the bring-up is Ready, passes
// more (a scenario's further checks) and has its Machine's nodeRef.
func (b *faultBringUp) machinesUp(ctx context.Context, more func(*infrav1.TerraformMachine) bool) (bool, string) {
	for _, m := range b.machines {
		tm := &infrav1.TerraformMachine{}
		if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: m}, tm); err != nil {
			return false, err.Error()
		}
		if ok, why := ready(tm); !ok || !more(tm) {
			return false, "TerraformMachine " + m + ": " + why
		}
		cm := &clusterv1.Machine{}
		if err := b.w.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: m}, cm); err != nil {
			return false, err.Error()
		}
		if !cm.Status.NodeRef.IsDefined() {
			return false, "Machine " + m + " has no nodeRef yet"
		}
	}
	return true, ""
}

// converged reports whether the bring-up reached its end: every machine
// Ready with its nodeRef, the Cluster initialized, the cluster re-applied
// with control_plane_initialized true and Ready with that Job reported.
func (b *faultBringUp) converged(ctx context.Context) (bool, string) {
	c := b.w.c
	if ok, why := b.machinesUp(ctx, func(*infrav1.TerraformMachine) bool { return true }); !ok {
		return false, why
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.name}, cluster); err != nil {
		return false, err.Error()
	}
	if !conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition) {
		return false, "Cluster API has not marked the control plane initialized"
	}
	durable := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: "captf-inputs-c-" + b.name}, durable); err != nil {
		return false, err.Error()
	}
	if flipped, _ := inputs.LastControlPlaneInitialized(durable.Data[contract.TFVarsFile]); !flipped {
		return false, "the cluster's inputs do not have control_plane_initialized true yet"
	}
	tc := &infrav1.TerraformCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.name}, tc); err != nil {
		return false, err.Error()
	}
	// The state holds the current inputs: their apply is done, not only
	// decided.
	want, err := inputs.HashFiles(contract.RoleCluster, tc.Spec.Source.Image, durable.Data[contract.MainFile], durable.Data[contract.TFVarsFile])
	if err != nil {
		return false, err.Error()
	}
	if st, err := state.Read(ctx, c, b.ns, tc.Status.StateSecretSuffix, state.DefaultLimits); err != nil || st.InputsHash != want {
		return false, "the cluster's state does not hold its current inputs yet"
	}
	ok, why := ready(tc)
	if ok && (tc.Status.ActiveJob != nil || tc.Status.LastRun == nil || tc.Status.LastRun.Job != lastJobOf(b.timeline, "TerraformCluster/"+b.name)) {
		return false, "the cluster's re-apply has not been reported"
	}
	// A pass marks the Jobs it booked right after its status patch: the
	// end is reached once the mark is written too.
	var jl batchv1.JobList
	if err := c.List(ctx, &jl, client.InNamespace(b.ns)); err != nil {
		return false, err.Error()
	}
	for _, j := range jl.Items {
		if j.Annotations[infrav1.BookkeptAnnotation] != "true" {
			return false, "Job " + j.Name + " is not marked bookkept yet"
		}
	}
	return ok, "TerraformCluster: " + why
}

// waitConverged waits for converged, failing the test with a dump.
func (b *faultBringUp) waitConverged(ctx context.Context, timeout time.Duration) {
	b.w.eventually(ctx, timeout, "the bring-up in "+b.ns+" to converge", func() (bool, string) { return b.converged(ctx) })
}

// checkEndWith is checkEnd for a scenario that changes what the book
// predicts: ops gives an owner's Jobs ("TerraformMachine/f-cp-0": "apply,
// apply"; the others keep the bring-up's), and interrupted names the Jobs
// the scenario stopped from outside, which may not succeed, are not booked
// as successes, and whose name the next Job of the same inputs may reuse.
//
// No Job is ever deleted as stuck: the per-run Secret is written before its
// Job, so a manager that dies between the two leaves no Job that cannot
// start.
func (b *faultBringUp) checkEndWith(ctx context.Context, ops map[string]string, interrupted map[string]bool) {
	t, c := b.w.t, b.w.c
	want := map[string]string{"TerraformCluster/" + b.name: "apply,apply"}
	for _, m := range b.machines {
		want["TerraformMachine/"+m] = "apply"
	}
	for k, v := range ops {
		want[k] = v
	}
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == infrav1.StuckJobDeletedEvent {
			t.Errorf("a Job was deleted as stuck: %s", e.Note)
		}
	}
	wantCount := map[string]int{}
	for owner, v := range want {
		for _, op := range strings.Split(v, ",") {
			wantCount[owner+" "+op]++
		}
	}
	all := b.timeline.Jobs()
	gotCount, byName := map[string]int{}, map[string]int{}
	for _, j := range all {
		gotCount[j.Owner+" "+j.Op]++
		byName[j.Name]++
		if !j.Succeeded && !interrupted[j.Name] {
			t.Errorf("Job %s (%s of %s) did not succeed", j.Name, j.Op, j.Owner)
		}
	}
	for k, n := range wantCount {
		if gotCount[k] != n {
			t.Errorf("%s: %d Jobs, want %d (every Job: %v)", k, gotCount[k], n, gotCount)
		}
	}
	for k, n := range gotCount {
		if wantCount[k] == 0 {
			t.Errorf("%s: %d Jobs, want none", k, n)
		}
	}
	for name, n := range byName {
		if n > 1 && !interrupted[name] {
			t.Errorf("Job %s was created %d times", name, n)
		}
	}

	// Booked once: one JobSucceeded event per Job, every Job still there
	// marked bookkept.
	succeeded := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == infrav1.JobSucceededEvent && e.Related != nil {
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			succeeded[e.Related.Name] += n
		}
	}
	// Events are sent after the fact and a manager that dies may take
	// unsent ones with it (Kubernetes events are best effort): at most one
	// each. The booking itself is the bookkept mark and status.lastRun.
	for name := range byName {
		if interrupted[name] {
			continue
		}
		if succeeded[name] > 1 {
			t.Errorf("Job %s was booked %d times (JobSucceeded events), want once", name, succeeded[name])
		}
	}
	var jl batchv1.JobList
	if err := c.List(ctx, &jl, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	for _, j := range jl.Items {
		if j.Annotations[infrav1.BookkeptAnnotation] != "true" {
			t.Errorf("Job %s is not marked bookkept", j.Name)
		}
	}

	// Nothing left behind: no per-run Secret, no held run lease.
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if strings.HasPrefix(s.Name, jobs.RunSecretPrefix) {
			t.Errorf("per-run Secret %s is left behind", s.Name)
		}
	}
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(b.ns), client.MatchingLabels{infrav1.LeaseLabel: "run"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("run lease %s is still held by %s", l.Name, h)
		}
	}

	// State intact: readable, with the inputs hash of the last apply.
	owners := []infrav1.Workload{&infrav1.TerraformCluster{}}
	keys := []string{b.name}
	for _, m := range b.machines {
		owners = append(owners, &infrav1.TerraformMachine{})
		keys = append(keys, m)
	}
	for i, o := range owners {
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: keys[i]}, o); err != nil {
			t.Fatal(err)
		}
		ws := o.GetWorkspaceStatus()
		if ws.LastRun == nil || ws.LastRun.Job != lastJobOf(b.timeline, kindOf(o)+"/"+keys[i]) {
			t.Errorf("%s %s reports last run %+v, want its newest Job %s", kindOf(o), keys[i], ws.LastRun, lastJobOf(b.timeline, kindOf(o)+"/"+keys[i]))
		}
		st, err := state.Read(ctx, c, b.ns, ws.StateSecretSuffix, state.DefaultLimits)
		if err != nil {
			t.Errorf("the state of %s %s: %v", kindOf(o), keys[i], err)
			continue
		}
		if st.InputsHash == "" || st.Serial == 0 {
			t.Errorf("the state of %s %s has serial %d and inputs hash %q, want an applied state", kindOf(o), keys[i], st.Serial, st.InputsHash)
		}
	}
}

func kindOf(o infrav1.Workload) string { return string(o.GetWorkloadKind()) }
