package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/cli"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestReferenceBringUp is the book's reference bring-up (The Reconcile
// Lifecycle): one TerraformCluster with three control-plane and three worker
// TerraformMachines whose apply outputs give a definite health reading runs
// eight Jobs: one cluster apply, one apply per machine, and one no-change
// cluster re-apply once control_plane_initialized flips.
//
// Cluster API flips it itself. The workload cluster is the environment's own
// API server: a <cluster>-kubeconfig Secret points at it, and it holds a Node
// per machine carrying the provider ID the machine module reports, so Cluster
// API links each Machine's nodeRef and, the control plane being stand-alone
// Machines, sets the Cluster's ControlPlaneInitialized condition. The
// Machines are created directly with bootstrap Secrets the test writes: a
// KubeadmControlPlane would wait for real kubelets between replicas.
//
// The test also logs how fast the manager moves on once a Job finishes, and
// checks that once everything converged, reconciles woken by changes that
// decide nothing (the test touching every object, Cluster API updating its
// Machines as the Nodes age) make no API write.
//
// It does not run in parallel with the other scenarios: it counts every
// Job the process's manager metrics see, and its reaction times are the
// manager's own, not a share of a busy machine's.
func TestReferenceBringUp(t *testing.T) {
	const ns, name = "team-ref", "ref"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	timeline, err := framework.StartTimeline(ctx, w.e.Config, scheme(), ns)
	if err != nil {
		t.Fatal(err)
	}
	jobsBefore := jobsCounted(t)
	logFrom := len(managerLog.String())

	// Sentinel secret values (Security Model): the identity's credentials,
	// every machine's bootstrap data and a Secret-sourced module variable.
	const credential, bootstrap, variable = "sentinel-credential-7f3a0c", "sentinel-bootstrap-91c2d4", "sentinel-variable-5d0e6b"
	w.identityFor(ctx, ns)
	creds := &corev1.Secret{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: "captf-system", Name: w.identity}, creds); err != nil {
		t.Fatal(err)
	}
	creds.Data = map[string][]byte{"CLOUD_ACCESS_KEY_ID": []byte("id"), "CLOUD_SECRET_ACCESS_KEY": []byte(credential)}
	creds.StringData = nil
	if err := w.c.Update(ctx, creds); err != nil {
		t.Fatal(err)
	}
	w.create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-vars", Namespace: ns, Labels: map[string]string{infrav1.VariablesLabel: "true"}},
		Data:       map[string][]byte{"extra_tags": []byte(`{"owner":"` + variable + `"}`)},
	})
	// The workload cluster's kubeconfig, in Cluster API's format.
	kubeconfig, err := os.ReadFile(w.e.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	w.create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": kubeconfig},
	})

	var machines []string
	for i := range 3 {
		machines = append(machines, fmt.Sprintf("%s-cp-%d", name, i))
	}
	for i := range 3 {
		machines = append(machines, fmt.Sprintf("%s-worker-%d", name, i))
	}
	cluster, tc := w.clusterObjects(ns, name, func(s *infrav1.TerraformClusterSpec) {
		s.VariablesFrom = []infrav1.VariablesSource{{SecretRef: &infrav1.LocalObjectReference{Name: name + "-vars"}, Format: infrav1.VariablesFormatJSON}}
	})
	cluster.Spec.ClusterNetwork = clusterv1.ClusterNetwork{
		APIServerPort: 6443,
		Pods:          clusterv1.NetworkRanges{CIDRBlocks: []string{"192.168.0.0/16"}},
		Services:      clusterv1.NetworkRanges{CIDRBlocks: []string{"10.128.0.0/12"}},
	}
	objs := []client.Object{cluster, tc}
	for _, m := range machines {
		labels := map[string]string{clusterv1.ClusterNameLabel: name}
		if strings.Contains(m, "-cp-") {
			labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		objs = append(objs,
			// What a bootstrap provider would write.
			&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: m + "-bootstrap", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
				Type:       clusterv1.ClusterSecretType,
				Data:       map[string][]byte{"value": []byte("#cloud-config\n# " + bootstrap + "\n"), "format": []byte("cloud-config")},
			},
			&infrav1.TerraformMachine{
				ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: ns, Labels: labels},
				Spec:       infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: w.images.Machine}}},
			},
			&clusterv1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: ns, Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: name,
					Version:     "v1.36.3",
					Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(m + "-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: m},
				},
			},
			// The node the machine would register, with the provider ID
			// the no-op machine module reports.
			&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: m},
				Spec:       corev1.NodeSpec{ProviderID: "noop:///" + ns + "/" + m},
			},
		)
	}
	w.create(ctx, objs...)
	t.Cleanup(func() {
		for _, m := range machines {
			_ = w.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m}})
		}
	})

	// Converged: every machine Ready with its nodeRef linked, the Cluster
	// initialized by Cluster API, and the cluster re-applied with
	// control_plane_initialized true and Ready.
	w.eventually(ctx, 10*time.Minute, "the reference bring-up to converge", func() (bool, string) {
		for _, m := range machines {
			tm := &infrav1.TerraformMachine{}
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: m}, tm); err != nil {
				return false, err.Error()
			}
			if ok, why := ready(tm); !ok {
				return false, "TerraformMachine " + m + ": " + why
			}
			cm := &clusterv1.Machine{}
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: m}, cm); err != nil {
				return false, err.Error()
			}
			if !cm.Status.NodeRef.IsDefined() {
				return false, "Machine " + m + " has no nodeRef yet"
			}
		}
		cluster := &clusterv1.Cluster{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
			return false, err.Error()
		}
		if !conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition) {
			return false, "Cluster API has not marked the control plane initialized"
		}
		tc := &infrav1.TerraformCluster{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tc); err != nil {
			return false, err.Error()
		}
		durable := &corev1.Secret{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "captf-inputs-c-" + name}, durable); err != nil {
			return false, err.Error()
		}
		if flipped, _ := inputs.LastControlPlaneInitialized(durable.Data[contract.TFVarsFile]); !flipped {
			return false, "the cluster's inputs do not have control_plane_initialized true yet"
		}
		ok, why := ready(tc)
		// The durable inputs are written before the re-apply's Job is
		// created: until that Job exists the cluster's last run is still
		// its first apply.
		if ok && countJobsOf(timeline, "TerraformCluster/"+name) < 2 {
			return false, "the cluster's re-apply with control_plane_initialized has not been created yet"
		}
		if ok && (tc.Status.ActiveJob != nil || tc.Status.LastRun == nil || tc.Status.LastRun.Job != lastJobOf(timeline, "TerraformCluster/"+name)) {
			return false, "the cluster's re-apply has not been reported"
		}
		return ok, "TerraformCluster: " + why
	})

	// Anything still to come would be decided by the next passes: touch
	// every object twice and let each be reconciled twice more.
	watch := []framework.Object{w.obj("TerraformCluster", name)}
	touchAll := func() []client.Object {
		touch := []client.Object{
			&infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
			&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		}
		for _, m := range machines {
			touch = append(touch, &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: m, Namespace: ns}})
		}
		return touch
	}
	for _, m := range machines {
		watch = append(watch, w.obj("TerraformMachine", m))
	}
	if writes, _ := w.settle(ctx, 2, touchAll(), watch); len(writes) > 0 {
		t.Logf("writes in %s while the last passes after convergence ran: %v", ns, writes)
	}
	jobs := timeline.Jobs()
	perOwner := map[string][]string{}
	for _, j := range jobs {
		perOwner[j.Owner] = append(perOwner[j.Owner], j.Op)
		if !j.Succeeded {
			t.Errorf("Job %s (%s of %s) did not succeed", j.Name, j.Op, j.Owner)
		}
	}
	t.Logf("Jobs created: %d %v", len(jobs), perOwner)
	if len(jobs) != 8 {
		t.Errorf("the bring-up created %d Jobs, want 8: %v", len(jobs), perOwner)
	}
	if ops := strings.Join(perOwner["TerraformCluster/"+name], ","); ops != "apply,apply" {
		t.Errorf("the TerraformCluster ran %q, want an apply and its re-apply", ops)
	}
	for _, m := range machines {
		if ops := strings.Join(perOwner["TerraformMachine/"+m], ","); ops != "apply" {
			t.Errorf("TerraformMachine %s ran %q, want one apply", m, ops)
		}
	}
	if n := jobsCounted(t) - jobsBefore; n != 8 {
		t.Errorf("sum(captf_jobs_total) grew by %v over the bring-up, want 8", n)
	}

	reactions := logReactions(t, timeline)
	if len(reactions) != len(jobs) {
		t.Errorf("%d of %d finished Jobs were followed by a next step", len(reactions), len(jobs))
	}

	// kubectl captf status -A shows every object of the bring-up with its
	// last run, and the cluster's tree every machine and Job.
	rows := map[string]cli.Row{}
	for _, r := range w.statusRows(ctx, "", "-A") {
		if r.Namespace == ns {
			rows[r.Kind+"/"+r.Name] = r
		}
	}
	want := []string{"TerraformCluster/" + name}
	for _, m := range machines {
		want = append(want, "TerraformMachine/"+m)
	}
	for _, k := range want {
		r, ok := rows[k]
		if !ok || r.Ready != "True" || r.LastRun == nil || r.LastRun.Outcome != "succeeded" || r.LastRun.Job != lastJobOf(timeline, k) || r.LastRun.At == nil {
			t.Errorf("status -A shows %s as %+v (last run %+v), want it Ready with its last Job %s succeeded", k, r, r.LastRun, lastJobOf(timeline, k))
		}
	}
	if len(rows) != len(want) {
		t.Errorf("status -A shows %d objects in %s, want %d", len(rows), ns, len(want))
	}
	tree := w.mustCaptf(ctx, "", "status", "terraformcluster/"+name, "-n", ns)
	for _, k := range want[1:] {
		if !strings.Contains(tree, k+" ") {
			t.Errorf("the tree of %s lacks %s", name, k)
		}
	}
	for _, j := range jobs {
		if !strings.Contains(tree, "Job/"+j.Name+" ") {
			t.Errorf("the tree of %s lacks Job %s", name, j.Name)
		}
	}

	w.assertNoSecret(ctx, ns, logFrom, credential, bootstrap, variable)

	// Converged reconciles write nothing. Touch every object (a change
	// that renders into no input) twice, so that each is reconciled at
	// least twice more, and let Cluster API go on updating its Machines.
	writes, reconciled := w.settle(ctx, 2, touchAll(), watch)
	if len(writes) != 0 {
		t.Errorf("%d converged reconciles made %d API writes in %s, want 0: %v", reconciled, len(writes), ns, writes)
	} else {
		t.Logf("API writes in %s by %d converged reconciles (decision none): 0; %d writes by the manager in the whole run so far, events included", ns, reconciled, w.writes.Count())
	}
	if reconciled < len(watch) {
		t.Errorf("only %d reconciles decided nothing after the objects were touched, want at least one per object", reconciled)
	}
}

// lastJobOf is the name of the newest Job of an owner the timeline saw.
// countJobsOf counts the Jobs of owner the timeline saw created.
func countJobsOf(tl *framework.Timeline, owner string) int {
	n := 0
	for _, j := range tl.Jobs() {
		if j.Owner == owner {
			n++
		}
	}
	return n
}

func lastJobOf(tl *framework.Timeline, owner string) string {
	last := ""
	for _, j := range tl.Jobs() {
		if j.Owner == owner {
			last = j.Name
		}
	}
	return last
}

// metricSum sums a metric of this process's registry over the series whose
// labels match.
func metricSum(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// jobsCounted is sum(captf_jobs_total) of the manager in this process.
func jobsCounted(t *testing.T) float64 { return metricSum(t, "captf_jobs_total", nil) }
