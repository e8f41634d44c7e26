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

// createCluster creates the namespace, the credentials Secret, the identity
// allowing the namespace, the Cluster and its TerraformCluster.
func createCluster(ctx context.Context, c client.Client) error {
	if err := create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return err
	}
	if err := create(ctx, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "cloud-credentials"},
		Data:       map[string][]byte{"TOKEN": []byte("not-a-real-token")},
	}); err != nil {
		return err
	}
	if err := create(ctx, c, &infrav1.TerraformClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: identity},
		Spec: infrav1.TerraformClusterIdentitySpec{
			SecretRef:         infrav1.SecretReference{Namespace: Namespace, Name: "cloud-credentials"},
			AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{Namespace}},
		},
	}); err != nil {
		return err
	}
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: ClusterName}}
	cl.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: infrav1.GroupVersion.Group, Kind: string(infrav1.KindTerraformCluster), Name: ClusterName,
	}
	if err := create(ctx, c, cl); err != nil {
		return err
	}
	if err := withRetry(ctx, func() error { return c.Get(ctx, client.ObjectKeyFromObject(cl), cl) }); err != nil {
		return err
	}
	tc := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: ClusterName,
		Labels:          map[string]string{clusterv1.ClusterNameLabel: ClusterName},
		OwnerReferences: []metav1.OwnerReference{controllerRef(cl, "Cluster")},
	}}
	tc.Spec.Source.Image = moduleImage
	tc.Spec.IdentityRef = &infrav1.IdentityReference{Name: identity}
	return create(ctx, c, tc)
}

// markInfrastructureProvisioned does what Cluster API's Cluster controller
// does once the TerraformCluster reports provisioned.
func markInfrastructureProvisioned(ctx context.Context, c client.Client) error {
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: ClusterName}, cl); err != nil {
		return err
	}
	cl.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	return c.Status().Update(ctx, cl)
}

func createMachine(ctx context.Context, c client.Client, name string) error {
	if err := create(ctx, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name + "-bootstrap"},
		Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
	}); err != nil {
		return err
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: ClusterName},
	}}
	m.Spec.ClusterName = ClusterName
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
		Labels:          map[string]string{clusterv1.ClusterNameLabel: ClusterName},
		OwnerReferences: []metav1.OwnerReference{controllerRef(m, "Machine")},
	}}
	tm.Spec.Source.Image = moduleImage
	tm.Spec.IdentityRef = &infrav1.IdentityReference{Name: identity}
	return create(ctx, c, tm)
}
