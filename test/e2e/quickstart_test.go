package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestQuickStart follows the book's Quick Start on the local environment:
// an identity, then the default flavor with one control-plane machine and no
// workers on the no-op images. The TerraformCluster and the control-plane
// TerraformMachine reach Ready=True and the Cluster and Machine reach phase
// Provisioned.
func TestQuickStart(t *testing.T) {
	w := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	w.namespace(ctx, "team-a")
	w.namespace(ctx, "captf-system")
	for _, o := range w.applyTemplate(ctx, "identity.yaml", map[string]string{
		"TERRAFORM_IDENTITY_NAME": "aws-prod", "NAMESPACE": "team-a",
	}) {
		w.create(ctx, o)
	}
	objs := w.applyTemplate(ctx, "cluster-template.yaml", map[string]string{
		"CLUSTER_NAME": "my-cluster", "NAMESPACE": "team-a", "KUBERNETES_VERSION": "v1.36.3",
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "0",
		"TERRAFORM_CLUSTER_IMAGE": w.images.cluster, "TERRAFORM_MACHINE_IMAGE": w.images.machine,
		"TERRAFORM_IDENTITY_NAME": "aws-prod",
	})
	for _, o := range objs {
		withoutWebhooks(o)
		w.create(ctx, o)
	}

	tc := &infrav1.TerraformCluster{}
	w.eventually(ctx, 10*time.Minute, "the TerraformCluster to be Ready", func() (bool, string) {
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "my-cluster"}, tc); err != nil {
			return false, err.Error()
		}
		return ready(tc)
	})
	w.eventually(ctx, 10*time.Minute, "the control-plane TerraformMachine to be Ready", func() (bool, string) {
		var tms infrav1.TerraformMachineList
		if err := w.c.List(ctx, &tms, client.InNamespace("team-a")); err != nil {
			return false, err.Error()
		}
		if len(tms.Items) != 1 {
			return false, "TerraformMachines: " + itoa(len(tms.Items))
		}
		return ready(&tms.Items[0])
	})
	w.eventually(ctx, 2*time.Minute, "the Cluster and Machine to reach phase Provisioned", func() (bool, string) {
		cl := &clusterv1.Cluster{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "my-cluster"}, cl); err != nil {
			return false, err.Error()
		}
		var ms clusterv1.MachineList
		if err := w.c.List(ctx, &ms, client.InNamespace("team-a")); err != nil {
			return false, err.Error()
		}
		if len(ms.Items) != 1 {
			return false, "Machines: " + itoa(len(ms.Items))
		}
		m := ms.Items[0]
		return cl.Status.Phase == string(clusterv1.ClusterPhaseProvisioned) && m.Status.Phase == string(clusterv1.MachinePhaseProvisioned),
			"Cluster " + cl.Status.Phase + ", Machine " + m.Status.Phase
	})
}

// withoutWebhooks sets what Cluster API's defaulting webhooks would.
func withoutWebhooks(u *unstructured.Unstructured) {
	if u.GetKind() != "MachineDeployment" {
		return
	}
	cluster, _, _ := unstructured.NestedString(u.Object, "spec", "clusterName")
	labels := map[string]any{clusterv1.ClusterNameLabel: cluster, clusterv1.MachineDeploymentNameLabel: u.GetName()}
	_ = unstructured.SetNestedMap(u.Object, labels, "spec", "selector", "matchLabels")
	_ = unstructured.SetNestedMap(u.Object, labels, "spec", "template", "metadata", "labels")
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[clusterv1.ClusterNameLabel] = cluster
	u.SetLabels(l)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
