package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Placement is where a Job's pod runs and what it carries for other
// controllers: the placement fields of a JobPolicy (book: Tuning Jobs,
// "Where runner pods run"), as the effective policy holds them.
type Placement struct {
	// PodLabels and PodAnnotations are added to the pod template under
	// CAPTF's own, whose keys they may not use (ReservedPodMetadataKey).
	PodLabels      map[string]string
	PodAnnotations map[string]string

	NodeSelector              map[string]string
	Tolerations               []corev1.Toleration
	Affinity                  *corev1.Affinity
	TopologySpreadConstraints []corev1.TopologySpreadConstraint
	PriorityClassName         string
}

// Bounds of the placement fields, as the CRD schema declares them.
const (
	MaxPodMetadataEntries    = 32
	MaxNodeSelectorEntries   = 32
	MaxTolerations           = 32
	MaxTopologySpreadEntries = 8
)

// Domains and keys a JobPolicy's podMetadata may not use, because CAPTF or
// the Job controller sets them on the Job's pod, or CAPTF selects and
// recognises its objects by them (book: Tuning Jobs, "Where runner pods
// run"; reference-facts §7.2, §8.1).
var (
	// reservedDomains: a key whose prefix is one of these or a subdomain of
	// one.
	reservedDomains = []string{
		"captf.io",                              // captf.io/managed and every CAPTF annotation
		"captf.infrastructure.cluster.x-k8s.io", // owner-kind, owner-name, op, attempt
		"batch.kubernetes.io",                   // the Job controller's job-name, controller-uid, …
	}
	// reservedKeys: these exact keys.
	reservedKeys = []string{
		"cluster.x-k8s.io/cluster-name", // the owner's cluster (clusterv1.ClusterNameLabel)
		infrav1.SafeToEvictAnnotation,   // the pod is never evicted by the autoscaler
		"job-name", "controller-uid",    // the Job controller's legacy selector labels
	}
)

// ReservedPodMetadataKey says why a pod label or annotation key is CAPTF's
// or the Job controller's, "" when a JobPolicy may set it.
func ReservedPodMetadataKey(key string) string {
	if slices.Contains(reservedKeys, key) {
		return fmt.Sprintf("%q is set on the Job's pod by CAPTF or the Job controller", key)
	}
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	for _, d := range reservedDomains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return fmt.Sprintf("the domain %s is reserved for CAPTF and the Job controller", d)
		}
	}
	return ""
}

// PolicyPlacement is the placement a JobPolicy sets (nothing for nil).
func PolicyPlacement(p *infrav1.JobPolicy) Placement {
	if p == nil {
		return Placement{}
	}
	out := Placement{
		NodeSelector:      maps.Clone(p.NodeSelector),
		PriorityClassName: p.PriorityClassName,
	}
	if p.PodMetadata != nil {
		out.PodLabels = maps.Clone(p.PodMetadata.Labels)
		out.PodAnnotations = maps.Clone(p.PodMetadata.Annotations)
	}
	out.Tolerations = copyTolerations(p.Tolerations)
	if p.Affinity != nil {
		out.Affinity = p.Affinity.DeepCopy()
	}
	out.TopologySpreadConstraints = copySpread(p.TopologySpreadConstraints)
	return out
}

// mergePlacement sets out's placement fields from own over defaults (book:
// Tuning Jobs, "Inheriting from a cluster's defaults"): podMetadata's
// labels and annotations are merged by key, own's value winning;
// nodeSelector, tolerations, affinity and topologySpreadConstraints are
// each taken whole from own when it sets them, else from defaults (a
// machine that places its Jobs elsewhere does not keep half of its
// cluster's placement); priorityClassName is own's unless empty.
func mergePlacement(out, own, defaults *infrav1.JobPolicy) {
	var labels, annotations map[string]string
	for _, side := range [...]*infrav1.JobPolicy{defaults, own} {
		if side.PodMetadata == nil {
			continue
		}
		labels = mergeKeys(labels, side.PodMetadata.Labels)
		annotations = mergeKeys(annotations, side.PodMetadata.Annotations)
	}
	if labels != nil || annotations != nil {
		out.PodMetadata = &infrav1.PodMetadata{Labels: labels, Annotations: annotations}
	}
	pick := own
	if own.NodeSelector == nil {
		pick = defaults
	}
	out.NodeSelector = maps.Clone(pick.NodeSelector)
	pick = own
	if own.Tolerations == nil {
		pick = defaults
	}
	out.Tolerations = copyTolerations(pick.Tolerations)
	if own.Affinity != nil {
		out.Affinity = own.Affinity.DeepCopy()
	} else if defaults.Affinity != nil {
		out.Affinity = defaults.Affinity.DeepCopy()
	}
	pick = own
	if own.TopologySpreadConstraints == nil {
		pick = defaults
	}
	out.TopologySpreadConstraints = copySpread(pick.TopologySpreadConstraints)
	out.PriorityClassName = own.PriorityClassName
	if out.PriorityClassName == "" {
		out.PriorityClassName = defaults.PriorityClassName
	}
}

