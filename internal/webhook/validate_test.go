package webhook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

const image = "registry.example/captf/noop-machine:v1.0.0"

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "ns"} }

func raw(v string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(v)} }

func workspace() infrav1.WorkspaceSpec {
	return infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: image}}
}

func tc(mut func(*infrav1.TerraformClusterSpec)) *infrav1.TerraformCluster {
	o := &infrav1.TerraformCluster{ObjectMeta: meta("tc"), Spec: infrav1.TerraformClusterSpec{
		WorkspaceSpec: workspace(), IdentityRef: &infrav1.IdentityReference{Name: "aws-prod"},
	}}
	if mut != nil {
		mut(&o.Spec)
	}
	return o
}

func tm(mut func(*infrav1.TerraformMachineSpec)) *infrav1.TerraformMachine {
	o := &infrav1.TerraformMachine{ObjectMeta: meta("tm"), Spec: infrav1.TerraformMachineSpec{WorkspaceSpec: workspace()}}
	if mut != nil {
		mut(&o.Spec)
	}
	return o
}

func tmp(mut func(*infrav1.TerraformMachinePoolSpec)) *infrav1.TerraformMachinePool {
	o := &infrav1.TerraformMachinePool{ObjectMeta: meta("tmp"), Spec: infrav1.TerraformMachinePoolSpec{WorkspaceSpec: workspace()}}
	if mut != nil {
		mut(&o.Spec)
	}
	return o
}

func tct(mut func(*infrav1.TerraformClusterSpec)) *infrav1.TerraformClusterTemplate {
	o := &infrav1.TerraformClusterTemplate{ObjectMeta: meta("tct")}
	o.Spec.Template.Spec.WorkspaceSpec = workspace()
	if mut != nil {
		mut(&o.Spec.Template.Spec)
	}
	return o
}

func tmt(mut func(*infrav1.TerraformMachineSpec)) *infrav1.TerraformMachineTemplate {
	o := &infrav1.TerraformMachineTemplate{ObjectMeta: meta("tmt")}
	o.Spec.Template.Spec.WorkspaceSpec = workspace()
	if mut != nil {
		mut(&o.Spec.Template.Spec)
	}
	return o
}

func tmpt(mut func(*infrav1.TerraformMachinePoolSpec)) *infrav1.TerraformMachinePoolTemplate {
	o := &infrav1.TerraformMachinePoolTemplate{ObjectMeta: meta("tmpt")}
	o.Spec.Template.Spec.WorkspaceSpec = workspace()
	if mut != nil {
		mut(&o.Spec.Template.Spec)
	}
	return o
}

func tci(mut func(*infrav1.TerraformClusterIdentitySpec)) *infrav1.TerraformClusterIdentity {
	o := &infrav1.TerraformClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "aws-prod"}, Spec: infrav1.TerraformClusterIdentitySpec{
		SecretRef:         infrav1.SecretReference{Name: "aws-prod", Namespace: "captf-credentials"},
		AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{"tenant-a"}},
	}}
	if mut != nil {
		mut(&o.Spec)
	}
	return o
}

// create runs the kind's validator on a create of obj.
func create(obj any) error {
	ctx := context.Background()
	var err error
	switch o := obj.(type) {
	case *infrav1.TerraformCluster:
		_, err = Cluster{}.ValidateCreate(ctx, o)
	case *infrav1.TerraformMachine:
		_, err = (&Machine{}).ValidateCreate(ctx, o)
	case *infrav1.TerraformMachinePool:
		_, err = MachinePool{}.ValidateCreate(ctx, o)
	case *infrav1.TerraformClusterTemplate:
		_, err = ClusterTemplate{}.ValidateCreate(ctx, o)
	case *infrav1.TerraformMachineTemplate:
		_, err = MachineTemplate{}.ValidateCreate(ctx, o)
	case *infrav1.TerraformMachinePoolTemplate:
		_, err = MachinePoolTemplate{}.ValidateCreate(ctx, o)
	case *infrav1.TerraformClusterIdentity:
		// The spec rules only: the SubjectAccessReview needs an API server.
		err = invalid("TerraformClusterIdentity", o.Name, ValidateIdentitySpec(&o.Spec))
	default:
		panic("unknown kind")
	}
	return err
}

func jobs(p infrav1.JobPolicy) *infrav1.JobPolicy { return &p }

func sc(s corev1.SecurityContext) *corev1.SecurityContext { return &s }

func psc(s corev1.PodSecurityContext) *corev1.PodSecurityContext { return &s }

