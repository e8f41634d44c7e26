package env_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/captf-io/cluster-api-provider-terraform/test/env"
)

const (
	placeholderGroup = "infrastructure.placeholder.captf.io"
	capiNS           = "capi"
)

func placeholder(kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(placeholderGroup + "/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace(capiNS)
	u.SetName(name)
	return u
}

// testClusterAPIControllers checks, on an environment started with CAPI and
// the placeholder infrastructure CRDs, that Cluster API's controllers and
// webhooks act on a Cluster, a MachineDeployment and a KubeadmControlPlane
// as on a real management cluster. TestSeparateRunsRegistryCAPIAndKubeletInAChildProcess
// runs it on the child process's Cluster API, the one test/e2e uses.
func testClusterAPIControllers(t *testing.T, e *env.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := e.Client

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: capiNS}}))
	infraCluster := placeholder("PlaceholderCluster", "c1", map[string]any{})
	must(c.Create(ctx, infraCluster))
	must(c.Create(ctx, placeholder("PlaceholderMachineTemplate", "cp", map[string]any{"template": map[string]any{"spec": map[string]any{}}})))
	must(c.Create(ctx, placeholder("PlaceholderMachineTemplate", "md", map[string]any{"template": map[string]any{"spec": map[string]any{}}})))
	must(c.Create(ctx, &bootstrapv1.KubeadmConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "md", Namespace: capiNS},
	}))

	// CAPI's webhooks default the rest (cluster-name labels, rollout
	// strategy, selectors): only what a user writes is set here.
	labels := map[string]string{"pool": "md"}
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: capiNS},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: placeholderGroup, Kind: "PlaceholderCluster", Name: "c1"},
			ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "KubeadmControlPlane", Name: "c1-cp"},
		},
	}
	must(c.Create(ctx, cluster))
	must(c.Create(ctx, &controlplanev1.KubeadmControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-cp", Namespace: capiNS},
		Spec: controlplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To[int32](1),
			Version:  "v1.33.0",
			MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{
				Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: placeholderGroup, Kind: "PlaceholderMachineTemplate", Name: "cp"},
				},
			},
		},
	}))
	must(c.Create(ctx, &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "md", Namespace: capiNS,
			// The control plane never becomes reachable here, so the
			// MachineSet must not wait for it to be stable.
			Annotations: map[string]string{clusterv1.MachineSetSkipPreflightChecksAnnotation: string(clusterv1.MachineSetPreflightCheckAll)},
		},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "c1",
			Replicas:    ptr.To[int32](1),
			Selector:    metav1.LabelSelector{MatchLabels: labels},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: "c1",
					Version:     "v1.33.0",
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KubeadmConfigTemplate", Name: "md"}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: placeholderGroup, Kind: "PlaceholderMachineTemplate", Name: "md"},
				},
			},
		},
	}))

	// The webhooks ran: defaults were applied and invalid objects refused.
	md := &clusterv1.MachineDeployment{}
	must(c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: "md"}, md))
	if md.Spec.Rollout.Strategy.Type != clusterv1.RollingUpdateMachineDeploymentStrategyType ||
		md.Labels[clusterv1.ClusterNameLabel] != "c1" || md.Spec.Template.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Fatalf("MachineDeployment not defaulted by the webhook: strategy %q, labels %v, template labels %v",
			md.Spec.Rollout.Strategy.Type, md.Labels, md.Spec.Template.Labels)
	}
	even := &controlplanev1.KubeadmControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "even", Namespace: capiNS},
		Spec: controlplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To[int32](2), Version: "v1.33.0",
			MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: placeholderGroup, Kind: "PlaceholderMachineTemplate", Name: "cp"},
			}},
		},
	}
	if err := c.Create(ctx, even); err == nil || !strings.Contains(err.Error(), "admission webhook") {
		t.Fatalf("a KubeadmControlPlane with an even replica count was not refused by the webhook: %v", err)
	}

	eventually := func(what string, cond func() (bool, error)) {
		t.Helper()
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
		if err != nil {
			t.Fatalf("%s: %v (last error: %v)", what, err, last)
		}
	}
	ownedBy := func(obj client.Object, kind, name string) bool {
		for _, o := range obj.GetOwnerReferences() {
			if o.Kind == kind && o.Name == name {
				return true
			}
		}
		return false
	}

	eventually("the Cluster owns its infrastructure cluster", func() (bool, error) {
		u := placeholder("PlaceholderCluster", "c1", nil)
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		return ownedBy(u, "Cluster", "c1"), nil
	})
	eventually("the Cluster owns its KubeadmControlPlane", func() (bool, error) {
		kcp := &controlplanev1.KubeadmControlPlane{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: "c1-cp"}, kcp); err != nil {
			return false, err
		}
		return ownedBy(kcp, "Cluster", "c1"), nil
	})
	eventually("the Cluster owns its MachineDeployment", func() (bool, error) {
		md := &clusterv1.MachineDeployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: "md"}, md); err != nil {
			return false, err
		}
		return ownedBy(md, "Cluster", "c1"), nil
	})

	// Play the infrastructure provider: endpoint and provisioned.
	must(c.Get(ctx, client.ObjectKeyFromObject(infraCluster), infraCluster))
	must(unstructured.SetNestedMap(infraCluster.Object, map[string]any{"host": "127.0.0.1", "port": int64(6443)}, "spec", "controlPlaneEndpoint"))
	must(c.Update(ctx, infraCluster))
	must(unstructured.SetNestedField(infraCluster.Object, true, "status", "initialization", "provisioned"))
	must(c.Status().Update(ctx, infraCluster))

	eventually("the Cluster reports its infrastructure provisioned and endpoint", func() (bool, error) {
		got := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), got); err != nil {
			return false, err
		}
		return ptr.Deref(got.Status.Initialization.InfrastructureProvisioned, false) &&
			got.Spec.ControlPlaneEndpoint.Host == "127.0.0.1", nil
	})

	var cpMachine clusterv1.Machine
	eventually("the KubeadmControlPlane creates a control-plane Machine", func() (bool, error) {
		var ms clusterv1.MachineList
		if err := c.List(ctx, &ms, client.InNamespace(capiNS), client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
			return false, err
		}
		if len(ms.Items) == 0 {
			return false, nil
		}
		cpMachine = ms.Items[0]
		return ownedBy(&cpMachine, "KubeadmControlPlane", "c1-cp"), nil
	})
	if cpMachine.Spec.Bootstrap.ConfigRef.Kind != "KubeadmConfig" {
		t.Fatalf("control-plane Machine bootstrap ref %+v, want a KubeadmConfig", cpMachine.Spec.Bootstrap.ConfigRef)
	}
	eventually("the control-plane Machine's infrastructure machine is cloned from the template and owned", func() (bool, error) {
		u := placeholder("PlaceholderMachine", cpMachine.Spec.InfrastructureRef.Name, nil)
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		return ownedBy(u, "Machine", cpMachine.Name), nil
	})
	var secretName string
	eventually("the kubeadm bootstrap provider writes the first control-plane Machine's bootstrap Secret", func() (bool, error) {
		kc := &bootstrapv1.KubeadmConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpMachine.Spec.Bootstrap.ConfigRef.Name}, kc); err != nil {
			return false, err
		}
		if !ownedBy(kc, "Machine", cpMachine.Name) {
			return false, nil
		}
		secretName = kc.Status.DataSecretName
		return secretName != "", nil
	})
	secret := &corev1.Secret{}
	must(c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: secretName}, secret))
	if len(secret.Data["value"]) == 0 || string(secret.Data["format"]) != "cloud-config" {
		t.Fatalf("bootstrap Secret %s has format %q and %d bytes of data", secretName, secret.Data["format"], len(secret.Data["value"]))
	}
	eventually("the Machine picks up its bootstrap data Secret", func() (bool, error) {
		m := &clusterv1.Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(&cpMachine), m); err != nil {
			return false, err
		}
		return ptr.Deref(m.Spec.Bootstrap.DataSecretName, "") == secretName, nil
	})

	eventually("the MachineDeployment's MachineSet creates a worker Machine with its KubeadmConfig", func() (bool, error) {
		var ms clusterv1.MachineList
		if err := c.List(ctx, &ms, client.InNamespace(capiNS), client.MatchingLabels{"pool": "md"}); err != nil {
			return false, err
		}
		if len(ms.Items) == 0 {
			return false, nil
		}
		m := ms.Items[0]
		owner := metav1.GetControllerOf(&m)
		if owner == nil || owner.Kind != "MachineSet" {
			return false, nil
		}
		var set clusterv1.MachineSet
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: owner.Name}, &set); err != nil {
			return false, err
		}
		if !ownedBy(&set, "MachineDeployment", "md") {
			return false, nil
		}
		kc := &bootstrapv1.KubeadmConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: m.Spec.Bootstrap.ConfigRef.Name}, kc); err != nil {
			return false, err
		}
		return m.Spec.Bootstrap.ConfigRef.Kind == "KubeadmConfig" && ownedBy(kc, "Machine", m.Name), nil
	})

	total, per, err := e.RSS()
	must(err)
	t.Logf("resident memory: %d MiB total; %v", total>>20, mib(per))
}
