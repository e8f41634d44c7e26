package jobs

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

func TestConditionalFlags(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *Run)
		// args are the flags after the backend configuration, in order.
		args []string
		// annotations are the Job's annotations besides inputs-hash.
		annotations map[string]string
	}{
		{
			name: "an unguarded machine apply without runner events has no conditional flag",
			edit: func(r *Run) {
				r.Owner.Kind = infrav1.KindTerraformMachine
				r.GuardDeletes = false
				r.RunnerEvents = false
			},
		},
		{
			name: "a cluster apply is guarded: --guard-deletes and --inputs-hash, and --job-name names its plan detail Secret without runner events",
			edit: func(r *Run) { r.RunnerEvents = false },
			args: []string{"--guard-deletes", "--inputs-hash=" + testInputsHash, "--job-name=" + testRun().JobName},
		},
		{
			name: "a stale lock owned by the object's own runner is force-unlocked right after init",
			edit: func(r *Run) {
				r.RunnerEvents = false
				r.GuardDeletes = false
				r.ForceUnlock = "8d5f0c2e-1b7a-4c63-a0f9-3e2d6b1c7a45"
			},
			args: []string{"--force-unlock=8d5f0c2e-1b7a-4c63-a0f9-3e2d6b1c7a45"},
		},
		{
			name: "an approved destructive plan passes --allow-deletes-hash after the guard",
			edit: func(r *Run) {
				r.RunnerEvents = false
				r.AllowDeletesHash = testInputsHash
			},
			args: []string{"--guard-deletes", "--inputs-hash=" + testInputsHash, "--allow-deletes-hash=" + testInputsHash, "--job-name=" + testRun().JobName},
		},
		{
			name: "an approved Manual plan passes --expect-plan and records captf.io/approved-plan",
			edit: func(r *Run) {
				r.RunnerEvents = false
				r.GuardDeletes = false
				r.ExpectPlan = "p1:0b4c"
			},
			args:        []string{"--expect-plan=p1:0b4c", "--job-name=" + testRun().JobName},
			annotations: map[string]string{infrav1.ApprovedPlanAnnotation: "p1:0b4c"},
		},
		{
			name: "runner events on pass --event-object and --job-name",
			edit: func(r *Run) { r.GuardDeletes = false },
			args: []string{
				"--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/" + testUID,
				"--job-name=" + testRun().JobName,
			},
		},
		{
			name: "a drift remediation apply is annotated captf.io/drift-remediation",
			edit: func(r *Run) {
				r.RunnerEvents = false
				r.DriftRemediation = true
			},
			args:        []string{"--guard-deletes", "--inputs-hash=" + testInputsHash, "--job-name=" + testRun().JobName},
			annotations: map[string]string{infrav1.DriftRemediationAnnotation: "true"},
		},
		{
			name: "a restore passes --restore-chunks and --restore-resources and records captf.io/restore-serial",
			edit: func(r *Run) {
				r.Op = infrav1.OperationRestore
				r.JobName = "captf-c-prod-restore-a1-3c9e01"
				r.GuardDeletes = false
				r.RunnerEvents = false
				r.Inputs = Inputs{}
				r.Restore = &Restore{Serial: 7, Chunks: [][]byte{[]byte("chunk0"), []byte("chunk1")}, Resources: 12}
			},
			args:        []string{"--restore-chunks=2", "--restore-resources=12"},
			annotations: map[string]string{infrav1.RestoreSerialAnnotation: "7"},
		},
		{
			name: "every conditional flag at once keeps the documented order",
			edit: func(r *Run) {
				r.ForceUnlock = "lock-1"
				r.AllowDeletesHash = "h2:other"
				r.ExpectPlan = "p1:abc"
			},
			args: []string{
				"--force-unlock=lock-1",
				"--guard-deletes", "--inputs-hash=" + testInputsHash,
				"--allow-deletes-hash=h2:other",
				"--expect-plan=p1:abc",
				"--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/team-a/prod/" + testUID,
				"--job-name=" + testRun().JobName,
			},
			annotations: map[string]string{infrav1.ApprovedPlanAnnotation: "p1:abc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun()
			tt.edit(r)
			job, _ := mustBuild(t, r)
			if got := conditionalArgs(job); !slices.Equal(got, tt.args) {
				t.Errorf("conditional args = %q, want %q", got, tt.args)
			}
			want := map[string]string{infrav1.InputsHashAnnotation: testInputsHash}
			for k, v := range tt.annotations {
				want[k] = v
			}
			if !reflect.DeepEqual(job.Annotations, want) {
				t.Errorf("annotations = %v, want %v", job.Annotations, want)
			}
		})
	}
}

