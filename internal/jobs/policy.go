package jobs

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// The built-in JobPolicy defaults (book: Tuning Jobs; reference-facts §11.2).
const (
	DefaultSuccessfulJobsHistoryLimit int32 = 3
	DefaultFailedJobsHistoryLimit     int32 = 3
	DefaultActiveDeadlineSeconds      int64 = 3600
	DefaultLockTimeoutSeconds         int32 = 300

	// MaxActiveDeadlineSeconds is one day.
	MaxActiveDeadlineSeconds int64 = 86400
	// MaxLockTimeoutSeconds is one hour.
	MaxLockTimeoutSeconds int32 = 3600
	// MaxHistoryLimit bounds both history limits.
	MaxHistoryLimit int32 = 100
)

// Parsed once: resource.MustParse allocates.
var (
	cpu250m   = resource.MustParse("250m")
	mem512Mi  = resource.MustParse("512Mi")
	mem2Gi    = resource.MustParse("2Gi")
	cpu10m    = resource.MustParse("10m")
	cpu100m   = resource.MustParse("100m")
	mem32Mi   = resource.MustParse("32Mi")
	mem64Mi   = resource.MustParse("64Mi")
	seccompRD = corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
)

// DefaultResources are the module container's resources when spec.jobs
// sets none: 250m CPU and 512Mi memory requested, a 2Gi memory limit and
// deliberately no CPU limit (book: Tuning Jobs, "Resources": throttling a
// slow apply is worse than a slow apply).
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    cpu250m,
			corev1.ResourceMemory: mem512Mi,
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory: mem2Gi,
		},
	}
}

// RunnerResources are the init container's fixed resources.
func RunnerResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    cpu10m,
			corev1.ResourceMemory: mem32Mi,
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    cpu100m,
			corev1.ResourceMemory: mem64Mi,
		},
	}
}

// DefaultSecurityContext is the module container's securityContext before
// spec.jobs.securityContext is applied over it: no privilege escalation,
// every capability dropped, a read-only root filesystem. runAsNonRoot is
// left to the user (an image built from hashicorp/terraform runs as root).
func DefaultSecurityContext() corev1.SecurityContext {
	return corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

// RunnerSecurityContext is the init container's fixed securityContext:
// non-root as the runner's UID and fully locked down.
func RunnerSecurityContext() corev1.SecurityContext {
	return corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(RunnerUID),
	}
}

// Policy is the effective Job policy of one object: spec.jobs merged with a
// cluster's spec.defaults.jobs where that applies, and every unset field
// filled with its built-in default. It is resolved at reconcile time and
// never persisted.
type Policy struct {
	SuccessfulJobsHistoryLimit int32
	FailedJobsHistoryLimit     int32
	ActiveDeadlineSeconds      int64
	LockTimeoutSeconds         int32
	ServiceAccountName         string
	ImagePullSecrets           []corev1.LocalObjectReference
	// Resources of the module container.
	Resources corev1.ResourceRequirements
	// Env is the user environment with every TF_* and KUBE_* entry dropped.
	Env []corev1.EnvVar
	// DroppedEnv names, in order and without repeats, the env entries
	// dropped from Env (names only, never values), for the EnvVarDropped
	// event.
	DroppedEnv []string
	// SecurityContext of the module container: the defaults with the
	// user's fields applied over them.
	SecurityContext corev1.SecurityContext
	// PodSecurityContext of the pod: the user's, with seccompProfile
	// RuntimeDefault and fsGroup 65532 filled in when unset.
	PodSecurityContext corev1.PodSecurityContext
	// Placement is where the pod runs and the labels and annotations it
	// carries besides CAPTF's.
	Placement Placement
}

// ClusterDefaults returns a TerraformCluster's spec.defaults.jobs, or nil.
// It is what a machine's or pool's policy is merged over.
func ClusterDefaults(tc *infrav1.TerraformCluster) *infrav1.JobPolicy {
	if tc == nil || tc.Spec.Defaults == nil {
		return nil
	}
	return tc.Spec.Defaults.Jobs
}

