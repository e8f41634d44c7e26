package jobs

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// podSecurityCase is a Job's pod: the one a jobs policy gives, with pod,
// when set, changing what no jobs policy can set.
type podSecurityCase struct {
	name   string
	policy *infrav1.JobPolicy
	pod    func(*corev1.PodSpec)
	want   []string // the failed check IDs; nil = accepted
}

func sc(s corev1.SecurityContext) *infrav1.JobPolicy { return &infrav1.JobPolicy{SecurityContext: &s} }
func psc(s corev1.PodSecurityContext) *infrav1.JobPolicy {
	return &infrav1.JobPolicy{PodSecurityContext: &s}
}

func podSecurityCases() []podSecurityCase {
	unconfined := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	apparmor := &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	spc := &corev1.SELinuxOptions{Type: "spc_t"}
	return []podSecurityCase{
		// Accepted: the defaults satisfy baseline; runAsNonRoot is left to
		// the image; a user who sets it reaches restricted.
		{name: "the default Job pod", policy: nil},
		{name: "a root image: runAsNonRoot unset", policy: sc(corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(false)})},
		{name: "a root image: runAsNonRoot false", policy: psc(corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)})},
		{name: "a fully restricted pod", policy: &infrav1.JobPolicy{
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			PodSecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		}},
		{name: "a Localhost seccomp profile and a baseline SELinux type", policy: &infrav1.JobPolicy{
			PodSecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("terraform.json")},
				SELinuxOptions: &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"}},
		}},

		// Refused: what only the webhook refused before, and what it
		// accepted.
		{name: "container seccomp Unconfined", policy: sc(corev1.SecurityContext{SeccompProfile: unconfined}), want: []string{"seccompProfile_restricted"}},
		{name: "pod seccomp Unconfined", policy: psc(corev1.PodSecurityContext{SeccompProfile: unconfined}), want: []string{"seccompProfile_restricted"}},
		{name: "container AppArmor Unconfined", policy: sc(corev1.SecurityContext{AppArmorProfile: apparmor}), want: []string{"appArmorProfile"}},
		{name: "pod AppArmor Unconfined", policy: psc(corev1.PodSecurityContext{AppArmorProfile: apparmor}), want: []string{"appArmorProfile"}},
		{name: "container SELinux type spc_t", policy: sc(corev1.SecurityContext{SELinuxOptions: spc}), want: []string{"seLinuxOptions"}},
		{name: "pod SELinux type spc_t", policy: psc(corev1.PodSecurityContext{SELinuxOptions: spc}), want: []string{"seLinuxOptions"}},
		{name: "Unmasked procMount", policy: sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}), want: []string{"procMount_restricted"}},
		{name: "a sysctl on baseline's safe list", policy: psc(corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}}), want: []string{NoSysctlsCheck}},
		{name: "an unsafe sysctl", policy: psc(corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}), want: []string{"sysctls"}},
		{name: "container runAsUser 0 beside runAsNonRoot true", policy: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(true)}), want: []string{"runAsUser"}},
		{name: "pod runAsUser 0 beside runAsNonRoot true", policy: psc(corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(true)}), want: []string{"runAsUser"}},
		{name: "runAsUser 0 alone", policy: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}), want: []string{"runAsUser"}},
		{name: "privileged", policy: sc(corev1.SecurityContext{Privileged: ptr.To(true)}), want: []string{"privileged"}},
		{name: "allowPrivilegeEscalation true", policy: sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}), want: []string{"allowPrivilegeEscalation"}},
		// Tuning Jobs: a policy's own capabilities replace drop: [ALL];
		// keeping ALL is the user's choice (adds are refused elsewhere).
		{name: "a capabilities list without drop ALL", policy: sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}})},
		{name: "a capability baseline does not allow", pod: func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, want: []string{"capabilities_baseline"}},
		{name: "a Windows host process", policy: psc(corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}), want: []string{"windowsHostProcess"}},

		// What no jobs policy sets, should the Job's pod ever carry it.
		{name: "hostNetwork", pod: func(s *corev1.PodSpec) { s.HostNetwork = true }, want: []string{"hostNamespaces"}},
		{name: "hostPID", pod: func(s *corev1.PodSpec) { s.HostPID = true }, want: []string{"hostNamespaces"}},
		{name: "a hostPath volume", pod: func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, want: []string{"restrictedVolumes"}},
		{name: "a host port", pod: func(s *corev1.PodSpec) {
			s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		}, want: []string{"hostPorts"}},
	}
}

// buildPod is the Job's pod of tt, assembled without the checks Build
// makes, so the evaluation is what decides.
func buildPod(tt podSecurityCase) *corev1.PodTemplateSpec {
	r := testRun()
	p := Effective(tt.policy, nil)
	r.Policy = &p
	job, _ := r.job()
	if tt.pod != nil {
		tt.pod(&job.Spec.Template.Spec)
	}
	return &job.Spec.Template
}

