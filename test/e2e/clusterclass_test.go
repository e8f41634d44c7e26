package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestClusterClassFlavor brings the clusterclass flavor up on the no-op
// images with Cluster API's ClusterTopology controllers (book: Templates and
// ClusterClass): templates/clusterclass-noop.yaml applied to the namespace,
// extended with the book's module-variable patch (a topology variable
// written into the TerraformClusterTemplate's spec.template.spec.variables),
// then cluster-template-clusterclass.yaml with three control-plane machines
// (the class's control plane rolls out with maxSurge 0, which
// KubeadmControlPlane allows from three replicas) and one worker.
//
// The workload cluster Cluster API's controllers reach is this
// environment's own API server (reachWorkload): enough for
// KubeadmControlPlane to find kubeadm's kubeadm-config ConfigMap and report
// the control plane initialized, and for the kubeadm bootstrap provider to
// write a worker's join bootstrap token, so the worker gets bootstrap data.
// framework.Workload registers the worker's Node (with its providerID), as
// its kubelet would, but no control-plane Node: the class's managed etcd
// would have KubeadmControlPlane dial each control-plane Node's etcd member
// through a port-forward no played kubelet serves. So KubeadmControlPlane
// creates only the first control-plane machine: its preflight checks wait
// for every control-plane Machine's Node (status.nodeRef) and static pods
// before it creates another one, for a scale up and for a rollout alike.
// TestClusterClassControlPlaneRollout rolls a control plane out, on an
// external etcd.
//
//   - The topology controller clones the templates; the TerraformCluster
//     carries clusterImage and identityName (also as defaults.identityRef),
//     the patched module variable reaches its tfvars, and it, the
//     control-plane TerraformMachine and the worker's reach Ready.
//   - Changing machineImage makes the topology controller create a new
//     TerraformMachineTemplate with the new image and roll the control plane
//     and the MachineDeployment onto it; the MachineDeployment's new worker
//     TerraformMachine runs the new image and reaches Ready; once its Node
//     registers the new Machine is available, and the MachineDeployment
//     deletes the old worker: its Machine and its TerraformMachine go,
//     through a destroy Job.
func TestClusterClassFlavor(t *testing.T) {
	t.Parallel()
	const ns, name = "team-cc", "cc"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	recorded := w.recordJobs(ns)

	w.createClusterClass(ctx, ns, func(o *unstructured.Unstructured) {
		if o.GetKind() == "ClusterClass" {
			addTeamPatch(t, o)
		}
	})
	w.reachWorkload(ctx, ns, name)
	wl := w.playWorkload(ns, name, framework.WorkloadOptions{WorkersOnly: true})
	objs, err := framework.Template(root(t), "cluster-template-clusterclass.yaml", map[string]string{
		"CLUSTER_NAME": name, "NAMESPACE": ns, "KUBERNETES_VERSION": "v1.36.3",
		"CONTROL_PLANE_MACHINE_COUNT": "3", "WORKER_MACHINE_COUNT": "1",
		"TERRAFORM_CLUSTER_IMAGE": w.images.Cluster, "TERRAFORM_MACHINE_IMAGE": w.images.Machine,
		"TERRAFORM_IDENTITY_NAME": w.identity,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Cluster" {
			vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "variables")
			vars = append(vars, map[string]any{"name": "team", "value": "platform"})
			if err := unstructured.SetNestedSlice(o.Object, vars, "spec", "topology", "variables"); err != nil {
				t.Fatal(err)
			}
			// The worker's MachineSet would wait for a stable control
			// plane, which needs Nodes.
			mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "workers", "machineDeployments")
			mds[0].(map[string]any)["metadata"] = map[string]any{"annotations": map[string]any{
				clusterv1.MachineSetSkipPreflightChecksAnnotation: "All"}}
			if err := unstructured.SetNestedSlice(o.Object, mds, "spec", "topology", "workers", "machineDeployments"); err != nil {
				t.Fatal(err)
			}
		}
		// Cluster API's webhook refuses a Cluster until its class is
		// reconciled.
		w.eventually(ctx, 2*time.Minute, "the Cluster on ClusterClass noop to be accepted", func() (bool, string) {
			err := framework.Apply(ctx, w.c, o.DeepCopy())
			return err == nil, fmt.Sprint(err)
		})
	}

	tc := &infrav1.TerraformCluster{}
	tm := &infrav1.TerraformMachine{}
	w.eventually(ctx, 8*time.Minute, "the topology's TerraformCluster, control-plane TerraformMachine and worker TerraformMachine to be Ready", func() (bool, string) {
		var tcs infrav1.TerraformClusterList
		cl := &clusterv1.Cluster{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cl); err != nil {
			return false, err.Error()
		}
		topo := conditionOf(cl, clusterv1.ClusterTopologyReconciledCondition)
		cluster := fmt.Sprintf("Cluster TopologyReconciled %s/%s: %s; infrastructureRef %q, controlPlaneRef %q; ",
			topo.Status, topo.Reason, topo.Message, cl.Spec.InfrastructureRef.Name, cl.Spec.ControlPlaneRef.Name)
		sel := client.MatchingLabels{clusterv1.ClusterNameLabel: name}
		if err := w.c.List(ctx, &tcs, client.InNamespace(ns), sel); err != nil || len(tcs.Items) != 1 {
			return false, fmt.Sprintf("%sTerraformClusters %d, %v", cluster, len(tcs.Items), err)
		}
		*tc = tcs.Items[0]
		okC, whyC := ready(tc)
		cps, workers, err := w.clusterMachines(ctx, ns, name)
		if err != nil || len(cps) != 1 {
			return false, fmt.Sprintf("%sTerraformCluster %s; control-plane TerraformMachines %d, %v", cluster, whyC, len(cps), err)
		}
		*tm = cps[0]
		okM, whyM := ready(tm)
		okW, whyW := readyOn(workers, w.images.Machine)
		return okC && okM && okW, cluster + "TerraformCluster " + whyC + "; control-plane TerraformMachine " + whyM + "; workers: " + whyW
	})
	if tc.Spec.Source.Image != w.images.Cluster || tc.Spec.IdentityRef == nil || tc.Spec.IdentityRef.Name != w.identity ||
		tc.Spec.Defaults == nil || tc.Spec.Defaults.IdentityRef == nil || tc.Spec.Defaults.IdentityRef.Name != w.identity {
		t.Errorf("the TerraformCluster's image %q, identityRef %+v, defaults %+v; want %q and identity %q from the topology variables",
			tc.Spec.Source.Image, tc.Spec.IdentityRef, tc.Spec.Defaults, w.images.Cluster, w.identity)
	}
	if tm.Spec.Source.Image != w.images.Machine {
		t.Errorf("the control-plane TerraformMachine runs %q, want machineImage %q", tm.Spec.Source.Image, w.images.Machine)
	}
	durable := &corev1.Secret{}
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lifecycle.DurableName(infrav1.KindTerraformCluster, tc.Name)}, durable); err != nil {
		t.Fatal(err)
	}
	var tfvars map[string]any
	if err := json.Unmarshal(durable.Data[contract.TFVarsFile], &tfvars); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tfvars["extra_tags"]); got != "map[team:platform]" {
		t.Errorf("the cluster module's extra_tags is %s; want the topology variable team patched in (map[team:platform])", got)
	}

	oldWorker := w.workerMachine(ctx, ns, name)
	if oldWorker.Status.NodeRef.Name != oldWorker.Name {
		t.Errorf("worker Machine %s nodeRef %+v, want the Node the workload registered for its providerID", oldWorker.Name, oldWorker.Status.NodeRef)
	}

	// machineImage changes: the topology controller creates a new
	// TerraformMachineTemplate and rolls the control plane and the
	// MachineDeployment onto it.
	// A different image: the no-op machine image with another version label.
	next := w.pushWithLabels(ctx, w.images.Machine, strings.TrimPrefix(w.images.Machine, w.e.Registry+"/")+"-rollout",
		map[string]string{contract.LabelVersion: "v0.1.1"})
	w.setMachineImage(ctx, ns, name, next)
	w.eventually(ctx, 3*time.Minute, "the control plane and the MachineDeployment to reference a TerraformMachineTemplate of the new image", func() (bool, string) {
		var kcps controlplanev1.KubeadmControlPlaneList
		var mds clusterv1.MachineDeploymentList
		sel := client.MatchingLabels{clusterv1.ClusterNameLabel: name}
		if err := w.c.List(ctx, &kcps, client.InNamespace(ns), sel); err != nil || len(kcps.Items) != 1 {
			return false, fmt.Sprintf("KubeadmControlPlanes %d, %v", len(kcps.Items), err)
		}
		if err := w.c.List(ctx, &mds, client.InNamespace(ns), sel); err != nil || len(mds.Items) != 1 {
			return false, fmt.Sprintf("MachineDeployments %d, %v", len(mds.Items), err)
		}
		image := func(ref string) string {
			tmt := &infrav1.TerraformMachineTemplate{}
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref}, tmt); err != nil {
				return err.Error()
			}
			return tmt.Spec.Template.Spec.Source.Image
		}
		cp := image(kcps.Items[0].Spec.MachineTemplate.Spec.InfrastructureRef.Name)
		md := image(mds.Items[0].Spec.Template.Spec.InfrastructureRef.Name)
		return cp == next && md == next, fmt.Sprintf("control plane template image %q, MachineDeployment template image %q", cp, md)
	})
	w.eventually(ctx, 6*time.Minute, "the MachineDeployment's new worker TerraformMachine to be Ready on the new image", func() (bool, string) {
		_, workers, err := w.clusterMachines(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		return readyOn(workers, next)
	})

	// The MachineDeployment's new Machine gets its Node, so it becomes
	// available and the old worker goes: its Machine and its
	// TerraformMachine, through a destroy Job.
	w.rolledOut(ctx, ns, name, wl, oldWorker, next)

	// What holds the control plane back: KubeadmControlPlane's own account.
	var kcps controlplanev1.KubeadmControlPlaneList
	if err := w.c.List(ctx, &kcps, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil || len(kcps.Items) != 1 {
		t.Fatalf("KubeadmControlPlanes %d, %v", len(kcps.Items), err)
	}
	kcp := &kcps.Items[0]
	if !ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false) {
		t.Errorf("KubeadmControlPlane status.initialization.controlPlaneInitialized unset with the workload cluster reachable")
	}
	for _, typ := range []string{controlplanev1.KubeadmControlPlaneRollingOutCondition, controlplanev1.KubeadmControlPlaneScalingUpCondition} {
		c := conditionOf(kcp, typ)
		t.Logf("KubeadmControlPlane %s=%s/%s: %s", typ, c.Status, c.Reason, c.Message)
	}
	for _, j := range recorded() {
		t.Logf("Job %s", j)
	}
}