func copyTolerations(in []corev1.Toleration) []corev1.Toleration { return deepCopies(in) }

func copySpread(in []corev1.TopologySpreadConstraint) []corev1.TopologySpreadConstraint {
	return deepCopies(in)
}

// deepCopies deep-copies a list of API structs (nil stays nil).
func deepCopies[T any, P interface {
	*T
	DeepCopyInto(*T)
}](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		P(&in[i]).DeepCopyInto(&out[i])
	}
	return out
}

// mergeKeys copies add into m (allocated when nil); add's values win.
func mergeKeys(m, add map[string]string) map[string]string {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]string, len(add))
	}
	maps.Copy(m, add)
	return m
}

// Validate checks a placement against Kubernetes' own rules for the pod
// fields it fills and CAPTF's reserved keys, naming each problem at its
// field below path (a JobPolicy's path: "podMetadata.labels[...]",
// "tolerations[0].operator"). The admission webhook refuses a jobs policy
// with it, and Policy.Validate an effective policy, so a machine that
// inherits a reserved key from a cluster stored before the webhook refused
// it gets JobPolicyInvalid rather than a Job. Pure.
func (pl *Placement) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	meta := path.Child("podMetadata")
	for _, m := range [...]struct {
		name   string
		values map[string]string
	}{{"labels", pl.PodLabels}, {"annotations", pl.PodAnnotations}} {
		p := meta.Child(m.name)
		if len(m.values) > MaxPodMetadataEntries {
			errs = append(errs, field.TooMany(p, len(m.values), MaxPodMetadataEntries))
		}
		for _, k := range slices.Sorted(maps.Keys(m.values)) {
			if why := ReservedPodMetadataKey(k); why != "" {
				errs = append(errs, field.Forbidden(p.Key(k), why))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(pl.PodLabels, meta.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(pl.PodAnnotations, meta.Child("annotations"))...)

	ns := path.Child("nodeSelector")
	if len(pl.NodeSelector) > MaxNodeSelectorEntries {
		errs = append(errs, field.TooMany(ns, len(pl.NodeSelector), MaxNodeSelectorEntries))
	}
	errs = append(errs, metav1validation.ValidateLabels(pl.NodeSelector, ns)...)

	tp := path.Child("tolerations")
	if len(pl.Tolerations) > MaxTolerations {
		errs = append(errs, field.TooMany(tp, len(pl.Tolerations), MaxTolerations))
	}
	for i := range pl.Tolerations {
		errs = append(errs, validateToleration(tp.Index(i), &pl.Tolerations[i])...)
	}
	if pl.Affinity != nil {
		errs = append(errs, validateAffinity(path.Child("affinity"), pl.Affinity)...)
	}
	sp := path.Child("topologySpreadConstraints")
	if len(pl.TopologySpreadConstraints) > MaxTopologySpreadEntries {
		errs = append(errs, field.TooMany(sp, len(pl.TopologySpreadConstraints), MaxTopologySpreadEntries))
	}
	for i := range pl.TopologySpreadConstraints {
		errs = append(errs, validateSpread(sp.Index(i), &pl.TopologySpreadConstraints[i])...)
	}
	if pl.PriorityClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(pl.PriorityClassName) {
			errs = append(errs, field.Invalid(path.Child("priorityClassName"), pl.PriorityClassName, msg))
		}
	}
	return errs
}

// validateToleration applies the rules the API server applies to a pod's
// toleration, so that a policy it would refuse never reaches a Job.
func validateToleration(p *field.Path, t *corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "must be Exists when key is empty (a toleration of every taint)"))
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty when operator is Exists"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
	}
	return errs
}