// Effective is the effective policy of an object whose spec.jobs is own.
// For a TerraformMachine or TerraformMachinePool, clusterDefaults is its
// cluster's spec.defaults.jobs (nil when the cluster is unknown or sets
// none); for a TerraformCluster it must be nil: a cluster's own policy never
// inherits its defaults, which are for its machines and pools only.
func Effective(own, clusterDefaults *infrav1.JobPolicy) Policy {
	return Resolve(Merge(own, clusterDefaults))
}

// Merge merges a machine's or pool's spec.jobs over its cluster's
// spec.defaults.jobs, field by field (book: Tuning Jobs, "Inheriting from a
// cluster's defaults"): a field own sets wins, an unset one falls back to
// the default; env is merged by name (own's entries first, then the
// default's entries whose name own does not use); imagePullSecrets are the
// union of both, own's first, without duplicates; resources,
// securityContext and podSecurityContext are each taken whole from one side;
// the placement fields as mergePlacement says (podMetadata by key,
// the scheduling fields whole). The result shares nothing with its inputs.
// Either side may be nil.
func Merge(own, defaults *infrav1.JobPolicy) *infrav1.JobPolicy {
	if own == nil && defaults == nil {
		return nil
	}
	if defaults == nil {
		return own.DeepCopy()
	}
	if own == nil {
		return defaults.DeepCopy()
	}
	out := &infrav1.JobPolicy{
		SuccessfulJobsHistoryLimit: firstInt32(own.SuccessfulJobsHistoryLimit, defaults.SuccessfulJobsHistoryLimit),
		FailedJobsHistoryLimit:     firstInt32(own.FailedJobsHistoryLimit, defaults.FailedJobsHistoryLimit),
		LockTimeoutSeconds:         firstInt32(own.LockTimeoutSeconds, defaults.LockTimeoutSeconds),
		ServiceAccountName:         own.ServiceAccountName,
	}
	switch {
	case own.ActiveDeadlineSeconds != nil && *own.ActiveDeadlineSeconds != 0:
		out.ActiveDeadlineSeconds = ptr.To(*own.ActiveDeadlineSeconds)
	case defaults.ActiveDeadlineSeconds != nil:
		out.ActiveDeadlineSeconds = ptr.To(*defaults.ActiveDeadlineSeconds)
	}
	if out.ServiceAccountName == "" {
		out.ServiceAccountName = defaults.ServiceAccountName
	}

	// env: by name, own first.
	if len(own.Env)+len(defaults.Env) > 0 {
		out.Env = make([]corev1.EnvVar, 0, len(own.Env)+len(defaults.Env))
		used := make(map[string]struct{}, len(own.Env))
		for i := range own.Env {
			out.Env = append(out.Env, *own.Env[i].DeepCopy())
			used[own.Env[i].Name] = struct{}{}
		}
		for i := range defaults.Env {
			if _, ok := used[defaults.Env[i].Name]; ok {
				continue
			}
			out.Env = append(out.Env, *defaults.Env[i].DeepCopy())
		}
	}

	// imagePullSecrets: union, own first.
	out.ImagePullSecrets = unionPullSecrets(own.ImagePullSecrets, defaults.ImagePullSecrets)

	// Whole-field replacements.
	if own.Resources != nil {
		out.Resources = own.Resources.DeepCopy()
	} else if defaults.Resources != nil {
		out.Resources = defaults.Resources.DeepCopy()
	}
	if own.SecurityContext != nil {
		out.SecurityContext = own.SecurityContext.DeepCopy()
	} else if defaults.SecurityContext != nil {
		out.SecurityContext = defaults.SecurityContext.DeepCopy()
	}
	if own.PodSecurityContext != nil {
		out.PodSecurityContext = own.PodSecurityContext.DeepCopy()
	} else if defaults.PodSecurityContext != nil {
		out.PodSecurityContext = defaults.PodSecurityContext.DeepCopy()
	}
	mergePlacement(out, own, defaults)
	return out
}