// invalidObjects are objects the webhooks refuse on create, each with the
// field path its message must name. Book pages: The Kinds, Module
// Variables, Tuning Jobs, Security Model (Pod security), Identities and
// Credentials, Security Model (source image syntax).
func invalidObjects() []struct {
	name  string
	obj   any
	field string
} {
	wsVars := func(vars map[string]apiextensionsv1.JSON) func(*infrav1.WorkspaceSpec) {
		return func(ws *infrav1.WorkspaceSpec) { ws.Variables = vars }
	}
	jobsOn := func(p *infrav1.JobPolicy) func(*infrav1.WorkspaceSpec) {
		return func(ws *infrav1.WorkspaceSpec) { ws.Jobs = p }
	}
	onTC := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformCluster {
		return tc(func(s *infrav1.TerraformClusterSpec) { f(&s.WorkspaceSpec) })
	}
	onTM := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformMachine {
		return tm(func(s *infrav1.TerraformMachineSpec) { f(&s.WorkspaceSpec) })
	}
	onTMP := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformMachinePool {
		return tmp(func(s *infrav1.TerraformMachinePoolSpec) { f(&s.WorkspaceSpec) })
	}
	onTCT := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformClusterTemplate {
		return tct(func(s *infrav1.TerraformClusterSpec) { f(&s.WorkspaceSpec) })
	}
	onTMT := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformMachineTemplate {
		return tmt(func(s *infrav1.TerraformMachineSpec) { f(&s.WorkspaceSpec) })
	}
	onTMPT := func(f func(*infrav1.WorkspaceSpec)) *infrav1.TerraformMachinePoolTemplate {
		return tmpt(func(s *infrav1.TerraformMachinePoolSpec) { f(&s.WorkspaceSpec) })
	}
	image := func(img string) func(*infrav1.WorkspaceSpec) {
		return func(ws *infrav1.WorkspaceSpec) { ws.Source.Image = img }
	}
	from := func(s ...infrav1.VariablesSource) func(*infrav1.WorkspaceSpec) {
		return func(ws *infrav1.WorkspaceSpec) { ws.VariablesFrom = s }
	}
	many := map[string]apiextensionsv1.JSON{}
	for i := range 257 {
		many["v"+strings.Repeat("x", i)] = raw(`1`)
	}
	ref := func(n string) *infrav1.LocalObjectReference { return &infrav1.LocalObjectReference{Name: n} }
	return []struct {
		name  string
		obj   any
		field string
	}{
		// Image reference syntax (Security Model: the controller checks only the syntax).
		{"TC image with spaces", onTC(image("not an image")), "spec.source.image"},
		{"TC image with upper-case repository", onTC(image("registry.example/Captf/noop:v1")), "spec.source.image"},
		{"TM image with a bad tag", onTM(image("registry.example/captf/noop:v1:v2")), "spec.source.image"},
		{"TM image with a short digest", onTM(image("registry.example/captf/noop@sha256:abc")), "spec.source.image"},
		{"TMP image empty", onTMP(image("")), "spec.source.image"},
		{"TMP image too long", onTMP(image("registry.example/" + strings.Repeat("a", 520) + ":v1")), "spec.source.image"},
		{"TCT image with a trailing colon", onTCT(image("registry.example/captf/noop:")), "spec.template.spec.source.image"},
		{"TMT image with a scheme", onTMT(image("https://registry.example/captf/noop:v1")), "spec.template.spec.source.image"},
		{"TMPT image with a bad digest algorithm", onTMPT(image("registry.example/captf/noop@md5:0123")), "spec.template.spec.source.image"},

		// Variable names (Module Variables: Names and limits).
		{"TC captf_ variable", onTC(wsVars(map[string]apiextensionsv1.JSON{"captf_tags": raw(`{}`)})), "spec.variables[captf_tags]"},
		{"TC captf_ prefix of an unknown name", onTC(wsVars(map[string]apiextensionsv1.JSON{"captf_extra": raw(`1`)})), "spec.variables[captf_extra]"},
		{"TC cluster input", onTC(wsVars(map[string]apiextensionsv1.JSON{"control_plane_endpoint": raw(`1`)})), "spec.variables[control_plane_endpoint]"},
		{"TC kubernetes_version input", onTC(wsVars(map[string]apiextensionsv1.JSON{"kubernetes_version": raw(`"v1"`)})), "spec.variables[kubernetes_version]"},
		{"TC meta-argument source", onTC(wsVars(map[string]apiextensionsv1.JSON{"source": raw(`1`)})), "spec.variables[source]"},
		{"TC meta-argument count", onTC(wsVars(map[string]apiextensionsv1.JSON{"count": raw(`1`)})), "spec.variables[count]"},
		{"TM machine input", onTM(wsVars(map[string]apiextensionsv1.JSON{"machine_name": raw(`"x"`)})), "spec.variables[machine_name]"},
		{"TM bootstrap_data input", onTM(wsVars(map[string]apiextensionsv1.JSON{"bootstrap_data": raw(`"x"`)})), "spec.variables[bootstrap_data]"},
		{"TM meta-argument for_each", onTM(wsVars(map[string]apiextensionsv1.JSON{"for_each": raw(`[]`)})), "spec.variables[for_each]"},
		{"TM meta-argument depends_on", onTM(wsVars(map[string]apiextensionsv1.JSON{"depends_on": raw(`[]`)})), "spec.variables[depends_on]"},
		{"TM name starting with a digit", onTM(wsVars(map[string]apiextensionsv1.JSON{"1size": raw(`1`)})), "spec.variables[1size]"},
		{"TM name with a dot", onTM(wsVars(map[string]apiextensionsv1.JSON{"instance.type": raw(`1`)})), "spec.variables[instance.type]"},
		{"TMP pool input replicas", onTMP(wsVars(map[string]apiextensionsv1.JSON{"replicas": raw(`1`)})), "spec.variables[replicas]"},
		{"TMP pool input node_labels", onTMP(wsVars(map[string]apiextensionsv1.JSON{"node_labels": raw(`{}`)})), "spec.variables[node_labels]"},
		{"TMP meta-argument lifecycle", onTMP(wsVars(map[string]apiextensionsv1.JSON{"lifecycle": raw(`{}`)})), "spec.variables[lifecycle]"},
		{"TMP empty name", onTMP(wsVars(map[string]apiextensionsv1.JSON{"": raw(`1`)})), "spec.variables[]"},
		{"TCT meta-argument providers", onTCT(wsVars(map[string]apiextensionsv1.JSON{"providers": raw(`{}`)})), "spec.template.spec.variables[providers]"},
		{"TMT machine input control_plane", onTMT(wsVars(map[string]apiextensionsv1.JSON{"control_plane": raw(`true`)})), "spec.template.spec.variables[control_plane]"},
		{"TMT meta-argument version", onTMT(wsVars(map[string]apiextensionsv1.JSON{"version": raw(`"1"`)})), "spec.template.spec.variables[version]"},
		{"TMPT meta-argument locals", onTMPT(wsVars(map[string]apiextensionsv1.JSON{"locals": raw(`{}`)})), "spec.template.spec.variables[locals]"},
		{"TMPT pool input autoscaling", onTMPT(wsVars(map[string]apiextensionsv1.JSON{"autoscaling": raw(`{}`)})), "spec.template.spec.variables[autoscaling]"},
		{"TC too many variables", onTC(wsVars(many)), "spec.variables"},
		{"TM empty variables", onTM(wsVars(map[string]apiextensionsv1.JSON{})), "spec.variables"},

		// variablesFrom: exactly one of configMapRef and secretRef.
		{"TC source names both", onTC(from(infrav1.VariablesSource{ConfigMapRef: ref("a"), SecretRef: ref("b")})), "spec.variablesFrom[0]"},
		{"TM source names neither", onTM(from(infrav1.VariablesSource{})), "spec.variablesFrom[0]"},
		{"TMP second source names neither", onTMP(from(infrav1.VariablesSource{ConfigMapRef: ref("a")}, infrav1.VariablesSource{})), "spec.variablesFrom[1]"},
		{"TMT source name not a DNS subdomain", onTMT(from(infrav1.VariablesSource{SecretRef: ref("Bad_Name")})), "spec.template.spec.variablesFrom[0].secretRef.name"},
		{"TCT source with a bad format", onTCT(from(infrav1.VariablesSource{ConfigMapRef: ref("a"), Format: "YAML"})), "spec.template.spec.variablesFrom[0].format"},
		{"TMPT too many sources", onTMPT(from(make([]infrav1.VariablesSource, 17)...)), "spec.template.spec.variablesFrom"},

		// jobs.securityContext (Security Model, Pod security; Tuning Jobs, Security contexts).
		{"TC privileged", onTC(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Privileged: ptr.To(true)})}))), "spec.jobs.securityContext.privileged"},
		{"TM allowPrivilegeEscalation", onTM(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)})}))), "spec.jobs.securityContext.allowPrivilegeEscalation"},
		{"TMP capabilities.add", onTMP(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}})}))), "spec.jobs.securityContext.capabilities.add"},
		{"TCT privileged", onTCT(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Privileged: ptr.To(true)})}))), "spec.template.spec.jobs.securityContext.privileged"},
		{"TMT capabilities.add", onTMT(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}})}))), "spec.template.spec.jobs.securityContext.capabilities.add"},
		{"TMPT allowPrivilegeEscalation", onTMPT(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)})}))), "spec.template.spec.jobs.securityContext.allowPrivilegeEscalation"},
		{"TC defaults privileged", tc(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Privileged: ptr.To(true)})})}
		}), "spec.defaults.jobs.securityContext.privileged"},
		{"TCT defaults capabilities.add", tct(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW"}}})})}
		}), "spec.template.spec.defaults.jobs.securityContext.capabilities.add"},
		{"TM container Unmasked procMount", onTM(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)})}))), "spec.jobs.securityContext.procMount"},
		{"TC container seccomp Unconfined", onTC(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}})}))), "spec.jobs.securityContext.seccompProfile.type"},
		{"TMP container SELinux spc_t", onTMP(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}})}))), "spec.jobs.securityContext.seLinuxOptions.type"},

		// Pod-level fields that weaken isolation.
		{"TC pod seccomp Unconfined", onTC(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}})}))), "spec.jobs.podSecurityContext.seccompProfile.type"},
		{"TM pod AppArmor Unconfined", onTM(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}})}))), "spec.jobs.podSecurityContext.appArmorProfile.type"},
		{"TMP pod SELinux spc_t", onTMP(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}})}))), "spec.jobs.podSecurityContext.seLinuxOptions.type"},
		{"TMT pod Windows host process", onTMT(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}})}))), "spec.template.spec.jobs.podSecurityContext.windowsOptions.hostProcess"},
		{"TMPT pod seccomp Unconfined", onTMPT(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}})}))), "spec.template.spec.jobs.podSecurityContext.seccompProfile.type"},
		{"TC defaults pod AppArmor Unconfined", tc(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}})})}
		}), "spec.defaults.jobs.podSecurityContext.appArmorProfile.type"},

		// Placement (Tuning Jobs, "Where runner pods run"): CAPTF's and the
		// Job controller's pod label and annotation keys, and what
		// Kubernetes refuses on a pod.
		{"TM CAPTF pod label", onTM(jobsOn(jobs(infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{infrav1.AttemptLabel: "9"}}}))), "spec.jobs.podMetadata.labels[captf.infrastructure.cluster.x-k8s.io/attempt]"},
		{"TMP captf.io subdomain annotation", onTMP(jobsOn(jobs(infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Annotations: map[string]string{"policy.captf.io/x": "1"}}}))), "spec.jobs.podMetadata.annotations[policy.captf.io/x]"},
		{"TMT cluster-name pod label", onTMT(jobsOn(jobs(infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{clusterv1.ClusterNameLabel: "other"}}}))), "spec.template.spec.jobs.podMetadata.labels[cluster.x-k8s.io/cluster-name]"},
		{"TCT defaults Job controller label", tct(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"controller-uid": "x"}}})}
		}), "spec.template.spec.defaults.jobs.podMetadata.labels[controller-uid]"},
		{"TC invalid nodeSelector key", onTC(jobsOn(jobs(infrav1.JobPolicy{NodeSelector: map[string]string{"bad key": "x"}}))), "spec.jobs.nodeSelector"},
		{"TMPT toleration operator", onTMPT(jobsOn(jobs(infrav1.JobPolicy{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Lt"}}}))), "spec.template.spec.jobs.tolerations[0].operator"},
		{"TM spread without topologyKey", onTM(jobsOn(jobs(infrav1.JobPolicy{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule}}}))), "spec.jobs.topologySpreadConstraints[0].topologyKey"},
		{"TC priorityClassName", onTC(jobsOn(jobs(infrav1.JobPolicy{PriorityClassName: "Not_A_Name"}))), "spec.jobs.priorityClassName"},

		// What the Job build refuses beyond those (jobs.EvaluatePodSecurity:
		// the restricted profile less runAsNonRoot, and no sysctl).
		{"TC pod sysctl on baseline's safe list", onTC(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}})}))), "spec.jobs.podSecurityContext.sysctls"},
		{"TCT defaults unsafe sysctl", tct(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shmmax", Value: "1"}}})})}
		}), "spec.template.spec.defaults.jobs.podSecurityContext.sysctls"},
		{"TM container runAsUser 0 beside runAsNonRoot", onTM(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(true)})}))), "spec.jobs.securityContext.runAsUser"},
		{"TMP pod runAsUser 0 beside runAsNonRoot", onTMP(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(true)})}))), "spec.jobs.podSecurityContext.runAsUser"},
		{"TMT pod runAsNonRoot, container runAsUser 0", onTMT(jobsOn(jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), SecurityContext: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0)})}))), "spec.template.spec.jobs.securityContext.runAsUser"},
		{"TMPT runAsUser 0 alone", onTMPT(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](0)})}))), "spec.template.spec.jobs.securityContext.runAsUser"},
		{"TC container AppArmor Unconfined", onTC(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}})}))), "spec.jobs.securityContext.appArmorProfile.type"},
		{"TMP SELinux user", onTMP(jobsOn(jobs(infrav1.JobPolicy{SecurityContext: sc(corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "system_u"}})}))), "spec.jobs.securityContext.seLinuxOptions.user"},

		// The rest of a jobs policy.
		{"TC serviceAccountName with upper case", onTC(jobsOn(jobs(infrav1.JobPolicy{ServiceAccountName: "Runner"}))), "spec.jobs.serviceAccountName"},
		{"TM serviceAccountName with a slash", onTM(jobsOn(jobs(infrav1.JobPolicy{ServiceAccountName: "ns/runner"}))), "spec.jobs.serviceAccountName"},
		{"TMPT serviceAccountName with an underscore", onTMPT(jobsOn(jobs(infrav1.JobPolicy{ServiceAccountName: "my_runner"}))), "spec.template.spec.jobs.serviceAccountName"},
		{"TCT defaults serviceAccountName", tct(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{Jobs: jobs(infrav1.JobPolicy{ServiceAccountName: "-runner"})}
		}), "spec.template.spec.defaults.jobs.serviceAccountName"},
		{"TMP lock wait fills the deadline", onTMP(jobsOn(jobs(infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](600), ActiveDeadlineSeconds: ptr.To[int64](600)}))), "spec.jobs.lockTimeoutSeconds"},
		{"TMT lock wait past the deadline", onTMT(jobsOn(jobs(infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](900), ActiveDeadlineSeconds: ptr.To[int64](300)}))), "spec.template.spec.jobs.lockTimeoutSeconds"},
		{"TM pull secret name", onTM(jobsOn(jobs(infrav1.JobPolicy{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "Bad Name"}}}))), "spec.jobs.imagePullSecrets[0].name"},
		{"TC env name", onTC(jobsOn(jobs(infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "A=B", Value: "x"}}}))), "spec.jobs.env[0].name"},

		// Kind-specific fields.
		{"TC without identityRef", tc(func(s *infrav1.TerraformClusterSpec) { s.IdentityRef = nil }), "spec.identityRef"},
		{"TC identityRef not a DNS subdomain", tc(func(s *infrav1.TerraformClusterSpec) { s.IdentityRef.Name = "AWS" }), "spec.identityRef.name"},
		{"TC endpoint host without port", tc(func(s *infrav1.TerraformClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "10.0.0.1"}
		}), "spec.controlPlaneEndpoint.port"},
		{"TC endpoint port without host", tc(func(s *infrav1.TerraformClusterSpec) {
			s.ControlPlaneEndpoint = clusterv1.APIEndpoint{Port: 6443}
		}), "spec.controlPlaneEndpoint.host"},
		{"TC defaults identityRef", tc(func(s *infrav1.TerraformClusterSpec) {
			s.Defaults = &infrav1.ClusterDefaults{IdentityRef: &infrav1.IdentityReference{Name: "bad_name"}}
		}), "spec.defaults.identityRef.name"},
		{"TM identityRef", tm(func(s *infrav1.TerraformMachineSpec) { s.IdentityRef = &infrav1.IdentityReference{Name: "x y"} }), "spec.identityRef.name"},
		{"TMP identityRef", tmp(func(s *infrav1.TerraformMachinePoolSpec) { s.IdentityRef = &infrav1.IdentityReference{Name: "UPPER"} }), "spec.identityRef.name"},
		{"TMP membership refresh below 15", tmp(func(s *infrav1.TerraformMachinePoolSpec) { s.MembershipRefreshIntervalSeconds = ptr.To[int32](5) }), "spec.membershipRefreshIntervalSeconds"},
		{"TMPT identityRef", tmpt(func(s *infrav1.TerraformMachinePoolSpec) { s.IdentityRef = &infrav1.IdentityReference{Name: "a..b"} }), "spec.template.spec.identityRef.name"},

		// TerraformClusterIdentity.
		{"TCI secretRef name", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.SecretRef.Name = "Creds" }), "spec.secretRef.name"},
		{"TCI secretRef name empty", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.SecretRef.Name = "" }), "spec.secretRef.name"},
		{"TCI secretRef namespace with a dot", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.SecretRef.Namespace = "a.b" }), "spec.secretRef.namespace"},
		{"TCI allowedNamespaces {}", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.AllowedNamespaces = &infrav1.AllowedNamespaces{} }), "spec.allowedNamespaces"},
		{"TCI allowedNamespaces bad name", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.AllowedNamespaces.List = []string{"ok", "Not_OK"} }), "spec.allowedNamespaces.list[1]"},
		{"TCI allowedNamespaces duplicate", tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.AllowedNamespaces.List = []string{"a", "a"} }), "spec.allowedNamespaces.list[1]"},
		{"TCI allowedNamespaces too many", tci(func(s *infrav1.TerraformClusterIdentitySpec) {
			s.AllowedNamespaces.List = nil
			for i := range 101 {
				s.AllowedNamespaces.List = append(s.AllowedNamespaces.List, "ns-"+strings.Repeat("a", i%50)+string(rune('a'+i%26))+string(rune('a'+i/26)))
			}
		}), "spec.allowedNamespaces.list"},
		{"TCI selector with a bad operator", tci(func(s *infrav1.TerraformClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}
		}), "spec.allowedNamespaces.selector.matchExpressions[0].operator"},
		{"TCI selector with a bad label value", tci(func(s *infrav1.TerraformClusterIdentitySpec) {
			s.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a b"}}
		}), "spec.allowedNamespaces.selector.matchLabels"},
	}
}

