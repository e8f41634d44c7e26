package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestAutoscaledMachinePool follows the book's Machine Pools page, "Choose
// fixed replicas or autoscaling", with Cluster API's controllers and
// webhooks: a MachinePool with min-size 2, max-size 5 and spec.replicas
// unset. The no-op machinepool module plays the cloud's scaling group: its
// capacity_source variable names a state the test writes, whose
// desired_capacity is what the cloud's own autoscaler decided.
//
//   - Cluster API's webhook defaults spec.replicas to min-size; the pool
//     applies 2, claims cluster.x-k8s.io/replicas-managed-by and reports
//     AutoscalingActive=True/ReplicasManagedByModule.
//   - The cloud scales the group to 4: a membership refresh sees it and
//     MachinePool spec.replicas follows, with one ReplicasWrittenBack event
//     and no new apply Job.
//   - Both annotations removed and spec.replicas set to 3: the claim is
//     given back, AutoscalingActive=False/AutoscalingDisabled, and the
//     group is re-applied to 3.
func TestAutoscaledMachinePool(t *testing.T) {
	t.Parallel()
	const ns, name, pool, capacity = "team-autoscale", "scale", "scale-workers", "scale-capacity"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	cluster, tc := w.clusterObjects(ns, name, nil)
	// The cloud's scaling group starts at whatever it is asked for.
	if err := writeCapacityState(ctx, w.c, ns, capacity, nil); err != nil {
		t.Fatal(err)
	}
	w.create(ctx, cluster, tc,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: pool + "-bootstrap", Namespace: ns},
			Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
		},
		&infrav1.TerraformMachinePool{
			ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Spec: infrav1.TerraformMachinePoolSpec{
				WorkspaceSpec: infrav1.WorkspaceSpec{
					Source:    infrav1.SourceSpec{Image: w.images.MachinePool},
					Variables: map[string]apiextensionsv1.JSON{"capacity_source": {Raw: []byte(`"` + capacity + `"`)}},
				},
				IdentityRef:                      &infrav1.IdentityReference{Name: w.identity},
				MembershipRefreshIntervalSeconds: ptr.To[int32](15),
			},
		},
		&clusterv1.MachinePool{
			ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: ns, Annotations: map[string]string{
				infrav1.AutoscalerMinSizeAnnotation: "2", infrav1.AutoscalerMaxSizeAnnotation: "5",
			}},
			Spec: clusterv1.MachinePoolSpec{
				ClusterName: name,
				Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
					ClusterName: name,
					Version:     "v1.36.3",
					Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(pool + "-bootstrap")},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachinePool", Name: pool},
				}},
			},
		})
	tmp := &infrav1.TerraformMachinePool{}
	mp := &clusterv1.MachinePool{}
	read := func() error {
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool}, tmp); err != nil {
			return err
		}
		return w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool}, mp)
	}
	jobs := func(op infrav1.Operation) int {
		var list batchv1.JobList
		if err := w.c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
			infrav1.OwnerKindLabel: "TerraformMachinePool", infrav1.OpLabel: string(op)}); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	// has is the pool at n members on both sides, with the claim as wanted.
	has := func(n int32, claimed bool) func() (bool, string) {
		return func() (bool, string) {
			if err := read(); err != nil {
				return false, err.Error()
			}
			ok, why := ready(tmp)
			_, claim := mp.Annotations[infrav1.ReplicasManagedByAnnotation]
			ok = ok && tmp.Status.Replicas != nil && *tmp.Status.Replicas == n && len(tmp.Spec.ProviderIDList) == int(n) &&
				mp.Spec.Replicas != nil && *mp.Spec.Replicas == n && claim == claimed
			a := conditionOf(tmp, infrav1.AutoscalingActiveCondition)
			return ok, fmt.Sprintf("%s; status.replicas %v, providerIDList %d, MachinePool spec.replicas %v, replicas-managed-by %q, AutoscalingActive %s/%s",
				why, ptr.Deref(tmp.Status.Replicas, -1), len(tmp.Spec.ProviderIDList), ptr.Deref(mp.Spec.Replicas, -1),
				mp.Annotations[infrav1.ReplicasManagedByAnnotation], a.Status, a.Reason)
		}
	}

	w.eventually(ctx, 6*time.Minute, "the autoscaled pool to apply Cluster API's defaulted 2 and claim replicas-managed-by", has(2, true))
	if got := mp.Annotations[infrav1.ReplicasManagedByAnnotation]; got != infrav1.ReplicasManagedByCAPTF {
		t.Fatalf("replicas-managed-by %q; want %q", got, infrav1.ReplicasManagedByCAPTF)
	}
	if c := conditionOf(tmp, infrav1.AutoscalingActiveCondition); c.Status != metav1.ConditionTrue || c.Reason != infrav1.ReplicasManagedByModuleReason {
		t.Fatalf("AutoscalingActive %s/%s; want True/%s", c.Status, c.Reason, infrav1.ReplicasManagedByModuleReason)
	}
	applies := jobs(infrav1.OperationApply)
	written := w.eventCounts(ctx, ns, "TerraformMachinePool")[infrav1.ReplicasWrittenBackEvent]

	// The cloud scales the group to 4.
	if err := writeCapacityState(ctx, w.c, ns, capacity, ptr.To(4)); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 3*time.Minute, "the cloud-side scale to 4 to reach the MachinePool's spec.replicas", has(4, true))
	// Two more membership refreshes: nothing else may be written or run.
	refreshes := jobs(infrav1.OperationRefresh)
	w.eventually(ctx, 2*time.Minute, "two more membership refreshes", func() (bool, string) {
		n := jobs(infrav1.OperationRefresh)
		return n >= refreshes+2, fmt.Sprintf("%d refresh Jobs, %d before", n, refreshes)
	})
	if n := jobs(infrav1.OperationApply); n != applies {
		t.Errorf("%d apply Jobs after the cloud-side scale, %d before: an autoscaled pool's scale must not re-apply", n, applies)
	}
	w.eventually(ctx, time.Minute, "one ReplicasWrittenBack event for 2 → 4", func() (bool, string) {
		n := w.eventCounts(ctx, ns, "TerraformMachinePool")[infrav1.ReplicasWrittenBackEvent]
		return n == written+1, fmt.Sprintf("%d ReplicasWrittenBack events, %d before", n, written)
	})

	// Autoscaling off: the cloud follows the configured count again, and
	// spec.replicas 3 is authoritative.
	if err := writeCapacityState(ctx, w.c, ns, capacity, nil); err != nil {
		t.Fatal(err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pool}, mp); err != nil {
			return err
		}
		delete(mp.Annotations, infrav1.AutoscalerMinSizeAnnotation)
		delete(mp.Annotations, infrav1.AutoscalerMaxSizeAnnotation)
		mp.Spec.Replicas = ptr.To[int32](3)
		return w.c.Update(ctx, mp)
	}); err != nil {
		t.Fatal(err)
	}
	w.eventually(ctx, 4*time.Minute, "the claim given back and the pool re-applied to 3", has(3, false))
	if c := conditionOf(tmp, infrav1.AutoscalingActiveCondition); c.Status != metav1.ConditionFalse || c.Reason != infrav1.AutoscalingDisabledReason {
		t.Fatalf("AutoscalingActive %s/%s; want False/%s", c.Status, c.Reason, infrav1.AutoscalingDisabledReason)
	}
	if n := jobs(infrav1.OperationApply); n <= applies {
		t.Errorf("no apply Job after autoscaling was turned off (%d before, %d after)", applies, n)
	}
	t.Logf("Jobs: apply %d, refresh %d, drift %d", jobs(infrav1.OperationApply), jobs(infrav1.OperationRefresh), jobs(infrav1.OperationDrift))
}

// writeCapacityState writes the state the no-op machinepool module's
// capacity_source reads, in the kubernetes backend's format: the output
// desired_capacity when n is set, no output at all otherwise (the module
// then uses its replicas input).
func writeCapacityState(ctx context.Context, c client.Client, ns, suffix string, n *int) error {
	outputs := map[string]any{}
	if n != nil {
		outputs["desired_capacity"] = map[string]any{"value": *n, "type": "number"}
	}
	b, err := gzipJSON(map[string]any{
		"version": 4, "terraform_version": "1.12.6", "serial": time.Now().UnixNano(), "lineage": "captf-e2e-capacity",
		"outputs": outputs, "resources": []any{},
	})
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tfstate-default-" + suffix, Namespace: ns}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); client.IgnoreNotFound(err) != nil {
		return err
	}
	s.Data = map[string][]byte{"tfstate": b}
	if s.ResourceVersion == "" {
		return c.Create(ctx, s)
	}
	return c.Update(ctx, s)
}