// validateAffinity parses every node selector term with the scheduler's
// own library (nodeaffinity) and every pod (anti-)affinity label selector
// with apimachinery's, as the scheduler and the API server would.
func validateAffinity(p *field.Path, a *corev1.Affinity) field.ErrorList {
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		np := p.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := np.Child("requiredDuringSchedulingIgnoredDuringExecution")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(rp.Child("nodeSelectorTerms"), "at least one term"))
			}
			if _, err := nodeaffinity.NewNodeSelector(req, field.WithPath(rp)); err != nil {
				errs = append(errs, field.Invalid(rp, "", err.Error()))
			}
		}
		if pref := na.PreferredDuringSchedulingIgnoredDuringExecution; len(pref) > 0 {
			pp := np.Child("preferredDuringSchedulingIgnoredDuringExecution")
			for i, t := range pref {
				if t.Weight < 1 || t.Weight > 100 {
					errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), t.Weight, "must be between 1 and 100"))
				}
			}
			if _, err := nodeaffinity.NewPreferredSchedulingTerms(pref, field.WithPath(pp)); err != nil {
				errs = append(errs, field.Invalid(pp, "", err.Error()))
			}
		}
	}
	podTerms := func(tp *field.Path, terms []corev1.PodAffinityTerm) {
		for i := range terms {
			errs = append(errs, validatePodAffinityTerm(tp.Index(i), &terms[i])...)
		}
	}
	weighted := func(tp *field.Path, terms []corev1.WeightedPodAffinityTerm) {
		for i := range terms {
			if w := terms[i].Weight; w < 1 || w > 100 {
				errs = append(errs, field.Invalid(tp.Index(i).Child("weight"), w, "must be between 1 and 100"))
			}
			errs = append(errs, validatePodAffinityTerm(tp.Index(i).Child("podAffinityTerm"), &terms[i].PodAffinityTerm)...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		pp := p.Child("podAffinity")
		podTerms(pp.Child("requiredDuringSchedulingIgnoredDuringExecution"), pa.RequiredDuringSchedulingIgnoredDuringExecution)
		weighted(pp.Child("preferredDuringSchedulingIgnoredDuringExecution"), pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		pp := p.Child("podAntiAffinity")
		podTerms(pp.Child("requiredDuringSchedulingIgnoredDuringExecution"), pa.RequiredDuringSchedulingIgnoredDuringExecution)
		weighted(pp.Child("preferredDuringSchedulingIgnoredDuringExecution"), pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return errs
}

var labelSelectorOptions = metav1validation.LabelSelectorValidationOptions{}

func validatePodAffinityTerm(p *field.Path, t *corev1.PodAffinityTerm) field.ErrorList {
	var errs field.ErrorList
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "a node label key, e.g. kubernetes.io/hostname"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(t.TopologyKey, p.Child("topologyKey"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(t.LabelSelector, labelSelectorOptions, p.Child("labelSelector"))...)
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, labelSelectorOptions, p.Child("namespaceSelector"))...)
	for i, ns := range t.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(p.Child("namespaces").Index(i), ns, msg))
		}
	}
	return errs
}

func validateSpread(p *field.Path, c *corev1.TopologySpreadConstraint) field.ErrorList {
	var errs field.ErrorList
	if c.MaxSkew < 1 {
		errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be at least 1"))
	}
	if c.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "a node label key, e.g. topology.kubernetes.io/zone"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
	}
	switch c.WhenUnsatisfiable {
	case corev1.DoNotSchedule, corev1.ScheduleAnyway:
	default:
		errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
	}
	if c.MinDomains != nil && (*c.MinDomains < 1 || c.WhenUnsatisfiable != corev1.DoNotSchedule) {
		errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be at least 1, and only with whenUnsatisfiable DoNotSchedule"))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, labelSelectorOptions, p.Child("labelSelector"))...)
	return errs
}

// apply puts the placement on a Job's pod template: the policy's labels
// and annotations under CAPTF's own (which win, though Validate refuses a
// reserved key first), and the scheduling fields.
func (pl *Placement) apply(meta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	meta.Labels = underneath(meta.Labels, pl.PodLabels)
	meta.Annotations = underneath(meta.Annotations, pl.PodAnnotations)
	spec.NodeSelector = maps.Clone(pl.NodeSelector)
	spec.Tolerations = copyTolerations(pl.Tolerations)
	if pl.Affinity != nil {
		spec.Affinity = pl.Affinity.DeepCopy()
	}
	spec.TopologySpreadConstraints = copySpread(pl.TopologySpreadConstraints)
	spec.PriorityClassName = pl.PriorityClassName
}

// underneath returns ours with every entry of theirs whose key ours lacks.
func underneath(ours, theirs map[string]string) map[string]string {
	if len(theirs) == 0 {
		return ours
	}
	out := make(map[string]string, len(ours)+len(theirs))
	maps.Copy(out, theirs)
	maps.Copy(out, ours)
	return out
}