// TestInvalidObjectsAreRefused: every invalid object is refused with an
// Invalid status whose message names the field.
func TestInvalidObjectsAreRefused(t *testing.T) {
	cases := invalidObjects()
	if len(cases) < 60 {
		t.Fatalf("only %d invalid objects: the admission suite keeps at least 60", len(cases))
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			err := create(tt.obj)
			if err == nil {
				t.Fatalf("accepted; want a refusal naming %s", tt.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("error is not an Invalid status: %v", err)
			}
			if !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("message does not name %s: %v", tt.field, err)
			}
		})
	}
}

// TestValidObjectsAreAccepted: objects that follow every rule pass,
// including every setting the book shows as allowed.
func TestValidObjectsAreAccepted(t *testing.T) {
	for name, obj := range map[string]any{
		"TC minimal":  tc(nil),
		"TM minimal":  tm(nil),
		"TMP minimal": tmp(nil),
		"TCT without identityRef (left to a ClusterClass patch)": tct(nil),
		"TMT minimal":  tmt(nil),
		"TMPT minimal": tmpt(nil),
		"TCI minimal":  tci(nil),
		"TCI without allowedNamespaces (allows none)": tci(func(s *infrav1.TerraformClusterIdentitySpec) { s.AllowedNamespaces = nil }),
		"TCI selector {} (every namespace)": tci(func(s *infrav1.TerraformClusterIdentitySpec) {
			s.AllowedNamespaces = &infrav1.AllowedNamespaces{Selector: &metav1.LabelSelector{}}
		}),
		"TC with a digest image": tc(func(s *infrav1.TerraformClusterSpec) {
			s.Source.Image = "registry.example/captf/noop@sha256:" + strings.Repeat("a", 64)
		}),
		"TC with the ClusterClass placeholder image": tc(func(s *infrav1.TerraformClusterSpec) {
			s.Source.Image = "example.invalid/captf/set-by-clusterclass:unset"
		}),
		"TC with machine_name (not a cluster input)": tc(func(s *infrav1.TerraformClusterSpec) {
			s.Variables = map[string]apiextensionsv1.JSON{"machine_name": raw(`"x"`), "subnet-ids": raw(`["a"]`), "_x": raw(`1`)}
		}),
		"TM with a full, safe jobs policy": tm(func(s *infrav1.TerraformMachineSpec) {
			s.Jobs = jobs(infrav1.JobPolicy{
				LockTimeoutSeconds: ptr.To[int32](60), ActiveDeadlineSeconds: ptr.To[int64](600), ServiceAccountName: "my-runner",
				SecurityContext: sc(corev1.SecurityContext{
					Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}),
				PodSecurityContext: psc(corev1.PodSecurityContext{
					RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				}),
				Env: []corev1.EnvVar{{Name: "TF_LOG", Value: "debug"}, {Name: "HTTPS_PROXY", Value: "http://proxy:3128"}},
			})
		}),
		"TC with a root image's policy: runAsNonRoot false (left to the image)": tc(func(s *infrav1.TerraformClusterSpec) {
			s.Jobs = jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false), FSGroup: ptr.To[int64](0)}),
				SecurityContext: sc(corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(false)})})
		}),
		"TMP with a non-root user and a Localhost seccomp profile": tmp(func(s *infrav1.TerraformMachinePoolSpec) {
			s.Jobs = jobs(infrav1.JobPolicy{PodSecurityContext: psc(corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("terraform.json")}})})
		}),
		"TM with every placement field": tm(func(s *infrav1.TerraformMachineSpec) {
			s.Jobs = jobs(infrav1.JobPolicy{
				PodMetadata:  &infrav1.PodMetadata{Labels: map[string]string{"team": "platform", "app.kubernetes.io/part-of": "infra"}, Annotations: map[string]string{"example.com/cost-center": "c-17"}},
				NodeSelector: map[string]string{"example.com/pool": "terraform"},
				Tolerations:  []corev1.Toleration{{Key: "example.com/pool", Operator: corev1.TolerationOpEqual, Value: "terraform", Effect: corev1.TaintEffectNoSchedule}, {Operator: corev1.TolerationOpExists}},
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}},
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway}},
				PriorityClassName:         "infra-low",
			})
		}),
		"TMP with variablesFrom": tmp(func(s *infrav1.TerraformMachinePoolSpec) {
			s.VariablesFrom = []infrav1.VariablesSource{{ConfigMapRef: &infrav1.LocalObjectReference{Name: "aws-sizing"}},
				{SecretRef: &infrav1.LocalObjectReference{Name: "db-credentials"}, Format: infrav1.VariablesFormatJSON}}
		}),
	} {
		t.Run(name, func(t *testing.T) {
			if err := create(obj); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestMachineUpdate: source, identityRef, variables and variablesFrom are
// immutable, providerID is set once; jobs, drift and remediation stay
// mutable (The Kinds; Contract - Machine Role, Lifecycle).
func TestMachineUpdate(t *testing.T) {
	base := tm(func(s *infrav1.TerraformMachineSpec) {
		s.Variables = map[string]apiextensionsv1.JSON{"size": raw(`{"a": 1, "b": [1,2]}`)}
		s.VariablesFrom = []infrav1.VariablesSource{{ConfigMapRef: &infrav1.LocalObjectReference{Name: "sizing"}}}
	})
	for _, tt := range []struct {
		name   string
		mut    func(*infrav1.TerraformMachineSpec)
		field  string // "" = allowed
		before func(*infrav1.TerraformMachineSpec)
	}{
		{name: "image", mut: func(s *infrav1.TerraformMachineSpec) { s.Source.Image = image + "-2" }, field: "spec.source"},
		{name: "pull policy", mut: func(s *infrav1.TerraformMachineSpec) { s.Source.ImagePullPolicy = "Always" }, field: "spec.source"},
		{name: "identityRef from unset", mut: func(s *infrav1.TerraformMachineSpec) { s.IdentityRef = &infrav1.IdentityReference{Name: "x"} }, field: "spec.identityRef"},
		{name: "variable value", mut: func(s *infrav1.TerraformMachineSpec) { s.Variables["size"] = raw(`2`) }, field: "spec.variables"},
		{name: "variable added", mut: func(s *infrav1.TerraformMachineSpec) { s.Variables["more"] = raw(`2`) }, field: "spec.variables"},
		{name: "variables dropped", mut: func(s *infrav1.TerraformMachineSpec) { s.Variables = nil }, field: "spec.variables"},
		{name: "variablesFrom", mut: func(s *infrav1.TerraformMachineSpec) { s.VariablesFrom[0].Optional = ptr.To(true) }, field: "spec.variablesFrom"},
		{name: "providerID changed", before: func(s *infrav1.TerraformMachineSpec) { s.ProviderID = "aws:///a" },
			mut: func(s *infrav1.TerraformMachineSpec) { s.ProviderID = "aws:///b" }, field: "spec.providerID"},
		{name: "providerID cleared", before: func(s *infrav1.TerraformMachineSpec) { s.ProviderID = "aws:///a" },
			mut: func(s *infrav1.TerraformMachineSpec) { s.ProviderID = "" }, field: "spec.providerID"},
		{name: "providerID set once is allowed", mut: func(s *infrav1.TerraformMachineSpec) { s.ProviderID = "aws:///a" }},
		{name: "same variables, other formatting", mut: func(s *infrav1.TerraformMachineSpec) {
			s.Variables["size"] = raw(`{"b":[1,2],"a":1}`)
		}},
		{name: "jobs are mutable", mut: func(s *infrav1.TerraformMachineSpec) {
			s.Jobs = jobs(infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](100)})
		}},
		{name: "drift is mutable", mut: func(s *infrav1.TerraformMachineSpec) {
			s.Drift = &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](0)}
		}},
		{name: "remediation is mutable", mut: func(s *infrav1.TerraformMachineSpec) {
			s.Remediation = &infrav1.MachineRemediation{AnnotateMachine: ptr.To(true)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := base.DeepCopy()
			if tt.before != nil {
				tt.before(&old.Spec)
			}
			cur := old.DeepCopy()
			tt.mut(&cur.Spec)
			_, err := (&Machine{}).ValidateUpdate(context.Background(), old, cur)
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && err == nil:
				t.Fatalf("accepted; want a refusal naming %s", tt.field)
			case tt.field != "" && !strings.Contains(err.Error(), tt.field+":"):
				t.Fatalf("message does not name %s: %v", tt.field, err)
			}
		})
	}
}