// reachWorkload makes this environment's API server the workload cluster
// of Cluster ns/name for Cluster API's controllers: the Cluster's
// kubeconfig Secret, written before the Cluster (KubeadmControlPlane then
// uses it as it is), holds the environment's admin kubeconfig, and
// kube-system holds the kubeadm-config ConfigMap kubeadm init writes, by
// which KubeadmControlPlane knows the control plane initialized.
func (w *world) reachWorkload(ctx context.Context, ns, name string) {
	w.t.Helper()
	kc, err := os.ReadFile(w.e.KubeconfigPath)
	if err != nil {
		w.t.Fatal(err)
	}
	w.create(ctx,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{"value": kc},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: metav1.NamespaceSystem},
			Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\n" +
				"kind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n"},
		})
}

// playWorkload plays the kubelets of Cluster ns/name's workload cluster
// (this environment's API server, see reachWorkload) until the test ends.
func (w *world) playWorkload(ns, name string, opts framework.WorkloadOptions) *framework.Workload {
	wl := framework.StartWorkload(w.c, ns, name, opts)
	w.t.Cleanup(func() {
		wl.Stop()
		if err := wl.Err(); w.t.Failed() && err != nil {
			w.t.Logf("the workload's last pass: %v", err)
		}
	})
	return wl
}

