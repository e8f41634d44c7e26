package scale

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The fleet's fixed names. The images are never pulled: the executor stands
// in for the kubelet.
const (
	Namespace   = "captf-scale"
	ClusterName = "scale"
	identity    = "scale-identity"
	moduleImage = "registry.example/captf/noop-module:v1.0.0"
	runnerImage = "registry.example/captf/manager:v1.0.0"
)

// MachineName is the i-th machine's name (Machine, TerraformMachine).
func MachineName(i int) string { return fmt.Sprintf("m-%05d", i) }

func create(ctx context.Context, c client.Client, o client.Object) error {
	if err := withRetry(ctx, func() error { return c.Create(ctx, o) }); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create %T %s: %w", o, o.GetName(), err)
	}
	return nil
}

func controllerRef(o client.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// ShardFilter is the watch-filter value of shard i: manager i runs with
// --watch-filter=ShardFilter(i), and shard i's objects carry the label
// cluster.x-k8s.io/watch-filter=ShardFilter(i).
func ShardFilter(i int) string { return fmt.Sprintf("scale-shard-%d", i) }

// layout is how the fleet is split into shards: with one shard, one Cluster
// named ClusterName and no watch-filter label (the unsharded fleet as it
// always was); with K > 1, Cluster scale-<i> for shard i, each of its
// objects labeled for the shard, and machine i in shard i mod K.
type layout struct{ shards int }

func (l layout) sharded() bool { return l.shards > 1 }

// cluster is shard i's Cluster (and TerraformCluster) name.
func (l layout) cluster(i int) string {
	if !l.sharded() {
		return ClusterName
	}
	return fmt.Sprintf("%s-%d", ClusterName, i)
}

// clusters are every shard's Cluster names.
func (l layout) clusters() []string {
	out := make([]string, max(l.shards, 1))
	for i := range out {
		out[i] = l.cluster(i)
	}
	return out
}

// machineShard is the shard of the i-th machine: the machines are dealt to
// the shards in turn, so the shards grow together and differ by at most
// one machine.
func (l layout) machineShard(i int) int {
	if !l.sharded() {
		return 0
	}
	return i % l.shards
}

// shardOf is the shard of the fleet machine named name (MachineName's
// form); false for a name that is not a fleet machine.
func (l layout) shardOf(name string) (int, bool) {
	var i int
	if n, err := fmt.Sscanf(name, "m-%d", &i); err != nil || n != 1 || MachineName(i) != name {
		return 0, false
	}
	return l.machineShard(i), true
}

// labels are the labels of shard i's objects: their Cluster's name and,
// sharded, the shard's watch-filter.
func (l layout) labels(i int) map[string]string {
	out := map[string]string{clusterv1.ClusterNameLabel: l.cluster(i)}
	if l.sharded() {
		out[clusterv1.WatchLabel] = ShardFilter(i)
	}
	return out
}

// createShared creates what every shard shares: the namespace, the
// credentials Secret and the (cluster-scoped) identity allowing the
// namespace.
func createShared(ctx context.Context, c client.Client) error {
	if err := create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return err
	}
	if err := create(ctx, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "cloud-credentials"},
		Data:       map[string][]byte{"TOKEN": []byte("not-a-real-token")},
	}); err != nil {
		return err
	}
	return create(ctx, c, &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: identity},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: Namespace, Name: "cloud-credentials"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{Namespace}},
		},
	})
}

// createCluster creates a Cluster named name and its TerraformCluster, both
// labeled l.
func createCluster(ctx context.Context, c client.Client, name string, l map[string]string) error {
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: copyLabels(l)}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: string(infrav1.KindTerraformCluster), Name: name,
	}
	if err := create(ctx, c, cl); err != nil {
		return err
	}
	if err := withRetry(ctx, func() error { return c.Get(ctx, client.ObjectKeyFromObject(cl), cl) }); err != nil {
		return err
	}
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: name,
		Labels:          copyLabels(l),
		OwnerReferences: []metav1.OwnerReference{controllerRef(cl, "Cluster")},
	}}
	tc.Spec.Source.Image = moduleImage
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: identity}
	return create(ctx, c, tc)
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// markInfrastructureProvisioned does what Cluster API's Cluster controller
// does once the TerraformCluster reports provisioned.
func markInfrastructureProvisioned(ctx context.Context, c client.Client, name string) error {
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, cl); err != nil {
		return err
	}
	cl.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return c.Status().Update(ctx, cl)
}

// createMachine creates a machine of the Cluster l names: its bootstrap
// Secret, its Machine and its TerraformMachine, the last two labeled l. The
// bootstrap Secret is labeled l too when l holds a watch-filter (a sharded
// fleet), and carries no label otherwise, as in every unsharded run.
func createMachine(ctx context.Context, c client.Client, name string, l map[string]string) error {
	cluster := l[clusterv1.ClusterNameLabel]
	var secretLabels map[string]string
	if _, ok := l[clusterv1.WatchLabel]; ok {
		secretLabels = copyLabels(l)
	}
	if err := create(ctx, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name + "-bootstrap", Labels: secretLabels},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}); err != nil {
		return err
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: name, Labels: copyLabels(l),
	}}
	m.Spec.ClusterName = cluster
	m.Spec.Bootstrap.DataSecretName = ptr.To(name + "-bootstrap")
	m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: string(infrav1.KindTerraformMachine), Name: name,
	}
	m.Spec.Version = "v1.34.1"
	if err := create(ctx, c, m); err != nil {
		return err
	}
	if m.UID == "" {
		if err := withRetry(ctx, func() error { return c.Get(ctx, client.ObjectKeyFromObject(m), m) }); err != nil {
			return err
		}
	}
	tm := &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: name,
		Labels:          copyLabels(l),
		OwnerReferences: []metav1.OwnerReference{controllerRef(m, "Machine")},
	}}
	tm.Spec.Source.Image = moduleImage
	tm.Spec.IdentityRef = &infrav1.IdentityReference{Name: identity}
	return create(ctx, c, tm)
}
