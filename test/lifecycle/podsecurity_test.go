package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// offendingPolicies are jobs policies whose pod fails the Pod Security
// Standards restricted profile (less runAsNonRoot) or sets a sysctl, with
// the check and the field the refusal must name.
func offendingPolicies() []struct {
	name, check, field string
	policy             infrav1.JobPolicy
} {
	return []struct {
		name, check, field string
		policy             infrav1.JobPolicy
	}{
		{"seccomp_unconfined", "seccompProfile_restricted", "securityContext.seccompProfile.type",
			infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}}},
		{"apparmor_unconfined", "appArmorProfile", "AppArmor profile",
			infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}}},
		{"selinux_spc_t", "seLinuxOptions", "securityContext.seLinuxOptions",
			infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}}},
		{"procmount_unmasked", "procMount_restricted", "securityContext.procMount",
			infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}}},
		{"safe_sysctl", jobs.NoSysctlsCheck, "securityContext.sysctls",
			infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 0"}}}}},
		{"root_beside_runasnonroot", "runAsUser", "runAsUser=0",
			infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}}},
	}
}

// TestPodSecurityWithoutTheWebhook reproduces an object the webhook never
// saw (stored before it was installed, or keeping an old value through its
// ratchet): this suite has no webhook, so each offending jobs policy is
// stored as it is. Its pod is never created: ApplyJobSucceeded is
// False/JobPolicyInvalid naming the check and the field, and nothing else
// is written (no Job, no per-run Secret, no durable inputs, no move block,
// state untouched). Fixing the policy starts the apply.
func TestPodSecurityWithoutTheWebhook(t *testing.T) {
	t.Parallel()
	for _, tt := range offendingPolicies() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.newCluster("prod", func(tc *infrav1.TerraformCluster) { tc.Spec.Jobs = tt.policy.DeepCopy() })
			e.mustPass(w.TC)
			e.mustPass(w.TC)
			e.wantRefusedPod(w.TC, tt.check, tt.field)
			if e.durable(w.TC) != nil {
				t.Error("durable inputs written for a Job that is not created")
			}
			if _, ok := w.TC.Annotations[infrav1.BlockMoveAnnotation]; ok {
				t.Error("move blocked for a Job that is not created")
			}

			e.update(w.TC, func() { w.TC.Spec.Jobs = nil })
			e.mustPass(w.TC)
			e.wantJob(w.TC, infrav1.OperationApply)
		})
	}

	// A cluster with applied state whose policy changed without the
	// webhook: its state stays as it was.
	t.Run("applied_cluster_keeps_its_state", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		tt := offendingPolicies()[0]
		e.update(w.TC, func() { w.TC.Spec.Jobs = tt.policy.DeepCopy() })
		before := e.stateSecret(w.TC)
		e.mustPass(w.TC)
		e.mustPass(w.TC)
		e.wantRefusedPod(w.TC, tt.check, tt.field)
		if after := e.stateSecret(w.TC); after == nil || after.ResourceVersion != before.ResourceVersion {
			t.Error("the state Secret changed though no Job ran")
		}
	})

	// The value reaches a machine through its cluster's spec.defaults.jobs,
	// a merge admission never sees.
	t.Run("machine_through_cluster_defaults", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		w := e.provisionedCluster("prod")
		tt := offendingPolicies()[4]
		e.update(w.TC, func() { w.TC.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: tt.policy.DeepCopy()} })
		mw := e.newMachine(w, "prod-md-0", nil)
		e.mustPass(mw.TM)
		e.mustPass(mw.TM)
		e.wantRefusedPod(mw.TM, tt.check, tt.field)
	})
}

// wantRefusedPod asserts obj got no Job and no per-run Secret, and that
// ApplyJobSucceeded is False/JobPolicyInvalid naming check and field.
func (e *env) wantRefusedPod(o client.Object, check, field string) {
	e.t.Helper()
	if js := e.jobsOf(o); len(js) != 0 {
		e.t.Fatalf("a Job was created for a pod that fails pod security: %v", jobNames(js))
	}
	if s := e.secretsWithPrefix(jobs.RunSecretPrefix); len(s) != 0 {
		e.t.Fatalf("a per-run Secret %s was written for a pod that fails pod security", s[0].Name)
	}
	c := e.wantCondition(o, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.JobPolicyInvalidReason)
	if !strings.Contains(c.Message, "check "+check+":") || !strings.Contains(c.Message, field) {
		e.t.Fatalf("JobPolicyInvalid message %q names neither check %s nor %s", c.Message, check, field)
	}
}