// workerMachine is the one worker Machine of Cluster ns/name.
func (w *world) workerMachine(ctx context.Context, ns, name string) *clusterv1.Machine {
	w.t.Helper()
	var ms clusterv1.MachineList
	m := &clusterv1.Machine{}
	w.eventually(ctx, 2*time.Minute, "the worker Machine to have its Node", func() (bool, string) {
		if err := w.c.List(ctx, &ms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
			return false, err.Error()
		}
		var workers []string
		for i := range ms.Items {
			if _, cp := ms.Items[i].Labels[clusterv1.MachineControlPlaneLabel]; !cp {
				*m = ms.Items[i]
				workers = append(workers, fmt.Sprintf("%s (nodeRef %q)", m.Name, m.Status.NodeRef.Name))
			}
		}
		return len(workers) == 1 && m.Status.NodeRef.IsDefined(), fmt.Sprintf("worker Machines %v", workers)
	})
	return m
}

// rolledOut waits until the MachineDeployment of Cluster ns/name has
// settled on one new, available Machine whose TerraformMachine runs image,
// and old (the worker Machine before the rollout) and its TerraformMachine
// are gone, a destroy Job having run for it.
func (w *world) rolledOut(ctx context.Context, ns, name string, wl *framework.Workload, old *clusterv1.Machine, image string) {
	w.t.Helper()
	oldTM := old.Spec.InfrastructureRef.Name
	destroyed := false
	begin := time.Now()
	defer func() {
		w.t.Logf("the old worker was gone %s after the new worker TerraformMachine was Ready", time.Since(begin).Round(time.Second))
	}()
	w.eventually(ctx, 6*time.Minute, "the old worker Machine and its TerraformMachine to be deleted (destroy Job) and the MachineDeployment to settle on one new available Machine", func() (bool, string) {
		var jobs batchv1.JobList
		if err := w.c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerNameLabel: oldTM, infrav1.OpLabel: string(infrav1.OperationDestroy)}); err != nil {
			return false, err.Error()
		}
		destroyed = destroyed || len(jobs.Items) > 0
		var why []string
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(old), &clusterv1.Machine{}); !apierrors.IsNotFound(err) {
			why = append(why, fmt.Sprintf("old Machine %s still there (%v)", old.Name, err))
		}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: oldTM}, &infrav1.TerraformMachine{}); !apierrors.IsNotFound(err) {
			why = append(why, fmt.Sprintf("old TerraformMachine %s still there (%v)", oldTM, err))
		}
		var mds clusterv1.MachineDeploymentList
		if err := w.c.List(ctx, &mds, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil || len(mds.Items) != 1 {
			return false, fmt.Sprintf("MachineDeployments %d, %v", len(mds.Items), err)
		}
		st := mds.Items[0].Status
		if ptr.Deref(st.Replicas, -1) != 1 || ptr.Deref(st.UpToDateReplicas, -1) != 1 || ptr.Deref(st.AvailableReplicas, -1) != 1 {
			why = append(why, fmt.Sprintf("MachineDeployment replicas %d, up-to-date %d, available %d (want 1 each)",
				ptr.Deref(st.Replicas, -1), ptr.Deref(st.UpToDateReplicas, -1), ptr.Deref(st.AvailableReplicas, -1)))
		}
		_, workers, err := w.clusterMachines(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		if ok, r := readyOn(workers, image); !ok || len(workers) != 1 {
			why = append(why, fmt.Sprintf("%d worker TerraformMachines; %s", len(workers), r))
		}
		if !destroyed {
			why = append(why, "no destroy Job seen for "+oldTM)
		}
		if len(why) == 0 {
			return true, ""
		}
		if err := wl.Err(); err != nil {
			why = append(why, "workload: "+err.Error())
		}
		// Why the new Machine is not available yet, if it is not.
		var ms clusterv1.MachineList
		if err := w.c.List(ctx, &ms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
			return false, err.Error()
		}
		for i := range ms.Items {
			m := &ms.Items[i]
			if _, cp := m.Labels[clusterv1.MachineControlPlaneLabel]; !cp && m.Name != old.Name {
				r, a := conditionOf(m, clusterv1.MachineReadyCondition), conditionOf(m, clusterv1.MachineAvailableCondition)
				why = append(why, fmt.Sprintf("new worker Machine %s nodeRef %q, Ready=%s/%s: %s, Available=%s/%s",
					m.Name, m.Status.NodeRef.Name, r.Status, r.Reason, r.Message, a.Status, a.Reason))
			}
		}
		return false, strings.Join(why, "; ")
	})
}