func TestFixedArgsOrder(t *testing.T) {
	r := testRun()
	r.Owner.Kind = infrav1.KindTerraformMachine
	r.Owner.Name = "prod-cp-x7k2p"
	r.StateSuffix = "91ab-m"
	lt := int32(120)
	p := Effective(&infrav1.JobPolicy{LockTimeoutSeconds: &lt}, nil)
	r.Policy = &p
	job, _ := mustBuild(t, r)
	c := source(job)
	want := []string{
		"--op=apply",
		"--bin=/captf/runtime",
		"--image=" + testImage,
		"--module=/captf/module",
		"--providers=/captf/providers",
		"--workdir=/captf/work",
		"--config=/captf/config",
		"--lock-timeout=120s",
		"--stop-timeout=570s",
		"--backend-config=secret_suffix=91ab-m",
		"--backend-config=namespace=team-a",
		"--backend-config=in_cluster_config=true",
		`--backend-config=labels={"captf.infrastructure.cluster.x-k8s.io/owner-kind"="TerraformMachine","captf.infrastructure.cluster.x-k8s.io/owner-name"="prod-cp-x7k2p","captf.io/managed"="true","cluster.x-k8s.io/cluster-name"="prod","clusterctl.cluster.x-k8s.io/move"=""}`,
	}
	if got := c.Args[:len(want)]; !slices.Equal(got, want) {
		t.Errorf("fixed args:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(c.Command, []string{"/captf/bin/runner", "run"}) {
		t.Errorf("command = %q", c.Command)
	}
}

func TestRestoreMountsChunksUnderRestoreDir(t *testing.T) {
	r := testRun()
	r.Op = infrav1.OperationRestore
	r.GuardDeletes = false
	r.Inputs = Inputs{}
	r.Restore = &Restore{Serial: 3, Chunks: [][]byte{{1}, {2}, {3}}, Resources: 1}
	job, _ := mustBuild(t, r)
	var cfg *corev1.SecretVolumeSource
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == ConfigVolume {
			cfg = v.Secret
		}
	}
	want := []corev1.KeyToPath{{Key: "restore-0", Path: "restore/0"}, {Key: "restore-1", Path: "restore/1"}, {Key: "restore-2", Path: "restore/2"}}
	if cfg == nil || !reflect.DeepEqual(cfg.Items, want) {
		t.Fatalf("config volume items = %+v, want %+v", cfg, want)
	}
	job.UID = "job-uid"
	sec, err := RunSecret(r, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range want {
		if _, ok := sec.Data[it.Key]; !ok {
			t.Errorf("per-run Secret lacks %s", it.Key)
		}
	}
	if _, ok := sec.Data[contract.MainFile]; ok || len(sec.Data) != 3 {
		t.Errorf("a restore's per-run Secret holds only the chunks, got keys %v", slices.Sorted(maps.Keys(sec.Data)))
	}
}

func TestRunSecret(t *testing.T) {
	r := testRun()
	job, _ := mustBuild(t, r)

	t.Run("the per-run Secret is created after the Job: no UID is an error", func(t *testing.T) {
		if _, err := RunSecret(r, job); err == nil {
			t.Fatal("RunSecret accepted a Job without a UID")
		}
	})
	job.UID = "0b7e5c1d-job"
	sec, err := RunSecret(r, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("captf-run-<job>, owned by the Job, immutable, holding the rendered root and tfvars", func(t *testing.T) {
		if sec.Name != "captf-run-"+job.Name || sec.Namespace != testNamespace {
			t.Errorf("name = %s/%s", sec.Namespace, sec.Name)
		}
		if len(sec.OwnerReferences) != 1 {
			t.Fatalf("owner references = %+v", sec.OwnerReferences)
		}
		o := sec.OwnerReferences[0]
		if o.Kind != "Job" || o.APIVersion != "batch/v1" || o.Name != job.Name || o.UID != job.UID || !*o.Controller || !*o.BlockOwnerDeletion {
			t.Errorf("owner reference = %+v", o)
		}
		if sec.Immutable == nil || !*sec.Immutable {
			t.Error("per-run Secret is not immutable")
		}
		if string(sec.Data[contract.MainFile]) != string(testMainTF) || string(sec.Data[contract.TFVarsFile]) != string(testTFVars) {
			t.Errorf("data keys %v do not hold the rendered files", slices.Sorted(maps.Keys(sec.Data)))
		}
		if sec.Labels[infrav1.ManagedLabel] != "true" || sec.Labels[infrav1.OwnerKindLabel] != string(infrav1.KindTerraformCluster) {
			t.Errorf("labels = %v", sec.Labels)
		}
	})
	t.Run("the per-run Secret of another Job is refused", func(t *testing.T) {
		other := job.DeepCopy()
		other.Name = "captf-c-prod-apply-a2-ffffff"
		if _, err := RunSecret(r, other); err == nil {
			t.Fatal("RunSecret accepted another Job")
		}
	})
}

func TestEnvironment(t *testing.T) {
	own := &infrav1.JobPolicy{Env: []corev1.EnvVar{
		{Name: "AWS_REGION", Value: "eu-west-1"},
		{Name: "TF_LOG", Value: "TRACE"},
		{Name: "KUBE_CONFIG_PATH", Value: "/" + sentinel},
		{Name: "TMPDIR", Value: "/captf/work/tmp"},
		{Name: "TF_LOG", Value: "DEBUG"},
		{Name: "HTTPS_PROXY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "proxy"}, Key: "url"}}},
	}}
	p := Effective(own, nil)
	r := testRun()
	r.Policy = &p
	job, dropped := mustBuild(t, r)
	c := source(job)

	t.Run("TF_* and KUBE_* entries of spec.jobs.env are dropped and named once, never valued", func(t *testing.T) {
		if want := []string{"TF_LOG", "KUBE_CONFIG_PATH"}; !slices.Equal(dropped, want) {
			t.Errorf("dropped = %q, want %q", dropped, want)
		}
		if v, _ := envValue(c, "TF_LOG"); v != "" {
			t.Errorf("TF_LOG reached the container")
		}
		for _, e := range c.Env {
			if strings.Contains(e.Value, sentinel) {
				t.Errorf("%s carries a dropped value", e.Name)
			}
		}
	})
	t.Run("the Job sets TF_IN_AUTOMATION, TF_INPUT, HOME, TMPDIR, KUBE_NAMESPACE and CHECKPOINT_DISABLE first", func(t *testing.T) {
		want := []string{"TF_IN_AUTOMATION", "TF_INPUT", "HOME", "TMPDIR", "KUBE_NAMESPACE", "CHECKPOINT_DISABLE", "AWS_REGION", "HTTPS_PROXY"}
		if got := envNames(c); !slices.Equal(got, want) {
			t.Errorf("env names = %q, want %q", got, want)
		}
		if v, _ := envValue(c, "KUBE_NAMESPACE"); v != testNamespace {
			t.Errorf("KUBE_NAMESPACE = %q", v)
		}
	})
	t.Run("a user TMPDIR replaces the Job's in place instead of repeating the name", func(t *testing.T) {
		if v, _ := envValue(c, "TMPDIR"); v != "/captf/work/tmp" {
			t.Errorf("TMPDIR = %q", v)
		}
	})
	t.Run("credentials come by envFrom of the mirror and as 0440 files", func(t *testing.T) {
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "captf-creds-"+testIdentity {
			t.Errorf("envFrom = %+v", c.EnvFrom)
		}
		var creds *corev1.Volume
		for i := range job.Spec.Template.Spec.Volumes {
			if job.Spec.Template.Spec.Volumes[i].Name == CredsVolume {
				creds = &job.Spec.Template.Spec.Volumes[i]
			}
		}
		if creds == nil || creds.Secret.SecretName != "captf-creds-"+testIdentity || *creds.Secret.DefaultMode != 0o440 {
			t.Errorf("creds volume = %+v", creds)
		}
	})
	t.Run("Build drops reserved names even from a hand-made policy", func(t *testing.T) {
		hand := Effective(nil, nil)
		hand.Env = []corev1.EnvVar{{Name: "TF_VAR_x", Value: sentinel}, {Name: "A", Value: "b"}}
		r := testRun()
		r.Policy = &hand
		job, dropped := mustBuild(t, r)
		if !slices.Equal(dropped, []string{"TF_VAR_x"}) {
			t.Errorf("dropped = %q", dropped)
		}
		if _, ok := envValue(source(job), "TF_VAR_x"); ok {
			t.Error("TF_VAR_x reached the container")
		}
	})
}

func TestLabelHashing(t *testing.T) {
	long := strings.Repeat("machine-", 9) + "x" // 73 characters
	longCluster := strings.Repeat("c", 64)
	r := testRun()
	r.Owner.Kind = infrav1.KindTerraformMachine
	r.Owner.Name = long
	r.Owner.ClusterName = longCluster
	r.GuardDeletes = false
	job, _ := mustBuild(t, r)

	t.Run("an owner name over 63 characters becomes the first 16 hex of its sha256", func(t *testing.T) {
		got := job.Labels[infrav1.OwnerNameLabel]
		if got != owner.LabelValue(long) || len(got) != 16 {
			t.Errorf("owner-name = %q", got)
		}
		// sha256("machine-"×9 + "x") computed independently with sha256sum.
		if owner.LabelValue(long) != "b052bae15d506839" {
			t.Errorf("owner.LabelValue(long) = %q: the hash rule changed", owner.LabelValue(long))
		}
	})
	t.Run("a cluster name over 63 characters is hashed likewise, in labels and backend labels", func(t *testing.T) {
		h := owner.LabelValue(longCluster)
		if job.Labels[clusterv1.ClusterNameLabel] != h || len(h) != 16 {
			t.Errorf("cluster-name = %q", job.Labels[clusterv1.ClusterNameLabel])
		}
		if !strings.Contains(BackendLabels(r.Owner), `"cluster.x-k8s.io/cluster-name"="`+h+`"`) {
			t.Errorf("backend labels = %s", BackendLabels(r.Owner))
		}
	})
	t.Run("names of 63 characters or fewer are kept", func(t *testing.T) {
		n := strings.Repeat("a", 63)
		if owner.LabelValue(n) != n {
			t.Error("a 63-character value was hashed")
		}
	})
	t.Run("every label value is a valid label value", func(t *testing.T) {
		for k, v := range job.Labels {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				t.Errorf("label %s=%q: %v", k, v, msgs)
			}
		}
	})
	t.Run("labels are the same on the Job and its pod", func(t *testing.T) {
		if !reflect.DeepEqual(job.Labels, job.Spec.Template.Labels) {
			t.Errorf("Job labels %v, pod labels %v", job.Labels, job.Spec.Template.Labels)
		}
	})
	t.Run("an object without a cluster name has no cluster-name label", func(t *testing.T) {
		o := testOwner()
		o.ClusterName = ""
		if _, ok := o.Labels()[clusterv1.ClusterNameLabel]; ok {
			t.Error("empty cluster-name label")
		}
		if strings.Contains(BackendLabels(o), "cluster-name") {
			t.Error("empty cluster-name backend label")
		}
	})
}

func TestHCLString(t *testing.T) {
	for in, want := range map[string]string{
		"plain":     `"plain"`,
		`a"b\c`:     `"a\"b\\c"`,
		"x${y}":     `"x$${y}"`,
		"x%{y}":     `"x%%{y}"`,
		"cost $5":   `"cost $5"`,
		"line\nend": `"line\nend"`,
	} {
		if got := hclString(in); got != want {
			t.Errorf("hclString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *Run)
		want string
	}{
		{"an unknown owner kind", func(r *Run) { r.Owner.Kind = "Machine" }, `owner kind "Machine"`},
		{"an owner without a UID", func(r *Run) { r.Owner.UID = "" }, "has no UID"},
		{"no policy", func(r *Run) { r.Policy = nil }, "no Job policy"},
		{"an invalid policy is JobPolicyInvalid", func(r *Run) {
			p := Effective(&infrav1.JobPolicy{LockTimeoutSeconds: ptr.To(int32(600)), ActiveDeadlineSeconds: ptr.To(int64(600))}, nil)
			r.Policy = &p
		}, "lockTimeoutSeconds 600 is not below activeDeadlineSeconds 600"},
		{"an unknown operation", func(r *Run) { r.Op = "import" }, `operation "import"`},
		{"attempt 0", func(r *Run) { r.Attempt = 0 }, "attempt 0"},
		{"a Job name that is not a DNS label", func(r *Run) { r.JobName = "Captf_Bad" }, "not a DNS label"},
		{"no module image", func(r *Run) { r.Image = "" }, "module image"},
		{"no runner image", func(r *Run) { r.RunnerImage = " " }, "runner image"},
		{"a bad pull policy", func(r *Run) { r.ImagePullPolicy = "Sometimes" }, "image pull policy"},
		{"no identity", func(r *Run) { r.Identity = "" }, "identity name"},
		{"no state suffix", func(r *Run) { r.StateSuffix = "" }, "state suffix"},
		{"missing rendered files", func(r *Run) { r.Inputs.TFVars = nil }, "needs both main.tf.json and terraform.tfvars.json"},
		{"a restore without chunks", func(r *Run) { r.Op = infrav1.OperationRestore; r.GuardDeletes = false; r.Restore = &Restore{Serial: 1} }, "at least one backup chunk"},
		{"chunks outside a restore", func(r *Run) { r.Restore = &Restore{Serial: 1, Chunks: [][]byte{{1}}} }, "only for a restore"},
		{"a guard without the inputs hash", func(r *Run) { r.InputsHash = "" }, "needs the inputs hash"},
		{"an allowed destructive hash without the guard", func(r *Run) { r.GuardDeletes = false; r.AllowDeletesHash = "h2:x" }, "needs guarded deletes"},
		{"an expected plan on a destroy", func(r *Run) { r.Op = infrav1.OperationDestroy; r.GuardDeletes = false; r.ExpectPlan = "p1:x" }, "only for an apply"},
		{"inputs over the Secret limit", func(r *Run) { r.Inputs.TFVars = make([]byte, MaxRunSecretBytes) }, "over the 1048576-byte limit"},
		{"a restore whose backup chunks are over the Secret limit", func(r *Run) {
			r.Op, r.GuardDeletes, r.Inputs = infrav1.OperationRestore, false, Inputs{}
			r.Restore = &Restore{Serial: 3, Chunks: [][]byte{make([]byte, MaxRunSecretBytes/2), make([]byte, MaxRunSecretBytes/2+1)}}
		}, "over the 1048576-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun()
			tt.edit(r)
			job, _, err := Build(r)
			if err == nil || job != nil {
				t.Fatalf("Build = %v, %v; want an error", job, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), sentinel) {
				t.Errorf("error carries an input value: %q", err)
			}
		})
	}
	t.Run("a policy error matches ErrPolicyInvalid", func(t *testing.T) {
		r := testRun()
		p := Effective(&infrav1.JobPolicy{LockTimeoutSeconds: ptr.To(int32(3600))}, nil)
		r.Policy = &p
		_, _, err := Build(r)
		var pe *PolicyError
		if !errors.Is(err, ErrPolicyInvalid) || !errors.As(err, &pe) || pe.Reason() != infrav1.JobPolicyInvalidReason {
			t.Errorf("error %v is not a JobPolicyInvalid PolicyError", err)
		}
	})
	t.Run("a nil run", func(t *testing.T) {
		if _, _, err := Build(nil); err == nil {
			t.Error("Build(nil) succeeded")
		}
	})
}

func TestBuildDoesNotShareThePolicy(t *testing.T) {
	own := &infrav1.JobPolicy{
		Env:              []corev1.EnvVar{{Name: "A", Value: "1"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
	}
	p := Effective(own, nil)
	r := testRun()
	r.Policy = &p
	job, _ := mustBuild(t, r)
	c := source(job)
	c.Env[len(c.Env)-1].Value = "changed"
	c.SecurityContext.Capabilities.Drop[0] = "NET_RAW"
	job.Spec.Template.Spec.ImagePullSecrets[0].Name = "changed"
	job.Spec.Template.Spec.SecurityContext.FSGroup = ptr.To(int64(1))
	if p.Env[0].Value != "1" || p.SecurityContext.Capabilities.Drop[0] != "ALL" || p.ImagePullSecrets[0].Name != "pull" || *p.PodSecurityContext.FSGroup != RunnerUID {
		t.Error("editing the Job changed the policy it was built from")
	}
	if own.Env[0].Value != "1" || own.ImagePullSecrets[0].Name != "pull" {
		t.Error("editing the Job changed the object's spec")
	}
}

func TestPullPolicyAndServiceAccount(t *testing.T) {
	r := testRun()
	r.ImagePullPolicy = corev1.PullAlways
	p := Effective(&infrav1.JobPolicy{ServiceAccountName: "custom-runner", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}, nil)
	r.Policy = &p
	job, _ := mustBuild(t, r)
	if got := source(job).ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("pull policy = %s", got)
	}
	spec := job.Spec.Template.Spec
	if spec.ServiceAccountName != "custom-runner" {
		t.Errorf("serviceAccountName = %s", spec.ServiceAccountName)
	}
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets = %+v", spec.ImagePullSecrets)
	}
}

func TestCredsSecretNameFollowsTheMirrorRule(t *testing.T) {
	if got := CredsSecretName("aws"); got != "captf-creds-aws" {
		t.Errorf("CredsSecretName(aws) = %s", got)
	}
	long := strings.Repeat("a", 250)
	if got := CredsSecretName(long); len(got) > 253 || !strings.HasPrefix(got, "captf-creds-") {
		t.Errorf("CredsSecretName(250 chars) = %s (%d)", got, len(got))
	}
}
