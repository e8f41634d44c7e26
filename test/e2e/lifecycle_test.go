package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// TestMachinePoolAndDeletion brings up the Quick Start cluster, adds a
// TerraformMachinePool with 3 fixed replicas (book: Machine Pools), checks
// it reaches Ready with 3 provider IDs and re-applies when replicas change.
// Then it deletes the TerraformCluster on its own, before the Cluster, so
// that Cluster API's deletion order cannot be what protects it: CAPTF's own
// guard (The Reconcile Lifecycle, deletion) reports DeletionBlocked True/
// DependentsExist and runs no destroy while the cluster's TerraformMachines
// and TerraformMachinePools exist. Deleting the Cluster (book: Quick Start,
// "Clean up") removes them; the test checks that machines and pools are
// destroyed before the cluster and that every state Secret, lock Lease,
// durable inputs Secret, run lease and credential mirror is gone with every
// finalizer. Last, its subtest ManagerRBACIsWhatItUses checks that the
// shared manager, which runs as its ServiceAccount with the shipped RBAC,
// was refused nothing and used every right its ClusterRole grants but the
// excepted ones (rbac_test.go).
func TestMachinePoolAndDeletion(t *testing.T) {
	t.Parallel()
	const ns = "team-pool"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	w.namespace(ctx, ns)
	timeline, err := framework.StartTimeline(ctx, w.e.Config, scheme(), ns)
	if err != nil {
		t.Fatal(err)
	}
	q := w.quickStart()
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute); !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start did not finish: %s", why)
	}

	// A pool's bootstrap data comes from a bootstrap provider once a real
	// control plane is up, which the no-op modules never bring; the test
	// writes the Secret a bootstrap provider would.
	w.create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-workers-bootstrap", Namespace: ns},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	})
	w.create(ctx, &infrav1.TerraformMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-workers", Namespace: ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: "my-cluster"}},
		Spec: infrav1.TerraformMachinePoolSpec{
			WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: w.images.MachinePool}},
			IdentityRef:   &infrav1.IdentityReference{Name: w.identity},
		},
	})
	w.create(ctx, &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-workers", Namespace: ns},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: "my-cluster",
			Replicas:    ptr.To[int32](3),
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: "my-cluster",
				Version:     "v1.36.3",
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("my-cluster-workers-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachinePool", Name: "my-cluster-workers"},
			}},
		},
	})
	pool := &infrav1.TerraformMachinePool{}
	poolHas := func(n int) func() (bool, string) {
		return func() (bool, string) {
			if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster-workers"}, pool); err != nil {
				return false, err.Error()
			}
			ok, why := ready(pool)
			return ok && len(pool.Spec.ProviderIDList) == n && pool.Status.Replicas != nil && *pool.Status.Replicas == int32(n),
				why + " providerIDList=" + strings.Join(pool.Spec.ProviderIDList, ",")
		}
	}
	w.eventually(ctx, 5*time.Minute, "the pool to be Ready with 3 provider IDs", poolHas(3))
	applies := func() int {
		var jobs batchv1.JobList
		_ = w.c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: "TerraformMachinePool", infrav1.OpLabel: "apply"})
		return len(jobs.Items)
	}
	before := applies()
	mp := &clusterv1.MachinePool{}
	// Cluster API's controllers write the MachinePool too: retry on a
	// conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster-workers"}, mp); err != nil {
			return err
		}
		mp.Spec.Replicas = ptr.To[int32](5)
		return w.c.Update(ctx, mp)
	}); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 5*time.Minute, "the pool to re-apply with 5 replicas", poolHas(5))
	if after := applies(); after <= before {
		t.Fatalf("a replica change ran no new apply Job (%d before, %d after)", before, after)
	}

	// A worker whose bootstrap data never comes never applies: deleting
	// it (with the Cluster) removes it at once, with no destroy Job.
	w.create(ctx,
		&infrav1.TerraformMachine{
			ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-never", Namespace: ns,
				Labels: map[string]string{clusterv1.ClusterNameLabel: "my-cluster"}},
			Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: w.images.Machine}}},
		},
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: "my-cluster-never", Namespace: ns,
				Labels: map[string]string{clusterv1.ClusterNameLabel: "my-cluster"}},
			Spec: clusterv1.MachineSpec{
				ClusterName: "my-cluster",
				Version:     "v1.36.3",
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("my-cluster-never-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: "my-cluster-never"},
			},
		})
	w.eventually(ctx, 2*time.Minute, "the worker to wait for its bootstrap data", func() (bool, string) {
		tm := &infrav1.TerraformMachine{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-cluster-never"}, tm); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(tm.Status.Conditions, infrav1.DependenciesReadyCondition)
		if c == nil {
			return false, "no DependenciesReady condition"
		}
		return c.Reason == infrav1.WaitingForBootstrapDataReason, c.Reason + ": " + c.Message
	})

	// Delete the TerraformCluster while its machine and pool exist and
	// its Cluster stands: CAPTF's guard alone keeps its destroy back.
	clusterDestroys := func() []string {
		var jobs batchv1.JobList
		if err := w.c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: "TerraformCluster", infrav1.OpLabel: string(infrav1.OperationDestroy)}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range jobs.Items {
			names = append(names, j.Name)
		}
		return names
	}
	tcKey := client.ObjectKey{Namespace: ns, Name: "my-cluster"}
	if err := w.c.Delete(ctx, &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: tcKey.Name, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 3*time.Minute, "the TerraformCluster's deletion to be blocked by its dependents", func() (bool, string) {
		if jobs := clusterDestroys(); len(jobs) > 0 {
			t.Fatalf("the TerraformCluster ran destroy Job %v while its TerraformMachines and TerraformMachinePool exist", jobs)
		}
		tc := &infrav1.TerraformCluster{}
		if err := w.c.Get(ctx, tcKey, tc); err != nil {
			return false, err.Error()
		}
		c := conditionOf(tc, infrav1.DeletionBlockedCondition)
		return c.Status == metav1.ConditionTrue && c.Reason == infrav1.DependentsExistReason, fmt.Sprintf("DeletionBlocked %s/%s", c.Status, c.Reason)
	})
	// However often it is reconciled meanwhile, it stays blocked.
	w.settle(ctx, 2, []client.Object{&infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: tcKey.Name, Namespace: ns}}},
		[]framework.Object{w.obj("TerraformCluster", tcKey.Name)})
	if jobs := clusterDestroys(); len(jobs) > 0 {
		t.Fatalf("the TerraformCluster ran destroy Job %v while its TerraformMachines and TerraformMachinePool exist", jobs)
	}
	blocked := &infrav1.TerraformCluster{}
	if err := w.c.Get(ctx, tcKey, blocked); err != nil {
		t.Fatal(err)
	}
	if c := conditionOf(blocked, infrav1.DeletionBlockedCondition); c.Status != metav1.ConditionTrue || c.Reason != infrav1.DependentsExistReason {
		t.Fatalf("DeletionBlocked went %s/%s while the dependents exist", c.Status, c.Reason)
	}

	// Clean up: delete the Cluster and wait for everything to go.
	if err := w.c.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "my-cluster", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(ctx, mp); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 10*time.Minute, "every Terraform* object to be gone", func() (bool, string) {
		var tcs infrav1.TerraformClusterList
		var tms infrav1.TerraformMachineList
		var tmps infrav1.TerraformMachinePoolList
		_ = w.c.List(ctx, &tcs, client.InNamespace(ns))
		_ = w.c.List(ctx, &tms, client.InNamespace(ns))
		_ = w.c.List(ctx, &tmps, client.InNamespace(ns))
		n := len(tcs.Items) + len(tms.Items) + len(tmps.Items)
		return n == 0, strconv.Itoa(n) + " left"
	})
	// The events tell the order: every machine and pool was destroyed
	// (Destroyed) before the cluster's destroy Job was created.
	var evs eventsv1.EventList
	if err := w.c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var clusterDestroyStart time.Time
	destroyed := map[string]time.Time{}
	for _, e := range evs.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		switch {
		case e.Reason == infrav1.DestroyedEvent:
			destroyed[e.Regarding.Kind+"/"+e.Regarding.Name] = at
		case e.Reason == infrav1.JobCreatedEvent && e.Regarding.Kind == "TerraformCluster" && strings.Contains(e.Note, " destroy "):
			clusterDestroyStart = at
		}
	}
	if clusterDestroyStart.IsZero() {
		t.Error("the TerraformCluster ran no destroy Job")
	}
	var kinds []string
	for k, at := range destroyed {
		kinds = append(kinds, k)
		if !strings.HasPrefix(k, "TerraformCluster/") && at.After(clusterDestroyStart) {
			t.Errorf("%s was destroyed after the cluster's destroy started", k)
		}
	}
	sort.Strings(kinds)
	if len(kinds) != 3 {
		t.Errorf("Destroyed events for %v, want the cluster, its machine and its pool", kinds)
	}
	logReactions(t, timeline)
	var neverJobs batchv1.JobList
	if err := w.c.List(ctx, &neverJobs, client.InNamespace(ns), client.MatchingLabels{infrav1.OwnerNameLabel: "my-cluster-never"}); err != nil {
		t.Fatal(err)
	}
	if len(neverJobs.Items) != 0 {
		t.Errorf("the never-applied TerraformMachine ran %d Jobs, want none", len(neverJobs.Items))
	}
	// Nothing CAPTF owned stays behind.
	var secrets corev1.SecretList
	if err := w.c.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		switch {
		case s.Labels["tfstate"] == "true", strings.HasPrefix(s.Name, "captf-inputs-"),
			strings.HasPrefix(s.Name, "captf-creds-"), strings.HasPrefix(s.Name, "captf-run-"):
			t.Errorf("Secret %s is left behind", s.Name)
		}
	}
	var leases coordinationv1.LeaseList
	if err := w.c.List(ctx, &leases, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if strings.HasPrefix(l.Name, "lock-tfstate-") || strings.HasPrefix(l.Name, "captf-run-") || strings.HasPrefix(l.Name, "captf-cluster-") {
			t.Errorf("Lease %s is left behind", l.Name)
		}
	}
	// The bring-up and clean-up above are the manager's whole life cycle:
	// it must have used every right its ClusterRole grants.
	t.Run("ManagerRBACIsWhatItUses", func(t *testing.T) { checkManagerRBAC(ctx, t) })
}