// clusterMachines lists the TerraformMachines of Cluster ns/name: the
// control plane's and the workers'.
func (w *world) clusterMachines(ctx context.Context, ns, name string) (cps, workers []infrav1.TerraformMachine, err error) {
	var tms infrav1.TerraformMachineList
	if err := w.c.List(ctx, &tms, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}); err != nil {
		return nil, nil, err
	}
	for _, m := range tms.Items {
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			cps = append(cps, m)
		} else {
			workers = append(workers, m)
		}
	}
	return cps, workers, nil
}

// readyOn: one of machines runs image and is Ready.
func readyOn(machines []infrav1.TerraformMachine, image string) (bool, string) {
	var why []string
	for i := range machines {
		ok, r := ready(&machines[i])
		if ok && machines[i].Spec.Source.Image == image {
			return true, ""
		}
		why = append(why, fmt.Sprintf("%s on %s: %s", machines[i].Name, machines[i].Spec.Source.Image, r))
	}
	return false, fmt.Sprintf("none of %d Ready on %s (%s)", len(machines), image, strings.Join(why, "; "))
}

// addTeamPatch adds the book's module-variable patch (Templates and
// ClusterClass, "Patch a module variable through ClusterClass") to the
// class, on the TerraformClusterTemplate: topology variable team becomes
// the no-op cluster module's extra_tags.
func addTeamPatch(t *testing.T, cc *unstructured.Unstructured) {
	t.Helper()
	vars, _, _ := unstructured.NestedSlice(cc.Object, "spec", "variables")
	vars = append(vars, map[string]any{"name": "team", "required": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "string"}}})
	patches, _, _ := unstructured.NestedSlice(cc.Object, "spec", "patches")
	patches = append(patches, map[string]any{"name": "team", "definitions": []any{map[string]any{
		"selector": map[string]any{
			"apiVersion": infrav1.GroupVersion.String(), "kind": "TerraformClusterTemplate",
			"matchResources": map[string]any{"infrastructureCluster": true},
		},
		"jsonPatches": []any{map[string]any{
			"op": "add", "path": "/spec/template/spec/variables",
			"valueFrom": map[string]any{"template": "extra_tags:\n  team: {{ .team }}\n"},
		}},
	}}})
	if err := unstructured.SetNestedSlice(cc.Object, vars, "spec", "variables"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(cc.Object, patches, "spec", "patches"); err != nil {
		t.Fatal(err)
	}
}

