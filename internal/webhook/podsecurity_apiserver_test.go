package webhook_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestPodSecurityRefusedThroughAdmission: on a real request, a jobs policy
// whose Job pod the build would refuse (the restricted profile less
// runAsNonRoot, and any sysctl) is refused by the webhook at the field it
// sets; a root image's policy (runAsNonRoot false) is accepted.
func TestPodSecurityRefusedThroughAdmission(t *testing.T) {
	c := adminClient(t)
	ctx := context.Background()
	mustCreate(t, c, ns("podsecurity"))
	clusterTemplate := func(name string, p infrav1.JobPolicy) *infrav1.TerraformClusterTemplate {
		return &infrav1.TerraformClusterTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "podsecurity"},
			Spec: infrav1.TerraformClusterTemplateSpec{Template: infrav1.TerraformClusterTemplateResource{Spec: infrav1.TerraformClusterSpec{
				WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c"), Jobs: &p}}}}}
	}
	for _, tt := range []struct {
		name  string
		obj   client.Object
		field string
	}{
		{"a sysctl", clusterTemplate("sysctl", infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 0"}}}}),
			"spec.template.spec.jobs.podSecurityContext.sysctls"},
		{"runAsUser 0 beside runAsNonRoot", &infrav1.TerraformMachine{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "podsecurity"},
			Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("m"), Jobs: &infrav1.JobPolicy{
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}}}}},
			"spec.jobs.securityContext.runAsUser"},
		{"Unconfined AppArmor", &infrav1.TerraformMachinePool{ObjectMeta: metav1.ObjectMeta{Name: "apparmor", Namespace: "podsecurity"},
			Spec: infrav1.TerraformMachinePoolSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("p"), Jobs: &infrav1.JobPolicy{
				SecurityContext: &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}}}}},
			"spec.jobs.securityContext.appArmorProfile.type"},
		{"spc_t in a cluster's defaults", &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "spc", Namespace: "podsecurity"},
			Spec: infrav1.TerraformClusterSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: image("c")},
				IdentityRef: &infrav1.IdentityReference{Name: "id"},
				Defaults: &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{
					SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}}}}},
			"spec.defaults.jobs.podSecurityContext.seLinuxOptions.type"},
		{"Unmasked procMount", clusterTemplate("procmount", infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{
			ProcMount: ptr.To(corev1.UnmaskedProcMount)}}),
			"spec.template.spec.jobs.securityContext.procMount"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, c.Create(ctx, tt.obj), tt.field)
		})
	}

	t.Run("a root image's policy is accepted", func(t *testing.T) {
		if err := c.Create(ctx, clusterTemplate("root-image", infrav1.JobPolicy{
			PodSecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}})); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}