// TestClusterEndpointSetOnce: spec.controlPlaneEndpoint is mutable until
// it has a host, immutable after (The Kinds).
func TestClusterEndpointSetOnce(t *testing.T) {
	ep := clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 6443}
	for _, tt := range []struct {
		name     string
		old, cur clusterv1.APIEndpoint
		refused  bool
	}{
		{name: "set from empty", cur: ep},
		{name: "unchanged", old: ep, cur: ep},
		{name: "host changed", old: ep, cur: clusterv1.APIEndpoint{Host: "10.0.0.2", Port: 6443}, refused: true},
		{name: "port changed", old: ep, cur: clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 443}, refused: true},
		{name: "cleared", old: ep, refused: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := tc(func(s *infrav1.TerraformClusterSpec) { s.ControlPlaneEndpoint = tt.old })
			cur := tc(func(s *infrav1.TerraformClusterSpec) { s.ControlPlaneEndpoint = tt.cur })
			_, err := Cluster{}.ValidateUpdate(context.Background(), old, cur)
			if (err != nil) != tt.refused {
				t.Fatalf("refused = %v, want %v (%v)", err != nil, tt.refused, err)
			}
			if err != nil && !strings.Contains(err.Error(), "spec.controlPlaneEndpoint:") {
				t.Fatalf("message does not name spec.controlPlaneEndpoint: %v", err)
			}
		})
	}
}