// recordJobs notes every Job of ns (kind, operation, owner) until the test
// ends, Jobs that their object's deletion takes away included, and returns
// what it noted so far, in order of creation.
func (w *world) recordJobs(ns string) func() []string {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var js batchv1.JobList
			if err := w.c.List(ctx, &js, client.InNamespace(ns)); err == nil {
				mu.Lock()
				for _, j := range js.Items {
					key := fmt.Sprintf("%s (%s %s of %s)", j.Name, j.Labels[infrav1.OwnerKindLabel], j.Labels[infrav1.OpLabel], j.Labels[infrav1.OwnerNameLabel])
					if _, ok := seen[key]; !ok {
						seen[key] = j.CreationTimestamp.Time
					}
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	w.t.Cleanup(func() { cancel(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, 0, len(seen))
		for k := range seen {
			out = append(out, k)
		}
		sort.Slice(out, func(i, j int) bool {
			if !seen[out[i]].Equal(seen[out[j]]) {
				return seen[out[i]].Before(seen[out[j]])
			}
			return out[i] < out[j]
		})
		return out
	}
}

// createClusterClass creates the objects of templates/clusterclass-noop.yaml
// in ns, each passed to edit first.
func (w *world) createClusterClass(ctx context.Context, ns string, edit func(*unstructured.Unstructured)) {
	w.t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(w.t), "templates", "clusterclass-noop.yaml"))
	if err != nil {
		w.t.Fatal(err)
	}
	class, err := framework.Decode(raw)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, o := range class {
		o.SetNamespace(ns)
		edit(o)
		w.create(ctx, o)
	}
}

// setMachineImage sets Cluster ns/name's machineImage topology variable to
// image, retrying on a conflict.
func (w *world) setMachineImage(ctx context.Context, ns, name, image string) {
	w.t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cluster := &clusterv1.Cluster{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil {
			return err
		}
		for i := range cluster.Spec.Topology.Variables {
			if cluster.Spec.Topology.Variables[i].Name == "machineImage" {
				cluster.Spec.Topology.Variables[i].Value.Raw = []byte(`"` + image + `"`)
			}
		}
		return w.c.Update(ctx, cluster)
	}); err != nil {
		w.t.Fatal(err)
	}
}