func checkIDs(probs []PodSecurityProblem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Check)
	}
	return out
}

// TestEvaluatePodSecurity: a Job's pod is held to the Pod Security
// Standards restricted profile, by the pod-security-admission library,
// but for runAsNonRoot (Security Model, "Pod security": the defaults
// satisfy baseline and runAsNonRoot is left to the image, since one built
// FROM hashicorp/terraform runs as root), and sets no sysctl. What a jobs
// policy sets is refused the same by the effective policy's Validate (the
// reconcile's JobPolicyInvalid) and by Build, naming the check and the
// field, never an env value.
func TestEvaluatePodSecurity(t *testing.T) {
	for _, tt := range podSecurityCases() {
		t.Run(tt.name, func(t *testing.T) {
			pod := buildPod(tt)
			probs := EvaluatePodSecurity(&pod.ObjectMeta, &pod.Spec)
			if got := checkIDs(probs); !slices.Equal(got, tt.want) {
				t.Fatalf("failed checks %q, want %q: %v", got, tt.want, probs)
			}
			if tt.pod != nil {
				return
			}
			r := testRun()
			p := Effective(tt.policy, nil)
			r.Policy = &p
			verr := p.Validate()
			_, _, berr := Build(r)
			if tt.want == nil {
				if verr != nil || berr != nil {
					t.Fatalf("refused: Validate = %v, Build = %v", verr, berr)
				}
				return
			}
			for name, err := range map[string]error{"Validate": verr, "Build": berr} {
				var pe *PolicyError
				if !errors.As(err, &pe) || pe.Reason() != infrav1.JobPolicyInvalidReason {
					t.Fatalf("%s = %v, want a JobPolicyInvalid PolicyError", name, err)
				}
				for _, pr := range probs {
					if !strings.Contains(err.Error(), "check "+pr.Check+": ") || !strings.Contains(err.Error(), pr.Detail) {
						t.Errorf("%s = %q does not name check %s and %q", name, err, pr.Check, pr.Detail)
					}
				}
				if strings.Contains(err.Error(), sentinel) {
					t.Errorf("%s carries an input value: %q", name, err)
				}
			}
		})
	}
}

// TestPodSecurityFollowsTheLibrary: the check-by-check evaluation refuses
// exactly the pods the library's own restricted evaluator, over its
// default checks less RestrictedExceptions, refuses, with as many failed
// checks; and each exception is a restricted check of the library that the
// default Job pod fails, so none is there for nothing and a renamed check
// fails here rather than silently letting its pods through.
func TestPodSecurityFollowsTheLibrary(t *testing.T) {
	var kept, full []policy.Check
	for _, c := range policy.DefaultChecks() {
		full = append(full, c)
		if _, ok := RestrictedExceptions[c.ID]; !ok {
			kept = append(kept, c)
		}
	}
	lessExceptions, err := policy.NewEvaluator(kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted, err := policy.NewEvaluator(full, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := func(e policy.Evaluator, pod *corev1.PodTemplateSpec) int {
		n := 0
		for _, r := range e.EvaluatePod(PodSecurityLevel, &pod.ObjectMeta, &pod.Spec) {
			if !r.Allowed {
				n++
			}
		}
		return n
	}
	for _, tt := range podSecurityCases() {
		pod := buildPod(tt)
		want := failed(lessExceptions, pod)
		got := 0
		for _, p := range EvaluatePodSecurity(&pod.ObjectMeta, &pod.Spec) {
			if p.Check != NoSysctlsCheck {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d library checks failed, the library's evaluator fails %d", tt.name, got, want)
		}
	}

	// The pod each exception is for: one the book allows and the profile
	// refuses only on that check.
	needs := map[policy.CheckID]*corev1.PodTemplateSpec{
		policy.CheckRunAsNonRoot().ID: buildPod(podSecurityCase{}),
		policy.CheckCapabilitiesRestricted().ID: buildPod(podSecurityCase{policy: &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}}}),
	}
	if len(needs) != len(RestrictedExceptions) {
		t.Fatalf("%d exceptions, %d pods that need one", len(RestrictedExceptions), len(needs))
	}
	for id, why := range RestrictedExceptions {
		def := needs[id]
		if n := failed(restricted, def); n != 1 {
			t.Errorf("the pod exception %s is for fails %d restricted checks, want only it", id, n)
		}
		i := slices.IndexFunc(full, func(c policy.Check) bool { return c.ID == id })
		if i < 0 || full[i].Level != "restricted" {
			t.Errorf("exception %q is not a restricted check of the library", id)
			continue
		}
		if why == "" {
			t.Errorf("exception %q gives no reason", id)
		}
		only, err := policy.NewEvaluator([]policy.Check{full[i]}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if failed(only, def) != 1 {
			t.Errorf("the pod the book allows passes %s: the exception is not needed", id)
		}
	}
}