// Resolve fills every field p leaves unset with its built-in default, drops
// the reserved TF_* and KUBE_* env entries, applies the user's
// securityContext over the defaults and fills the pod defaults. p may be
// nil (every default). The result shares nothing with p.
func Resolve(p *infrav1.JobPolicy) Policy {
	out := Policy{
		SuccessfulJobsHistoryLimit: DefaultSuccessfulJobsHistoryLimit,
		FailedJobsHistoryLimit:     DefaultFailedJobsHistoryLimit,
		ActiveDeadlineSeconds:      DefaultActiveDeadlineSeconds,
		LockTimeoutSeconds:         DefaultLockTimeoutSeconds,
		ServiceAccountName:         DefaultServiceAccount,
		Resources:                  DefaultResources(),
		SecurityContext:            DefaultSecurityContext(),
	}
	if p != nil {
		if p.SuccessfulJobsHistoryLimit != nil {
			out.SuccessfulJobsHistoryLimit = *p.SuccessfulJobsHistoryLimit
		}
		if p.FailedJobsHistoryLimit != nil {
			out.FailedJobsHistoryLimit = *p.FailedJobsHistoryLimit
		}
		if p.ActiveDeadlineSeconds != nil && *p.ActiveDeadlineSeconds != 0 {
			out.ActiveDeadlineSeconds = *p.ActiveDeadlineSeconds
		}
		if p.LockTimeoutSeconds != nil {
			out.LockTimeoutSeconds = *p.LockTimeoutSeconds
		}
		if p.ServiceAccountName != "" {
			out.ServiceAccountName = p.ServiceAccountName
		}
		out.ImagePullSecrets = unionPullSecrets(p.ImagePullSecrets, nil)
		if p.Resources != nil {
			out.Resources = *p.Resources.DeepCopy()
		}
		out.Env, out.DroppedEnv = filterEnv(p.Env)
		if p.SecurityContext != nil {
			overlaySecurityContext(&out.SecurityContext, p.SecurityContext)
		}
		if p.PodSecurityContext != nil {
			out.PodSecurityContext = *p.PodSecurityContext.DeepCopy()
		}
		out.Placement = PolicyPlacement(p)
	}
	if out.PodSecurityContext.SeccompProfile == nil {
		sp := seccompRD
		out.PodSecurityContext.SeccompProfile = &sp
	}
	if out.PodSecurityContext.FSGroup == nil {
		out.PodSecurityContext.FSGroup = ptr.To(RunnerUID)
	}
	return out
}

// ErrPolicyInvalid matches (errors.Is) every error Validate returns.
var ErrPolicyInvalid = errors.New("job policy is invalid")

// PolicyError lists why an effective policy cannot build a Job. Its reason
// is JobPolicyInvalid; its message names fields and numbers, never a value
// of an env entry or a Secret.
type PolicyError struct {
	Problems []string
}

func (e *PolicyError) Error() string {
	return "job policy is invalid: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrPolicyInvalid) true.
func (e *PolicyError) Is(target error) bool { return target == ErrPolicyInvalid }

// Reason is the ApplyJobSucceeded reason the error maps to.
func (e *PolicyError) Reason() string { return infrav1.JobPolicyInvalidReason }

// Validate checks the effective policy (reference-facts §8.2): the lock
// timeout must be below the deadline, so a lock wait alone cannot fill the
// Job; the numbers must be within their API bounds; the module container
// may not add capabilities; and the pod the policy gives a Job must pass
// EvaluatePodSecurity (the restricted profile less RestrictedExceptions,
// and no sysctl); and the placement must pass Placement.Validate (no pod
// label or annotation key of CAPTF's, valid keys, values and scheduling
// fields). The admission webhook refuses the same on each policy;
// this repeats it on the merge, which admission never sees, and on an
// object stored before the webhook refused it. It returns a *PolicyError
// or nil.
func (p *Policy) Validate() error {
	var probs []string
	if int64(p.LockTimeoutSeconds) >= p.ActiveDeadlineSeconds {
		probs = append(probs, fmt.Sprintf("lockTimeoutSeconds %d is not below activeDeadlineSeconds %d", p.LockTimeoutSeconds, p.ActiveDeadlineSeconds))
	}
	if p.ActiveDeadlineSeconds < 1 || p.ActiveDeadlineSeconds > MaxActiveDeadlineSeconds {
		probs = append(probs, fmt.Sprintf("activeDeadlineSeconds %d is outside 1..%d", p.ActiveDeadlineSeconds, MaxActiveDeadlineSeconds))
	}
	if p.LockTimeoutSeconds < 0 || p.LockTimeoutSeconds > MaxLockTimeoutSeconds {
		probs = append(probs, fmt.Sprintf("lockTimeoutSeconds %d is outside 0..%d", p.LockTimeoutSeconds, MaxLockTimeoutSeconds))
	}
	if p.SuccessfulJobsHistoryLimit < 0 || p.SuccessfulJobsHistoryLimit > MaxHistoryLimit {
		probs = append(probs, fmt.Sprintf("successfulJobsHistoryLimit %d is outside 0..%d", p.SuccessfulJobsHistoryLimit, MaxHistoryLimit))
	}
	if p.FailedJobsHistoryLimit < 0 || p.FailedJobsHistoryLimit > MaxHistoryLimit {
		probs = append(probs, fmt.Sprintf("failedJobsHistoryLimit %d is outside 0..%d", p.FailedJobsHistoryLimit, MaxHistoryLimit))
	}
	if sc := &p.SecurityContext; sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		probs = append(probs, "securityContext.capabilities.add must be empty")
	}
	for _, pr := range p.podSecurity() {
		probs = append(probs, pr.String())
	}
	for _, e := range p.Placement.Validate(nil) {
		probs = append(probs, e.Error())
	}
	if len(probs) == 0 {
		return nil
	}
	return &PolicyError{Problems: probs}
}

