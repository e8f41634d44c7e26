package jobs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// PodSecurityLevel is the Pod Security Standards profile, at its newest
// version, a Job's pod is evaluated against by Kubernetes' own
// pod-security-admission policy library (EvaluatePodSecurity). The
// restricted profile includes every baseline check.
var PodSecurityLevel = psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}

// RestrictedExceptions are the checks of the restricted profile a Job's pod
// may fail, by the library's check ID, each with the book rule that leaves
// it to the user. Every other check of the profile refuses the pod.
//
// runAsNonRoot is one (Security Model, "Pod security"; Tuning
// Jobs, "Security contexts"): the Job's defaults satisfy baseline, and
// runAsNonRoot is deliberately not defaulted because an image built FROM
// hashicorp/terraform runs as root unless it sets USER.
//
// The runAsUser check (runAsUser must not be 0) is not an exception: a
// root image runs as root with runAsUser unset, so the book's rule needs
// nothing from it, while an explicit runAsUser: 0 either puts a non-root
// image back to root or, beside runAsNonRoot: true, asks for a pod the
// kubelet will not start.
//
// The restricted capabilities check (drop ALL, add nothing but
// NET_BIND_SERVICE) is the other exception (Tuning Jobs, "Security
// contexts"): a policy's own capabilities replace the default drop: [ALL]
// wholesale, and the book leaves including ALL to the user. What the check
// guards against is still refused: any capabilities.add by CAPTF's own rule
// (Policy.Validate, the webhook), and baseline's capabilities check, which
// the restricted one no longer overrides, stays in the evaluation.
var RestrictedExceptions = map[policy.CheckID]string{
	policy.CheckRunAsNonRoot().ID:           "runAsNonRoot is left to the user: an image built FROM hashicorp/terraform runs as root (Security Model, Pod security)",
	policy.CheckCapabilitiesRestricted().ID: "a policy's own capabilities replace drop: [ALL] and keeping ALL is left to the user; any add is refused by CAPTF's own rule (Tuning Jobs, Security contexts)",
}

// NoSysctlsCheck is CAPTF's own rule beside the profile: the Job's pod sets
// no sysctl at all. Baseline allows a list of namespaced "safe" sysctls; a
// Terraform run needs none of them, so none is accepted.
const NoSysctlsCheck = "noSysctls"

// sysctlsCheck is the library's check of baseline's safe sysctls.
var sysctlsCheck = policy.CheckSysctls().ID

// podCheck is one check of the profile with an evaluator of it alone.
type podCheck struct {
	id   policy.CheckID
	eval policy.Evaluator
}

// podChecks are the library's default checks less RestrictedExceptions,
// each evaluated on its own so a failure carries its check ID. A baseline
// check that a remaining restricted check overrides at the newest version
// (seccompProfile_baseline by seccompProfile_restricted, and so on) is left
// out, as the library's own restricted evaluator leaves it out.
var podChecks = newPodChecks()

func newPodChecks() []podCheck {
	all := policy.DefaultChecks()
	overridden := map[policy.CheckID]bool{}
	for _, c := range all {
		if _, ok := RestrictedExceptions[c.ID]; ok || len(c.Versions) == 0 {
			continue
		}
		for _, id := range c.Versions[len(c.Versions)-1].OverrideCheckIDs {
			overridden[id] = true
		}
	}
	var out []podCheck
	for _, c := range all {
		if _, ok := RestrictedExceptions[c.ID]; ok || overridden[c.ID] {
			continue
		}
		e, err := policy.NewEvaluator([]policy.Check{c}, nil)
		if err != nil {
			panic(fmt.Sprintf("pod security check %s: %v", c.ID, err))
		}
		out = append(out, podCheck{id: c.ID, eval: e})
	}
	slices.SortFunc(out, func(a, b podCheck) int { return strings.Compare(string(a.id), string(b.id)) })
	return out
}

