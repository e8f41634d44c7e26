package jobs

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

var (
	poolToleration = corev1.Toleration{Key: "example.com/pool", Operator: corev1.TolerationOpEqual, Value: "terraform", Effect: corev1.TaintEffectNoSchedule}
	zoneAffinity   = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-west-1a"},
		}}}},
	}}}
	zoneSpread = corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{infrav1.ManagedLabel: "true"}}}
)

// TestMergePlacement names the inheritance rule of each placement field
// (book: Tuning Jobs, "Inheriting from a cluster's defaults").
func TestMergePlacement(t *testing.T) {
	defs := &infrav1.JobPolicy{
		PodMetadata: &infrav1.PodMetadata{
			Labels:      map[string]string{"team": "platform", "cost-center": "c-1"},
			Annotations: map[string]string{"example.com/owner": "platform"},
		},
		NodeSelector:              map[string]string{"example.com/pool": "terraform", "kubernetes.io/arch": "amd64"},
		Tolerations:               []corev1.Toleration{poolToleration},
		Affinity:                  zoneAffinity,
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{zoneSpread},
		PriorityClassName:         "infra-low",
	}
	tests := []struct {
		rule  string
		own   *infrav1.JobPolicy
		check func(p Placement) bool
	}{
		{"podMetadata labels are merged by key, the machine's value winning",
			&infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"team": "db"}}},
			func(p Placement) bool {
				return maps.Equal(p.PodLabels, map[string]string{"team": "db", "cost-center": "c-1"})
			}},
		{"podMetadata annotations are merged by key, the machine's value winning",
			&infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Annotations: map[string]string{"example.com/owner": "db", "example.com/ticket": "T-1"}}},
			func(p Placement) bool {
				return maps.Equal(p.PodAnnotations, map[string]string{"example.com/owner": "db", "example.com/ticket": "T-1"}) &&
					maps.Equal(p.PodLabels, defs.PodMetadata.Labels)
			}},
		{"nodeSelector set on the machine replaces the cluster's whole map",
			&infrav1.JobPolicy{NodeSelector: map[string]string{"example.com/pool": "db"}},
			func(p Placement) bool { return maps.Equal(p.NodeSelector, map[string]string{"example.com/pool": "db"}) }},
		{"tolerations set on the machine replace the cluster's whole list",
			&infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			func(p Placement) bool {
				return reflect.DeepEqual(p.Tolerations, []corev1.Toleration{{Operator: corev1.TolerationOpExists}})
			}},
		{"affinity set on the machine replaces the cluster's whole affinity",
			&infrav1.JobPolicy{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}},
			func(p Placement) bool { return p.Affinity.NodeAffinity == nil && p.Affinity.PodAntiAffinity != nil }},
		{"topologySpreadConstraints set on the machine replace the cluster's whole list",
			&infrav1.JobPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule}}},
			func(p Placement) bool {
				return len(p.TopologySpreadConstraints) == 1 && p.TopologySpreadConstraints[0].MaxSkew == 2
			}},
		{"priorityClassName set on the machine wins",
			&infrav1.JobPolicy{PriorityClassName: "infra-high"},
			func(p Placement) bool { return p.PriorityClassName == "infra-high" }},
		{"every placement field the machine leaves unset comes from the cluster",
			&infrav1.JobPolicy{},
			func(p Placement) bool { return reflect.DeepEqual(p, PolicyPlacement(defs)) }},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			ownBefore, defsBefore := tt.own.DeepCopy(), defs.DeepCopy()
			p := Effective(tt.own, defs)
			if !tt.check(p.Placement) {
				t.Errorf("effective placement = %+v", p.Placement)
			}
			if !reflect.DeepEqual(tt.own, ownBefore) || !reflect.DeepEqual(defs, defsBefore) {
				t.Error("merging changed an input")
			}
			if err := p.Validate(); err != nil {
				t.Errorf("valid placement refused: %v", err)
			}
		})
	}
	t.Run("the merged placement shares nothing with the inputs", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{}, defs)
		p.Placement.PodLabels["team"] = "changed"
		p.Placement.NodeSelector["example.com/pool"] = "changed"
		p.Placement.Tolerations[0].Value = "changed"
		if defs.PodMetadata.Labels["team"] != "platform" || defs.NodeSelector["example.com/pool"] != "terraform" || defs.Tolerations[0].Value != "terraform" {
			t.Error("the effective policy aliases the cluster's defaults")
		}
	})
}