// overlaySecurityContext applies every field the user set over dst.
// capabilities is replaced wholesale: a user list without ALL in drop keeps
// no capability dropped (book: Tuning Jobs, "Security contexts").
func overlaySecurityContext(dst *corev1.SecurityContext, user *corev1.SecurityContext) {
	u := user.DeepCopy()
	if u.Capabilities != nil {
		dst.Capabilities = u.Capabilities
	}
	if u.Privileged != nil {
		dst.Privileged = u.Privileged
	}
	if u.SELinuxOptions != nil {
		dst.SELinuxOptions = u.SELinuxOptions
	}
	if u.WindowsOptions != nil {
		dst.WindowsOptions = u.WindowsOptions
	}
	if u.RunAsUser != nil {
		dst.RunAsUser = u.RunAsUser
	}
	if u.RunAsGroup != nil {
		dst.RunAsGroup = u.RunAsGroup
	}
	if u.RunAsNonRoot != nil {
		dst.RunAsNonRoot = u.RunAsNonRoot
	}
	if u.ReadOnlyRootFilesystem != nil {
		dst.ReadOnlyRootFilesystem = u.ReadOnlyRootFilesystem
	}
	if u.AllowPrivilegeEscalation != nil {
		dst.AllowPrivilegeEscalation = u.AllowPrivilegeEscalation
	}
	if u.ProcMount != nil {
		dst.ProcMount = u.ProcMount
	}
	if u.SeccompProfile != nil {
		dst.SeccompProfile = u.SeccompProfile
	}
	if u.AppArmorProfile != nil {
		dst.AppArmorProfile = u.AppArmorProfile
	}
}

// filterEnv drops every TF_* and KUBE_* entry and returns the rest (deep
// copies) and the dropped names, in order, each once.
func filterEnv(env []corev1.EnvVar) (kept []corev1.EnvVar, dropped []string) {
	for i := range env {
		name := env[i].Name
		if reservedEnv(name) {
			seen := false
			for _, d := range dropped {
				if d == name {
					seen = true
					break
				}
			}
			if !seen {
				dropped = append(dropped, name)
			}
			continue
		}
		if kept == nil {
			kept = make([]corev1.EnvVar, 0, len(env)-i)
		}
		kept = append(kept, *env[i].DeepCopy())
	}
	return kept, dropped
}

// unionPullSecrets returns a followed by the entries of b it lacks, with no
// duplicate or empty name.
func unionPullSecrets(a, b []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]corev1.LocalObjectReference, 0, len(a)+len(b))
	for _, list := range [2][]corev1.LocalObjectReference{a, b} {
	next:
		for _, r := range list {
			if r.Name == "" {
				continue
			}
			for _, have := range out {
				if have.Name == r.Name {
					continue next
				}
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func firstInt32(a, b *int32) *int32 {
	switch {
	case a != nil:
		return ptr.To(*a)
	case b != nil:
		return ptr.To(*b)
	}
	return nil
}