// PodSecurityProblem is one check a Job's pod fails.
type PodSecurityProblem struct {
	// Check is the library's check ID, or NoSysctlsCheck.
	Check string
	// Reason is the library's short reason ("runAsUser=0").
	Reason string
	// Detail names the pod and container fields at fault, as the library
	// words it; it may name a sysctl, a capability, a profile or SELinux
	// type, never an env value or a Secret's content.
	Detail string
}

// String names the check and the fields at fault, as in
// `pod security: restricted check runAsUser: runAsUser=0: container
// "source" must not set runAsUser=0`.
func (p PodSecurityProblem) String() string {
	profile := string(PodSecurityLevel.Level)
	if p.Check == NoSysctlsCheck {
		profile = "CAPTF"
	}
	why := p.Reason
	if p.Detail != "" {
		why += ": " + p.Detail
	}
	return "pod security: " + profile + " check " + p.Check + ": " + why
}

// EvaluatePodSecurity evaluates a Job's pod against PodSecurityLevel with
// the library's checks, less RestrictedExceptions, and against
// NoSysctlsCheck. It returns the failed checks in check ID order, nil when
// the pod passes. It is pure: the Job build, the effective policy's
// Validate and the admission webhook all decide through it.
func EvaluatePodSecurity(meta *metav1.ObjectMeta, spec *corev1.PodSpec) []PodSecurityProblem {
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	var probs []PodSecurityProblem
	sysctlsRefused := false
	for _, c := range podChecks {
		for _, r := range c.eval.EvaluatePod(PodSecurityLevel, meta, spec) {
			if r.Allowed {
				continue
			}
			probs = append(probs, PodSecurityProblem{Check: string(c.id), Reason: r.ForbiddenReason, Detail: r.ForbiddenDetail})
			if c.id == sysctlsCheck {
				sysctlsRefused = true
			}
		}
	}
	// Any sysctl, safe or not; one the library refused already is not
	// reported twice.
	if sc := spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 && !sysctlsRefused {
		names := make([]string, len(sc.Sysctls))
		for i, s := range sc.Sysctls {
			names[i] = s.Name
		}
		probs = append(probs, PodSecurityProblem{Check: NoSysctlsCheck, Reason: "sysctls",
			Detail: "pod must not set securityContext.sysctls (" + strings.Join(names, ", ") + ")"})
	}
	slices.SortStableFunc(probs, func(a, b PodSecurityProblem) int { return strings.Compare(a.Check, b.Check) })
	return probs
}

// podSecurityError is the JobPolicyInvalid error of failed checks.
func podSecurityError(probs []PodSecurityProblem) *PolicyError {
	e := &PolicyError{Problems: make([]string, len(probs))}
	for i, p := range probs {
		e.Problems[i] = p.String()
	}
	return e
}

// podSecurity evaluates the pod the policy gives a Job (policyRun): the
// pod of every Job built under it, in all that a pod security check reads.
func (p *Policy) podSecurity() []PodSecurityProblem {
	job, _ := policyRun(p).job()
	return EvaluatePodSecurity(&job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec)
}

// policyRun is an apply of a placeholder object under policy p. Its Job
// differs from a real one only in names, images, arguments and inputs,
// which no pod security check reads.
func policyRun(p *Policy) *Run {
	return &Run{
		Owner:       owner.Owner{Kind: infrav1.KindTerraformCluster, Namespace: "policy", Name: "policy", UID: "policy"},
		Policy:      p,
		Op:          infrav1.OperationApply,
		Attempt:     1,
		JobName:     "policy",
		Image:       "module",
		RunnerImage: "runner",
		Identity:    "identity",
		StateSuffix: "policy",
	}
}

// PolicyPodSecurityProblem is a check the pod of a jobs policy fails, with
// the fields of the policy at fault.
type PolicyPodSecurityProblem struct {
	PodSecurityProblem
	// Fields are paths relative to the jobs policy
	// ("securityContext.runAsUser"): each a field the policy sets whose
	// removal alone makes the check pass. Empty when no single field does
	// (the policy as a whole is at fault).
	Fields []string
}