// TestBuildPutsPlacementOnThePod: the Job build carries every placement
// field onto the pod template, the labels and annotations beside CAPTF's.
func TestBuildPutsPlacementOnThePod(t *testing.T) {
	r := testRun()
	p := Effective(&infrav1.JobPolicy{
		PodMetadata:               &infrav1.PodMetadata{Labels: map[string]string{"team": "platform"}, Annotations: map[string]string{"example.com/owner": "platform"}},
		NodeSelector:              map[string]string{"example.com/pool": "terraform"},
		Tolerations:               []corev1.Toleration{poolToleration},
		Affinity:                  zoneAffinity,
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{zoneSpread},
		PriorityClassName:         "infra-low",
	}, nil)
	r.Policy = &p
	job, _, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	tpl := job.Spec.Template
	checks := []struct {
		rule string
		ok   bool
	}{
		{"pod label added", tpl.Labels["team"] == "platform"},
		{"CAPTF's pod labels kept", tpl.Labels[infrav1.ManagedLabel] == "true" && tpl.Labels[infrav1.OpLabel] == "apply"},
		{"pod annotation added", tpl.Annotations["example.com/owner"] == "platform"},
		{"CAPTF's pod annotation kept", tpl.Annotations[infrav1.SafeToEvictAnnotation] == "false"},
		{"the Job's own labels are CAPTF's only", job.Labels["team"] == "" && job.Annotations["example.com/owner"] == ""},
		{"nodeSelector", maps.Equal(tpl.Spec.NodeSelector, map[string]string{"example.com/pool": "terraform"})},
		{"tolerations", reflect.DeepEqual(tpl.Spec.Tolerations, []corev1.Toleration{poolToleration})},
		{"affinity", reflect.DeepEqual(tpl.Spec.Affinity, zoneAffinity)},
		{"topologySpreadConstraints", reflect.DeepEqual(tpl.Spec.TopologySpreadConstraints, []corev1.TopologySpreadConstraint{zoneSpread})},
		{"priorityClassName", tpl.Spec.PriorityClassName == "infra-low"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: pod template %+v", c.rule, tpl)
		}
	}
	def, _, err := Build(testRun())
	if err != nil {
		t.Fatal(err)
	}
	if s := def.Spec.Template.Spec; s.NodeSelector != nil || s.Tolerations != nil || s.Affinity != nil || s.TopologySpreadConstraints != nil || s.PriorityClassName != "" {
		t.Errorf("the default policy places the pod: %+v", s)
	}
}

