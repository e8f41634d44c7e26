package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	captfjobs "github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// TestAdmissionRefusesWhatTheBuildRefuses: a jobs policy is refused at
// admission exactly when the Job build would refuse its pod (the effective
// policy's Validate, JobPolicyInvalid), each refusal a Forbidden at the
// field the policy sets, naming the failed check (Security Model, Pod
// security: restricted less runAsNonRoot, no sysctl, no capabilities.add).
func TestAdmissionRefusesWhatTheBuildRefuses(t *testing.T) {
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	for _, tt := range []struct {
		name   string
		policy infrav1.JobPolicy
		fields []string // "" = accepted; relative to spec.jobs
	}{
		{"defaults", infrav1.JobPolicy{}, nil},
		{"root image", infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)})}, nil},
		{"restricted", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)})}, nil},
		{"explicit RuntimeDefault beside a container Unconfined", infrav1.JobPolicy{
			PodSecurityContext: psc(corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}),
			SecurityContext:    sc(corev1.SecurityContext{SeccompProfile: unconfined}),
		}, []string{"securityContext.seccompProfile.type"}},
		{"Unconfined AppArmor", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}})}, []string{"securityContext.appArmorProfile.type"}},
		{"spc_t", infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}})}, []string{"podSecurityContext.seLinuxOptions.type"}},
		{"Unmasked procMount", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)})}, []string{"securityContext.procMount"}},
		{"a sysctl", infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 0"}}})}, []string{"podSecurityContext.sysctls"}},
		{"runAsUser 0 beside runAsNonRoot", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(true)})}, []string{"securityContext.runAsUser"}},
		{"runAsUser 0 in both contexts", infrav1.JobPolicy{
			PodSecurityContext: psc(corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}),
			SecurityContext:    sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}),
		}, []string{""}},
		{"privileged", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Privileged: ptr.To(true)})}, []string{"securityContext.privileged"}},
		{"allowPrivilegeEscalation", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)})}, []string{"securityContext.allowPrivilegeEscalation"}},
		{"capabilities.add NET_BIND_SERVICE (restricted allows it, CAPTF does not)", infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}})}, []string{"securityContext.capabilities.add"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy.DeepCopy()
			errs := validateJobPolicy(field.NewPath("spec", "jobs"), p)
			eff := captfjobs.Effective(p, nil)
			verr := eff.Validate()
			if (len(errs) == 0) != (verr == nil) {
				t.Fatalf("admission refuses %v, the build %v: they differ", errs, verr)
			}
			var got []string
			for _, e := range errs {
				if e.Type != field.ErrorTypeForbidden {
					t.Errorf("%s is %s, want Forbidden", e.Field, e.Type)
				}
				got = append(got, strings.TrimPrefix(strings.TrimPrefix(e.Field, "spec.jobs"), "."))
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("refused at %q, want %q: %v", got, tt.fields, errs)
			}
			for _, pr := range captfjobs.PolicyPodSecurity(p) {
				if !strings.Contains(errs.ToAggregate().Error(), "check "+pr.Check+":") {
					t.Errorf("no refusal names check %s: %v", pr.Check, errs)
				}
			}
		})
	}
}
