package jobs

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func TestResolveDefaults(t *testing.T) {
	p := Effective(nil, nil)
	checks := []struct {
		rule string
		ok   bool
	}{
		{"history limits default to 3", p.SuccessfulJobsHistoryLimit == 3 && p.FailedJobsHistoryLimit == 3},
		{"activeDeadlineSeconds defaults to 3600", p.ActiveDeadlineSeconds == 3600},
		{"lockTimeoutSeconds defaults to 300", p.LockTimeoutSeconds == 300},
		{"serviceAccountName defaults to captf-runner", p.ServiceAccountName == "captf-runner"},
		{"resources request 250m CPU and 512Mi memory", p.Resources.Requests.Cpu().String() == "250m" && p.Resources.Requests.Memory().String() == "512Mi"},
		{"resources limit memory to 2Gi", p.Resources.Limits.Memory().String() == "2Gi"},
		{"resources deliberately set no CPU limit", p.Resources.Limits.Cpu().IsZero()},
		{"securityContext: no privilege escalation", p.SecurityContext.AllowPrivilegeEscalation != nil && !*p.SecurityContext.AllowPrivilegeEscalation},
		{"securityContext: drop ALL capabilities", p.SecurityContext.Capabilities != nil && slices.Equal(p.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"})},
		{"securityContext: read-only root filesystem", p.SecurityContext.ReadOnlyRootFilesystem != nil && *p.SecurityContext.ReadOnlyRootFilesystem},
		{"securityContext: runAsNonRoot is not defaulted", p.SecurityContext.RunAsNonRoot == nil},
		{"podSecurityContext: seccomp RuntimeDefault", p.PodSecurityContext.SeccompProfile != nil && p.PodSecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"podSecurityContext: fsGroup 65532", p.PodSecurityContext.FSGroup != nil && *p.PodSecurityContext.FSGroup == 65532},
		{"podSecurityContext: runAsNonRoot is not defaulted", p.PodSecurityContext.RunAsNonRoot == nil},
		{"the default policy is valid", p.Validate() == nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("built-in defaults: %s", c.rule)
		}
	}
	t.Run("activeDeadlineSeconds 0 counts as unset", func(t *testing.T) {
		if got := Effective(&infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](0)}, nil).ActiveDeadlineSeconds; got != 3600 {
			t.Errorf("deadline = %d", got)
		}
	})
	t.Run("history limits of 0 are kept", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{SuccessfulJobsHistoryLimit: ptr.To[int32](0), FailedJobsHistoryLimit: ptr.To[int32](0)}, nil)
		if p.SuccessfulJobsHistoryLimit != 0 || p.FailedJobsHistoryLimit != 0 {
			t.Errorf("limits = %d/%d", p.SuccessfulJobsHistoryLimit, p.FailedJobsHistoryLimit)
		}
	})
}