// TestTemplatesShippedAreAccepted: the Terraform* objects of the shipped
// templates/ pass the webhooks (their ${VARIABLES} filled in).
func TestTemplatesShippedAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "templates", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates found: %v", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(fillVariables(string(b)), "\n---") {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil || !strings.HasPrefix(tm.Kind, "Terraform") {
				continue
			}
			obj := map[string]func() any{
				"TerraformCluster":             func() any { return &infrav1.TerraformCluster{} },
				"TerraformClusterTemplate":     func() any { return &infrav1.TerraformClusterTemplate{} },
				"TerraformMachine":             func() any { return &infrav1.TerraformMachine{} },
				"TerraformMachineTemplate":     func() any { return &infrav1.TerraformMachineTemplate{} },
				"TerraformMachinePool":         func() any { return &infrav1.TerraformMachinePool{} },
				"TerraformMachinePoolTemplate": func() any { return &infrav1.TerraformMachinePoolTemplate{} },
				"TerraformClusterIdentity":     func() any { return &infrav1.TerraformClusterIdentity{} },
			}[tm.Kind]()
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %s: %v", f, tm.Kind, err)
			}
			if err := create(obj); err != nil {
				t.Errorf("%s: %s refused: %v", f, tm.Kind, err)
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("no Terraform* object found in templates/")
	}
}