// TestReservedKeysCoverWhatTheBuildSets: every label and annotation key the
// build puts on a Job or its pod, of every operation and flag, is one a
// policy's podMetadata may not set; and so are the Job controller's.
func TestReservedKeysCoverWhatTheBuildSets(t *testing.T) {
	keys := map[string]bool{
		"batch.kubernetes.io/job-name": true, "batch.kubernetes.io/controller-uid": true,
		"batch.kubernetes.io/job-completion-index": true, "job-name": true, "controller-uid": true,
	}
	for _, op := range []infrav1.Operation{infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationDrift, infrav1.OperationRefresh, infrav1.OperationRestore, infrav1.OperationPlan} {
		r := testRun()
		r.Op = op
		r.GuardDeletes = op == infrav1.OperationApply
		if op == infrav1.OperationApply {
			r.ExpectPlan, r.DriftRemediation = "p1:abc", true
		}
		if op == infrav1.OperationRestore {
			r.Inputs, r.Restore = Inputs{}, &Restore{Serial: 3, Chunks: [][]byte{[]byte("{}")}, Resources: 1}
		}
		job, _, err := Build(r)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		for _, m := range []map[string]string{job.Labels, job.Annotations, job.Spec.Template.Labels, job.Spec.Template.Annotations} {
			for k := range m {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		if ReservedPodMetadataKey(k) == "" {
			t.Errorf("the Job or its pod carries %q, which a policy's podMetadata may set", k)
		}
	}
	for _, k := range []string{"team", "example.com/owner", "cluster.x-k8s.io/other", "notcaptf.io/x", "app.kubernetes.io/name", "kubernetes.io/arch"} {
		if why := ReservedPodMetadataKey(k); why != "" {
			t.Errorf("%q refused: %s", k, why)
		}
	}
	for _, k := range []string{"captf.io/anything", "sub.captf.io/x", "captf.infrastructure.cluster.x-k8s.io/new", "batch.kubernetes.io/other"} {
		if ReservedPodMetadataKey(k) == "" {
			t.Errorf("%q is in a reserved domain but accepted", k)
		}
	}
}

// TestValidatePlacement: each rule refuses at the field it names, and the
// effective policy's Validate reports the same as JobPolicyInvalid.
func TestValidatePlacement(t *testing.T) {
	tests := []struct {
		rule  string
		jp    infrav1.JobPolicy
		field string
	}{
		{"a CAPTF label key is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{infrav1.ManagedLabel: "false"}}}, "podMetadata.labels[captf.io/managed]"},
		{"a CAPTF annotation key is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Annotations: map[string]string{"x.captf.io/y": "1"}}}, "podMetadata.annotations[x.captf.io/y]"},
		{"the safe-to-evict annotation is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Annotations: map[string]string{infrav1.SafeToEvictAnnotation: "true"}}}, "podMetadata.annotations[cluster-autoscaler.kubernetes.io/safe-to-evict]"},
		{"the cluster-name label is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "other"}}}, "podMetadata.labels[cluster.x-k8s.io/cluster-name]"},
		{"the Job controller's label is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"job-name": "x"}}}, "podMetadata.labels[job-name]"},
		{"an invalid label key is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"bad key": "x"}}}, "podMetadata.labels"},
		{"an invalid label value is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"team": "has space"}}}, "podMetadata.labels"},
		{"an invalid annotation key is refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Annotations: map[string]string{"-bad": "x"}}}, "podMetadata.annotations"},
		{"an invalid nodeSelector value is refused", infrav1.JobPolicy{NodeSelector: map[string]string{"pool": "a/b"}}, "nodeSelector"},
		{"a toleration with a value and Exists is refused", infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}}, "tolerations[0].value"},
		{"a toleration of an unknown operator is refused", infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Gt"}}}, "tolerations[0].operator"},
		{"a toleration of an unknown effect is refused", infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Key: "k", Effect: "Never"}}}, "tolerations[0].effect"},
		{"tolerationSeconds without NoExecute is refused", infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)}}}, "tolerations[0].effect"},
		{"an unparsable node affinity is refused", infrav1.JobPolicy{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}}}}}},
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"},
		{"a pod anti-affinity term without topologyKey is refused", infrav1.JobPolicy{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{}}}}},
			"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"},
		{"a spread of maxSkew 0 is refused", infrav1.JobPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}}, "topologySpreadConstraints[0].maxSkew"},
		{"a spread of an unknown action is refused", infrav1.JobPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"}}}, "topologySpreadConstraints[0].whenUnsatisfiable"},
		{"a priorityClassName that is not a DNS subdomain is refused", infrav1.JobPolicy{PriorityClassName: "Infra_Low"}, "priorityClassName"},
		{"more than 32 pod labels are refused", infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: manyLabels(33)}}, "podMetadata.labels"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			pl := PolicyPlacement(&tt.jp)
			errs := pl.Validate(field.NewPath("spec", "jobs"))
			found := false
			for _, e := range errs {
				if e.Field == "spec.jobs."+tt.field {
					found = true
				}
			}
			if !found {
				t.Errorf("no error at spec.jobs.%s: %v", tt.field, errs)
			}
			p := Effective(&tt.jp, nil)
			err := p.Validate()
			if !errors.Is(err, ErrPolicyInvalid) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("effective policy: %v, want JobPolicyInvalid naming %s", err, tt.field)
			}
			r := testRun()
			r.Policy = &p
			if job, _, err := Build(r); job != nil || err == nil {
				t.Error("a Job was built under the invalid placement")
			}
		})
	}
	t.Run("a reserved key inherited from the cluster's defaults fails the effective policy", func(t *testing.T) {
		defs := &infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{infrav1.OpLabel: "apply"}}}
		p := Effective(&infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"team": "db"}}}, defs)
		var pe *PolicyError
		if err := p.Validate(); !errors.As(err, &pe) || pe.Reason() != infrav1.JobPolicyInvalidReason || !strings.Contains(err.Error(), infrav1.OpLabel) {
			t.Errorf("Validate = %v", err)
		}
	})
	t.Run("a merge over 32 labels fails the effective policy", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: manyLabels(20)}},
			&infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: prefixed("d", manyLabels(20))}})
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "podMetadata.labels") {
			t.Errorf("Validate = %v", err)
		}
	})
}

func manyLabels(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["l"+strings.Repeat("x", i)] = "v"
	}
	return m
}

func prefixed(p string, m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[p+k] = v
	}
	return out
}