func TestMerge(t *testing.T) {
	userRes := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}}
	defRes := &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")},
	}
	tests := []struct {
		name  string
		own   *infrav1.JobPolicy
		defs  *infrav1.JobPolicy
		check func(t *testing.T, p Policy)
	}{
		{
			name: "a field the machine or pool sets wins",
			own:  &infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](7200), ServiceAccountName: "own-sa"},
			defs: &infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](1800), ServiceAccountName: "default-sa", LockTimeoutSeconds: ptr.To[int32](60)},
			check: func(t *testing.T, p Policy) {
				if p.ActiveDeadlineSeconds != 7200 || p.ServiceAccountName != "own-sa" {
					t.Errorf("deadline %d, sa %s", p.ActiveDeadlineSeconds, p.ServiceAccountName)
				}
				if p.LockTimeoutSeconds != 60 {
					t.Errorf("lock timeout %d, want the cluster default 60", p.LockTimeoutSeconds)
				}
			},
		},
		{
			name: "an unset field falls back to the cluster's default, then the built-in default",
			own:  &infrav1.JobPolicy{},
			defs: &infrav1.JobPolicy{FailedJobsHistoryLimit: ptr.To[int32](1)},
			check: func(t *testing.T, p Policy) {
				if p.FailedJobsHistoryLimit != 1 || p.SuccessfulJobsHistoryLimit != 3 || p.ActiveDeadlineSeconds != 3600 {
					t.Errorf("failed %d, successful %d, deadline %d", p.FailedJobsHistoryLimit, p.SuccessfulJobsHistoryLimit, p.ActiveDeadlineSeconds)
				}
			},
		},
		{
			name: "env is merged by name: the object's entries first, then the default's unused names",
			own:  &infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "B", Value: "own"}, {Name: "A", Value: "own"}}},
			defs: &infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "A", Value: "default"}, {Name: "C", Value: "default"}}},
			check: func(t *testing.T, p Policy) {
				want := []corev1.EnvVar{{Name: "B", Value: "own"}, {Name: "A", Value: "own"}, {Name: "C", Value: "default"}}
				if !reflect.DeepEqual(p.Env, want) {
					t.Errorf("env = %+v, want %+v", p.Env, want)
				}
			},
		},
		{
			name: "env from the cluster's defaults is filtered for TF_* and KUBE_* too",
			own:  &infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
			defs: &infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "KUBE_TOKEN", Value: sentinel}, {Name: "B", Value: "2"}}},
			check: func(t *testing.T, p Policy) {
				if !slices.Equal(p.DroppedEnv, []string{"KUBE_TOKEN"}) || len(p.Env) != 2 {
					t.Errorf("env %+v, dropped %q", p.Env, p.DroppedEnv)
				}
			},
		},
		{
			name: "imagePullSecrets are the union, the object's first, without duplicates",
			own:  &infrav1.JobPolicy{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "b"}, {Name: "a"}, {Name: "b"}}},
			defs: &infrav1.JobPolicy{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "a"}, {Name: "c"}}},
			check: func(t *testing.T, p Policy) {
				want := []corev1.LocalObjectReference{{Name: "b"}, {Name: "a"}, {Name: "c"}}
				if !reflect.DeepEqual(p.ImagePullSecrets, want) {
					t.Errorf("imagePullSecrets = %+v, want %+v", p.ImagePullSecrets, want)
				}
			},
		},
		{
			name: "resources set on the machine replace the cluster default's whole value",
			own:  &infrav1.JobPolicy{Resources: userRes},
			defs: &infrav1.JobPolicy{Resources: defRes},
			check: func(t *testing.T, p Policy) {
				if !reflect.DeepEqual(p.Resources, *userRes) {
					t.Errorf("resources = %+v, want only the machine's", p.Resources)
				}
			},
		},
		{
			name: "resources unset on the machine come whole from the cluster default",
			own:  &infrav1.JobPolicy{},
			defs: &infrav1.JobPolicy{Resources: defRes},
			check: func(t *testing.T, p Policy) {
				if !reflect.DeepEqual(p.Resources, *defRes) {
					t.Errorf("resources = %+v", p.Resources)
				}
			},
		},
		{
			name: "securityContext set on the machine drops the cluster default's keys entirely",
			own:  &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}},
			defs: &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsGroup: ptr.To[int64](5)}},
			check: func(t *testing.T, p Policy) {
				sc := p.SecurityContext
				if sc.RunAsUser == nil || *sc.RunAsUser != 1000 || sc.RunAsNonRoot != nil || sc.RunAsGroup != nil {
					t.Errorf("securityContext = %+v", sc)
				}
				if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Error("the built-in defaults were lost")
				}
			},
		},
		{
			name: "podSecurityContext set on the machine drops the cluster default's keys entirely",
			own:  &infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}},
			defs: &infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1234), RunAsUser: ptr.To[int64](7)}},
			check: func(t *testing.T, p Policy) {
				psc := p.PodSecurityContext
				if psc.RunAsUser != nil || *psc.FSGroup != RunnerUID || psc.RunAsNonRoot == nil {
					t.Errorf("podSecurityContext = %+v", psc)
				}
			},
		},
		{
			name: "a cluster's own spec.jobs never inherits its defaults (no defaults passed)",
			own:  &infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](10)},
			check: func(t *testing.T, p Policy) {
				if p.LockTimeoutSeconds != 10 || p.ActiveDeadlineSeconds != 3600 {
					t.Errorf("lock %d, deadline %d", p.LockTimeoutSeconds, p.ActiveDeadlineSeconds)
				}
			},
		},
		{
			name: "no policy anywhere gives the built-in defaults",
			check: func(t *testing.T, p Policy) {
				if !reflect.DeepEqual(p, Effective(nil, nil)) {
					t.Error("not the defaults")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ownBefore, defsBefore := tt.own.DeepCopy(), tt.defs.DeepCopy()
			p := Effective(tt.own, tt.defs)
			tt.check(t, p)
			if !reflect.DeepEqual(tt.own, ownBefore) || !reflect.DeepEqual(tt.defs, defsBefore) {
				t.Error("merging changed an input")
			}
		})
	}
}

func TestClusterDefaults(t *testing.T) {
	if ClusterDefaults(nil) != nil || ClusterDefaults(&infrav1.TerraformCluster{}) != nil {
		t.Error("no defaults should give nil")
	}
	tc := &infrav1.TerraformCluster{}
	tc.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{ServiceAccountName: "x"}}
	if ClusterDefaults(tc).ServiceAccountName != "x" {
		t.Error("defaults not returned")
	}
}