// fillVariables replaces clusterctl's ${NAME} and ${NAME:=default} with a
// valid value for every kind of field they stand for.
func fillVariables(s string) string {
	var out strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			return out.String()
		}
		j := strings.Index(s[i:], "}")
		out.WriteString(s[:i])
		name := s[i+2 : i+j]
		if k := strings.Index(name, ":="); k >= 0 {
			name = name[:k]
		}
		switch {
		case strings.HasSuffix(name, "_IMAGE"):
			out.WriteString("registry.example/captf/module:v1")
		case strings.HasSuffix(name, "_COUNT"), strings.HasSuffix(name, "_TIMEOUT"):
			out.WriteString("3")
		default:
			out.WriteString("sample")
		}
		s = s[i+j+1:]
	}
}

// bookExamples are the complete Terraform* objects the book shows (Your
// First Module, Module Variables, Identities and Credentials, Machine
// Pools); every one is accepted.
var bookExamples = []string{`
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformMachineTemplate
metadata:
  name: first-module
  namespace: default
spec:
  template:
    spec:
      source:
        image: registry.example.com/acme/machine:v1.0.0
`, `
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformMachineTemplate
metadata:
  name: workers-large
spec:
  template:
    spec:
      source:
        image: ghcr.io/example/aws-machine:v1.4.0
      variables:
        instance_type: m6i.xlarge
        root_volume_gib: 100
        subnet_ids: [subnet-0a1, subnet-0b2]
      variablesFrom:
      - configMapRef:
          name: aws-sizing
      - secretRef:
          name: db-credentials
        format: JSON
      - configMapRef:
          name: team-overrides
        optional: true
`, `
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformClusterIdentity
metadata:
  name: aws-prod
spec:
  secretRef:
    name: aws-prod
    namespace: captf-credentials
  allowedNamespaces:
    list:
      - team-a
`, `
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformMachinePool
metadata:
  name: my-cluster-workers
  namespace: team-a
  labels:
    cluster.x-k8s.io/cluster-name: my-cluster
spec:
  source:
    image: ghcr.io/example/machinepool-module:v0.1.0
  identityRef:
    name: aws-prod
  membershipRefreshIntervalSeconds: 30
  drift:
    intervalSeconds: 900
    action: Remediate
`, `
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformMachine
metadata:
  name: m
  namespace: team-a
spec:
  source:
    image: ghcr.io/example/aws-machine:v1.4.0
  drift:
    intervalSeconds: 900
  remediation:
    annotateMachine: true
    unhealthyThreshold: 5
    healthCheckIntervalSeconds: 120
`}

