package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestPlacementRefusedThroughAdmission: on a real request, a jobs policy
// whose podMetadata uses a key of CAPTF's or of the Job controller's is
// refused by the webhook at that key, as is an invalid label or toleration;
// a placement that keeps to the rules is stored and read back whole.
func TestPlacementRefusedThroughAdmission(t *testing.T) {
	c := adminClient(t)
	ctx := context.Background()
	mustCreate(t, c, ns("placement"))
	machine := func(name string, p infrav1.JobPolicy) *infrav1.TerraformMachine {
		return &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "placement"},
			Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("m"), Jobs: &p}}}
	}
	for _, tt := range []struct {
		name  string
		obj   client.Object
		field string
	}{
		{"a captf.io pod label", machine("managed", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Labels: map[string]string{infrav1.ManagedLabel: "false"}}}),
			"spec.jobs.podMetadata.labels[captf.io/managed]"},
		{"CAPTF's op label", machine("op", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Labels: map[string]string{infrav1.OpLabel: "destroy"}}}),
			"spec.jobs.podMetadata.labels[captf.infrastructure.cluster.x-k8s.io/op]"},
		{"a captf.io pod annotation in a cluster's defaults", &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "placement"},
			Spec: infrav1.TerraformClusterSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c")},
				IdentityRef: &infrav1.IdentityReference{Name: "id"},
				Defaults: &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
					Annotations: map[string]string{infrav1.InputsHashAnnotation: "h2:x"}}}}}},
			"spec.defaults.jobs.podMetadata.annotations[captf.io/inputs-hash]"},
		{"the autoscaler's safe-to-evict annotation", machine("evict", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Annotations: map[string]string{infrav1.SafeToEvictAnnotation: "true"}}}),
			"spec.jobs.podMetadata.annotations[cluster-autoscaler.kubernetes.io/safe-to-evict]"},
		{"the Job controller's job-name label", machine("jobname", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Labels: map[string]string{"batch.kubernetes.io/job-name": "x"}}}),
			"spec.jobs.podMetadata.labels[batch.kubernetes.io/job-name]"},
		{"an invalid label value", machine("value", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Labels: map[string]string{"team": "not a value"}}}),
			"spec.jobs.podMetadata.labels"},
		{"a toleration with Exists and a value", machine("toleration", infrav1.JobPolicy{Tolerations: []corev1.Toleration{
			{Key: "pool", Operator: corev1.TolerationOpExists, Value: "x"}}}),
			"spec.jobs.tolerations[0].value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, c.Create(ctx, tt.obj), tt.field)
		})
	}

	t.Run("a placement within the rules is stored whole", func(t *testing.T) {
		p := infrav1.JobPolicy{
			PodMetadata:       &infrav1.PodMetadata{Labels: map[string]string{"team": "platform"}, Annotations: map[string]string{"example.com/cost-center": "c-17"}},
			NodeSelector:      map[string]string{"example.com/pool": "terraform"},
			Tolerations:       []corev1.Toleration{{Key: "example.com/pool", Operator: corev1.TolerationOpEqual, Value: "terraform", Effect: corev1.TaintEffectNoSchedule}},
			PriorityClassName: "infra-low",
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
				WhenUnsatisfiable: corev1.ScheduleAnyway}},
		}
		m := machine("placed", p)
		if err := c.Create(ctx, m); err != nil {
			t.Fatalf("refused: %v", err)
		}
		got := &infrav1.TerraformMachine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		if j := got.Spec.Jobs; j.PodMetadata.Labels["team"] != "platform" || j.NodeSelector["example.com/pool"] != "terraform" ||
			len(j.Tolerations) != 1 || j.PriorityClassName != "infra-low" || len(j.TopologySpreadConstraints) != 1 {
			t.Errorf("stored jobs policy = %+v", j)
		}
	})
}