func TestSecurityContextOverlay(t *testing.T) {
	t.Run("user fields are applied over the defaults", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:           ptr.To(true),
			RunAsUser:              ptr.To[int64](1000),
			ReadOnlyRootFilesystem: ptr.To(false),
		}}, nil)
		sc := p.SecurityContext
		if !*sc.RunAsNonRoot || *sc.RunAsUser != 1000 || *sc.ReadOnlyRootFilesystem {
			t.Errorf("user fields not applied: %+v", sc)
		}
		if *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("defaults not kept: %+v", sc)
		}
	})
	t.Run("capabilities are replaced wholesale: a drop list without ALL keeps no ALL", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}},
		}}, nil)
		if got := p.SecurityContext.Capabilities.Drop; !slices.Equal(got, []corev1.Capability{"NET_RAW"}) {
			t.Errorf("drop = %v", got)
		}
	})
	t.Run("every SecurityContext field a user can set is applied", func(t *testing.T) {
		// Fill every pointer field of a SecurityContext through reflection,
		// so a field added by a Kubernetes upgrade fails here until
		// overlaySecurityContext learns it.
		user := &corev1.SecurityContext{}
		v := reflect.ValueOf(user).Elem()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.Kind() != reflect.Pointer {
				t.Fatalf("field %s is not a pointer; extend this test", v.Type().Field(i).Name)
			}
			f.Set(reflect.New(f.Type().Elem()))
		}
		dst := corev1.SecurityContext{}
		overlaySecurityContext(&dst, user)
		d := reflect.ValueOf(dst)
		for i := 0; i < d.NumField(); i++ {
			if d.Field(i).IsNil() {
				t.Errorf("field %s is not applied", d.Type().Field(i).Name)
			}
		}
	})
	t.Run("the user's podSecurityContext keeps its own fsGroup and seccomp", func(t *testing.T) {
		p := Effective(&infrav1.JobPolicy{PodSecurityContext: &corev1.PodSecurityContext{
			FSGroup:        ptr.To[int64](2000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		}}, nil)
		if *p.PodSecurityContext.FSGroup != 2000 || p.PodSecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined {
			t.Errorf("podSecurityContext = %+v", p.PodSecurityContext)
		}
	})
}

func TestValidatePolicy(t *testing.T) {
	tests := []struct {
		name string
		own  *infrav1.JobPolicy
		defs *infrav1.JobPolicy
		want string // "" = valid
	}{
		{"the defaults are valid", nil, nil, ""},
		{"lockTimeoutSeconds below activeDeadlineSeconds is valid",
			&infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](59), ActiveDeadlineSeconds: ptr.To[int64](60)}, nil, ""},
		{"lockTimeoutSeconds equal to activeDeadlineSeconds is JobPolicyInvalid",
			&infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](60), ActiveDeadlineSeconds: ptr.To[int64](60)}, nil, "lockTimeoutSeconds 60 is not below activeDeadlineSeconds 60"},
		{"the merge admission never sees: the machine's lock timeout against the cluster default's deadline",
			&infrav1.JobPolicy{LockTimeoutSeconds: ptr.To[int32](900)}, &infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](600)}, "lockTimeoutSeconds 900 is not below activeDeadlineSeconds 600"},
		{"a default lock timeout of 300 against a deadline of 300",
			&infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](300)}, nil, "lockTimeoutSeconds 300 is not below activeDeadlineSeconds 300"},
		{"a deadline over one day", &infrav1.JobPolicy{ActiveDeadlineSeconds: ptr.To[int64](86401)}, nil, "activeDeadlineSeconds 86401 is outside"},
		{"a negative history limit", &infrav1.JobPolicy{FailedJobsHistoryLimit: ptr.To[int32](-1)}, nil, "failedJobsHistoryLimit -1"},
		{"privileged is refused", &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}, nil, "restricted check privileged: privileged: container \"source\" must not set securityContext.privileged=true"},
		{"allowPrivilegeEscalation true is refused", &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}}, nil, "restricted check allowPrivilegeEscalation: allowPrivilegeEscalation != false: container \"source\" must set securityContext.allowPrivilegeEscalation=false"},
		{"capabilities.add is refused", &infrav1.JobPolicy{SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}, nil, "capabilities.add must be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Effective(tt.own, tt.defs)
			err := p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
			if !errors.Is(err, ErrPolicyInvalid) {
				t.Error("not ErrPolicyInvalid")
			}
		})
	}
}