func TestBookExamplesAreAccepted(t *testing.T) {
	for _, doc := range bookExamples {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatal(err)
		}
		obj := map[string]any{
			"TerraformMachineTemplate": &infrav1.TerraformMachineTemplate{},
			"TerraformClusterIdentity": &infrav1.TerraformClusterIdentity{},
			"TerraformMachinePool":     &infrav1.TerraformMachinePool{},
			"TerraformMachine":         &infrav1.TerraformMachine{},
		}[tm.Kind]
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s: %v", tm.Kind, err)
		}
		if err := create(obj); err != nil {
			t.Errorf("the book's %s example is refused: %v", tm.Kind, err)
		}
	}
}

// TestUpdatesRatchet: an object stored before a rule existed can still be
// updated (its finalizer removed, a mutable field changed) as long as the
// update adds no problem; a new problem is refused.
func TestUpdatesRatchet(t *testing.T) {
	ctx := context.Background()
	legacy := tm(func(s *infrav1.TerraformMachineSpec) {
		s.Variables = map[string]apiextensionsv1.JSON{"machine_name": raw(`"x"`)}
	})
	done := legacy.DeepCopy()
	done.Finalizers = nil
	done.Spec.Drift = &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](0)}
	if _, err := (&Machine{}).ValidateUpdate(ctx, legacy, done); err != nil {
		t.Fatalf("an update that adds no problem was refused: %v", err)
	}
	worse := legacy.DeepCopy()
	worse.Spec.Jobs = jobs(infrav1.JobPolicy{ServiceAccountName: "Bad_Name"})
	if _, err := (&Machine{}).ValidateUpdate(ctx, legacy, worse); err == nil || !strings.Contains(err.Error(), "spec.jobs.serviceAccountName:") {
		t.Fatalf("a new problem was not refused: %v", err)
	}

	pool := tmp(func(s *infrav1.TerraformMachinePoolSpec) { s.Source.Image = "legacy image" })
	fixed := pool.DeepCopy()
	fixed.Spec.Drift = &infrav1.MachinePoolDriftPolicy{IntervalSeconds: ptr.To[int32](60)}
	if _, err := (MachinePool{}).ValidateUpdate(ctx, pool, fixed); err != nil {
		t.Fatalf("an update that keeps a stored image was refused: %v", err)
	}
	other := pool.DeepCopy()
	other.Spec.Source.Image = "another bad image"
	if _, err := (MachinePool{}).ValidateUpdate(ctx, pool, other); err == nil || !strings.Contains(err.Error(), "spec.source.image:") {
		t.Fatalf("a new invalid image was not refused: %v", err)
	}
}