// PolicyPodSecurity evaluates the pod a jobs policy gives a Job on its own
// (Resolve, then the pod of every Job under it: what Validate evaluates)
// and names the fields at fault. It is what the admission webhook refuses
// a jobs policy with, so admission and the Job build refuse the same pods.
// Which fields are at fault is asked of the same evaluation: a field is
// named when the policy without it passes the check.
func PolicyPodSecurity(jp *infrav1.JobPolicy) []PolicyPodSecurityProblem {
	base := Resolve(jp)
	probs := base.podSecurity()
	if len(probs) == 0 {
		return nil
	}
	leaves := policyContextLeaves(jp)
	out := make([]PolicyPodSecurityProblem, len(probs))
	for i, pr := range probs {
		out[i].PodSecurityProblem = pr
		for _, leaf := range leaves {
			without := Resolve(withoutLeaf(jp, leaf))
			if !slices.ContainsFunc(without.podSecurity(), func(q PodSecurityProblem) bool { return q.Check == pr.Check }) {
				out[i].Fields = append(out[i].Fields, leaf.path())
			}
		}
	}
	return out
}

// contextLeaf is a field a jobs policy sets in its securityContext or
// podSecurityContext: a value that is not an object (a list is one).
type contextLeaf struct {
	context string   // "securityContext" or "podSecurityContext"
	keys    []string // JSON keys below it
}

func (l contextLeaf) path() string { return l.context + "." + strings.Join(l.keys, ".") }

// policyContextLeaves lists the fields jp sets in both contexts, in order.
func policyContextLeaves(jp *infrav1.JobPolicy) []contextLeaf {
	if jp == nil {
		return nil
	}
	var out []contextLeaf
	for _, c := range [...]struct {
		name string
		v    any
	}{{"securityContext", jp.SecurityContext}, {"podSecurityContext", jp.PodSecurityContext}} {
		m := jsonObject(c.v)
		var walk func(m map[string]any, keys []string)
		walk = func(m map[string]any, keys []string) {
			names := make([]string, 0, len(m))
			for k := range m {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				path := append(slices.Clip(keys), k)
				if sub, ok := m[k].(map[string]any); ok {
					walk(sub, path)
					continue
				}
				out = append(out, contextLeaf{context: c.name, keys: path})
			}
		}
		walk(m, nil)
	}
	return out
}

// withoutLeaf is jp with the field leaf removed, and every object left
// empty by that removal removed too (an empty capabilities replaces the
// default wholesale; no capabilities keeps it).
func withoutLeaf(jp *infrav1.JobPolicy, leaf contextLeaf) *infrav1.JobPolicy {
	out := jp.DeepCopy()
	var target any
	switch leaf.context {
	case "securityContext":
		target = out.SecurityContext
	default:
		target = out.PodSecurityContext
	}
	m := jsonObject(target)
	removeKey(m, leaf.keys)
	switch leaf.context {
	case "securityContext":
		out.SecurityContext = nil
		if len(m) > 0 {
			out.SecurityContext = &corev1.SecurityContext{}
			fromJSONObject(m, out.SecurityContext)
		}
	default:
		out.PodSecurityContext = nil
		if len(m) > 0 {
			out.PodSecurityContext = &corev1.PodSecurityContext{}
			fromJSONObject(m, out.PodSecurityContext)
		}
	}
	return out
}

// removeKey deletes the value at keys from m and then every object the
// deletion left empty.
func removeKey(m map[string]any, keys []string) {
	if len(keys) == 1 {
		delete(m, keys[0])
		return
	}
	sub, ok := m[keys[0]].(map[string]any)
	if !ok {
		return
	}
	removeKey(sub, keys[1:])
	if len(sub) == 0 {
		delete(m, keys[0])
	}
}

// jsonObject is v (a *corev1.SecurityContext or *corev1.PodSecurityContext)
// as a JSON object; nil for nil.
func jsonObject(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// fromJSONObject decodes m into dst; m came from jsonObject of the same
// type, so it decodes.
func fromJSONObject(m map[string]any, dst any) {
	if b, err := json.Marshal(m); err == nil {
		_ = json.Unmarshal(b, dst)
	}
}
