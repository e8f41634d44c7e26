package jobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// MaxRunSecretBytes caps the data of a per-run Secret: the API server
// refuses a Secret whose data is over 1 MiB.
const MaxRunSecretBytes = 1 << 20

// Inputs are the rendered root and its variables (internal/inputs).
type Inputs struct {
	MainTF []byte
	TFVars []byte
}

// Restore is what a restore Job pushes: the backup's chunks in order and
// its managed-resource count (internal/state.RestoreInput).
type Restore struct {
	Serial    int64
	Chunks    [][]byte
	Resources int
}

// Run is everything one Job is built from. Nothing in it is read from the
// API server here: the reconcile flow gathers it.
type Run struct {
	// Owner is the object the Job runs for; the Job is owned by it.
	Owner owner.Owner
	// Policy is the effective Job policy (Effective, then Validate).
	Policy *Policy
	// Op is the operation.
	Op infrav1.Operation
	// Attempt is the attempt number (the a<N> of the name), at least 1.
	Attempt int
	// JobName is the Job's name, as internal/decide computed it.
	JobName string

	// Image is the module image to run: spec.source.image, or the pinned
	// repo@sha256 reference.
	Image string
	// ImagePullPolicy of the module container; IfNotPresent when empty.
	ImagePullPolicy corev1.PullPolicy
	// RunnerImage is the image holding /runner (--runner-image).
	RunnerImage string
	// Identity is the resolved TerraformClusterIdentity's name; its mirror
	// captf-creds-<identity> is mounted and injected.
	Identity string
	// StateSuffix is the backend's secret_suffix (internal/state.Suffix).
	StateSuffix string

	// InputsHash is the hash of the inputs the Job runs (its
	// captf.io/inputs-hash annotation, and --inputs-hash when guarded).
	InputsHash string
	// Inputs are the rendered files, for every operation but restore.
	Inputs Inputs
	// Restore is set for a restore, and only then.
	Restore *Restore

	// ForceUnlock is a stale state lock ID to clear (--force-unlock).
	ForceUnlock string
	// GuardDeletes stops an apply before a delete or replace
	// (--guard-deletes, with --inputs-hash).
	GuardDeletes bool
	// AllowDeletesHash is the approved destructive inputs hash
	// (--allow-deletes-hash); it needs GuardDeletes.
	AllowDeletesHash string
	// ExpectPlan is the approved plan hash an apply must re-plan to
	// (--expect-plan, and the captf.io/approved-plan annotation).
	ExpectPlan string
	// DriftRemediation marks an apply that remediates drift
	// (captf.io/drift-remediation).
	DriftRemediation bool
	// RunnerEvents passes --event-object and --job-name so the runner emits
	// its progress events on the owner (manager flag --runner-events).
	RunnerEvents bool
}

// Labels are the labels of an object's Job and its pod
// (reference-facts §7.2, §8.1).
func Labels(o owner.Owner, op infrav1.Operation, attempt int) map[string]string {
	l := o.Labels()
	l[infrav1.OpLabel] = string(op)
	l[infrav1.AttemptLabel] = strconv.Itoa(attempt)
	return l
}

// EventObject is the runner's --event-object value for the owner,
// <apiVersion>/<kind>/<namespace>/<name>/<uid>.
func EventObject(o owner.Owner) string {
	return infrav1.GroupVersion.String() + "/" + string(o.Kind) + "/" + o.Namespace + "/" + o.Name + "/" + string(o.UID)
}

// BackendLabels is the --backend-config=labels= value: an HCL object of
// the labels the kubernetes backend puts on the state Secrets and lock
// Lease, in the documented order (owner-kind, owner-name, managed,
// cluster-name, move="").
func BackendLabels(o owner.Owner) string {
	var b strings.Builder
	b.Grow(256)
	b.WriteString("labels={")
	pair := func(k, v string) {
		if b.Len() > len("labels={") {
			b.WriteByte(',')
		}
		b.WriteString(hclString(k))
		b.WriteByte('=')
		b.WriteString(hclString(v))
	}
	pair(infrav1.OwnerKindLabel, string(o.Kind))
	pair(infrav1.OwnerNameLabel, owner.LabelValue(o.Name))
	pair(infrav1.ManagedLabel, "true")
	if o.ClusterName != "" {
		pair(clusterv1.ClusterNameLabel, owner.LabelValue(o.ClusterName))
	}
	pair(infrav1.MoveLabel, "")
	b.WriteByte('}')
	return b.String()
}

// hclString quotes s as an HCL string literal, escaping quotes,
// backslashes, control characters and template sequences.
func hclString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		case (c == '$' || c == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte(c)
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CredsSecretName is the credential mirror of an identity,
// captf-creds-<identity>, named as internal/identity names it (an over-long
// name ends in a hash).
func CredsSecretName(name string) string { return identity.MirrorName(name) }

// validate checks a Run and names every problem (never a value of the
// inputs, which may carry secrets).
func (r *Run) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !r.Owner.Kind.Valid() {
		bad("owner kind %q is not a workload kind %v", r.Owner.Kind, infrav1.WorkloadKinds())
	}
	if r.Owner.Namespace == "" || r.Owner.Name == "" {
		bad("owner needs a namespace and a name (got %q/%q)", r.Owner.Namespace, r.Owner.Name)
	}
	if r.Owner.UID == "" {
		bad("owner %s/%s has no UID", r.Owner.Namespace, r.Owner.Name)
	}
	if r.Policy == nil {
		bad("no Job policy")
	} else if err := r.Policy.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch r.Op {
	case infrav1.OperationApply, infrav1.OperationDestroy, infrav1.OperationDrift,
		infrav1.OperationRefresh, infrav1.OperationRestore, infrav1.OperationPlan:
	default:
		bad("operation %q is not one of apply, destroy, drift, refresh, restore, plan", r.Op)
	}
	if r.Attempt < 1 {
		bad("attempt %d is below 1", r.Attempt)
	}
	if msgs := validation.IsDNS1123Label(r.JobName); len(msgs) > 0 {
		bad("Job name %q is not a DNS label: %s", r.JobName, strings.Join(msgs, ", "))
	}
	if strings.TrimSpace(r.Image) == "" || strings.ContainsAny(r.Image, " \t\n") {
		bad("module image %q is empty or holds whitespace", r.Image)
	}
	if _, err := name.ParseReference(r.Image, name.WeakValidation); err != nil && strings.TrimSpace(r.Image) != "" && !strings.ContainsAny(r.Image, " \t\n") {
		bad("module image %q is not an image reference: %v", r.Image, err)
	}
	if strings.TrimSpace(r.RunnerImage) == "" || strings.ContainsAny(r.RunnerImage, " \t\n") {
		bad("runner image %q is empty or holds whitespace", r.RunnerImage)
	}
	switch r.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		bad("image pull policy %q is not Always, IfNotPresent or Never", r.ImagePullPolicy)
	}
	if msgs := validation.IsDNS1123Subdomain(r.Identity); len(msgs) > 0 {
		bad("identity name %q is not a DNS subdomain: %s", r.Identity, strings.Join(msgs, ", "))
	}
	if r.StateSuffix == "" || strings.ContainsAny(r.StateSuffix, "=, \t\n\"") {
		bad("state suffix %q is empty or not a plain name", r.StateSuffix)
	}
	if r.Op == infrav1.OperationRestore {
		switch {
		case r.Restore == nil || len(r.Restore.Chunks) == 0:
			bad("a restore needs at least one backup chunk")
		case r.Restore.Resources < 0:
			bad("restore resource count %d is negative", r.Restore.Resources)
		}
		if r.Restore != nil && r.Restore.Serial < 1 {
			bad("restore serial %d is below 1", r.Restore.Serial)
		}
	} else {
		if r.Restore != nil {
			bad("backup chunks are only for a restore, not %s", r.Op)
		}
		if len(r.Inputs.MainTF) == 0 || len(r.Inputs.TFVars) == 0 {
			bad("%s needs both %s and %s", r.Op, contract.MainFile, contract.TFVarsFile)
		}
	}
	if r.GuardDeletes && r.InputsHash == "" {
		bad("guarding deletes needs the inputs hash")
	}
	if r.AllowDeletesHash != "" && !r.GuardDeletes {
		bad("an allowed destructive hash needs guarded deletes")
	}
	if r.ExpectPlan != "" && r.Op != infrav1.OperationApply {
		bad("an expected plan hash is only for an apply, not %s", r.Op)
	}
	if r.DriftRemediation && r.Op != infrav1.OperationApply {
		bad("a drift remediation is an apply, not %s", r.Op)
	}
	for name, v := range map[string]string{"force-unlock": r.ForceUnlock, "inputs-hash": r.InputsHash, "allow-deletes-hash": r.AllowDeletesHash, "expect-plan": r.ExpectPlan} {
		if strings.ContainsAny(v, "\n\r") {
			bad("--%s holds a line break", name)
		}
	}
	if n := r.secretBytes(); n > MaxRunSecretBytes {
		bad("the per-run Secret would hold %d bytes, over the %d-byte limit", n, MaxRunSecretBytes)
	}
	return errors.Join(errs...)
}

func (r *Run) secretBytes() int {
	if r.Restore != nil {
		n := 0
		for _, c := range r.Restore.Chunks {
			n += len(c)
		}
		return n
	}
	return len(r.Inputs.MainTF) + len(r.Inputs.TFVars)
}

// args are the module container's arguments after `run`, in the
// documented order: the fixed flags, the backend configuration, then the
// conditional flags.
func (r *Run) args() []string {
	a := make([]string, 0, 24)
	a = append(a,
		"--op="+string(r.Op),
		"--bin="+contract.RuntimePath,
		"--image="+r.Image,
		"--module="+contract.ModuleDir,
		"--providers="+contract.ProvidersDir,
		"--workdir="+contract.WorkDir,
		"--config="+contract.ConfigDir,
		"--lock-timeout="+strconv.Itoa(int(r.Policy.LockTimeoutSeconds))+"s",
		"--stop-timeout="+StopTimeout,
		"--backend-config=secret_suffix="+r.StateSuffix,
		"--backend-config=namespace="+r.Owner.Namespace,
		"--backend-config=in_cluster_config=true",
		"--backend-config="+BackendLabels(r.Owner),
	)
	if r.ForceUnlock != "" {
		a = append(a, "--force-unlock="+r.ForceUnlock)
	}
	if r.GuardDeletes {
		a = append(a, "--guard-deletes", "--inputs-hash="+r.InputsHash)
	}
	if r.AllowDeletesHash != "" {
		a = append(a, "--allow-deletes-hash="+r.AllowDeletesHash)
	}
	if r.ExpectPlan != "" {
		a = append(a, "--expect-plan="+r.ExpectPlan)
	}
	if r.RunnerEvents {
		a = append(a, "--event-object="+EventObject(r.Owner), "--job-name="+r.JobName)
	} else if r.Op == infrav1.OperationPlan || r.GuardDeletes || r.ExpectPlan != "" {
		// The runner names the plan detail Secret after the Job.
		a = append(a, "--job-name="+r.JobName)
	}
	if r.Op == infrav1.OperationRestore && r.Restore != nil {
		a = append(a,
			"--restore-chunks="+strconv.Itoa(len(r.Restore.Chunks)),
			"--restore-resources="+strconv.Itoa(r.Restore.Resources))
	}
	return a
}

// env is the module container's environment: the Job's own variables,
// then the user's (spec.jobs.env with TF_* and KUBE_* dropped). A user
// entry naming HOME, TMPDIR or CHECKPOINT_DISABLE replaces the Job's value
// in place rather than repeating the name. It returns the dropped names.
func (r *Run) env() ([]corev1.EnvVar, []string) {
	fixed := [...]corev1.EnvVar{
		{Name: "TF_IN_AUTOMATION", Value: "1"},
		{Name: "TF_INPUT", Value: "0"},
		{Name: "HOME", Value: contract.WorkDir},
		{Name: "TMPDIR", Value: TmpDir},
		{Name: "KUBE_NAMESPACE", Value: r.Owner.Namespace},
		{Name: "CHECKPOINT_DISABLE", Value: "1"},
	}
	env := make([]corev1.EnvVar, len(fixed), len(fixed)+len(r.Policy.Env))
	copy(env, fixed[:])
	dropped := append([]string(nil), r.Policy.DroppedEnv...)
next:
	for i := range r.Policy.Env {
		e := &r.Policy.Env[i]
		if reservedEnv(e.Name) {
			for _, d := range dropped {
				if d == e.Name {
					continue next
				}
			}
			dropped = append(dropped, e.Name)
			continue
		}
		for j := 2; j < len(fixed); j++ {
			if env[j].Name == e.Name {
				env[j] = *e.DeepCopy()
				continue next
			}
		}
		env = append(env, *e.DeepCopy())
	}
	return env, dropped
}

// Build returns the Job of one run (reference-facts §8.1) and the names of
// the spec.jobs.env entries it dropped (TF_* and KUBE_*; names only), for
// the caller's EnvVarDropped event. The Job is owned by the object
// (controller, blocking its deletion) and mounts the per-run Secret
// RunSecretName(JobName), which the caller creates first with
// PendingRunSecret and hands to the Job once it exists. Bad input returns an error naming every problem, and no Job.
func Build(r *Run) (*batchv1.Job, []string, error) {
	if r == nil {
		return nil, nil, errors.New("no run to build a Job for")
	}
	if err := r.validate(); err != nil {
		return nil, nil, fmt.Errorf("cannot build Job %q for %s %s/%s: %w", r.JobName, r.Owner.Kind, r.Owner.Namespace, r.Owner.Name, err)
	}
	job, dropped := r.job()
	// The whole pod, as it would be created, against the Pod Security
	// Standards (EvaluatePodSecurity): a pod that fails is never built.
	if probs := EvaluatePodSecurity(&job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec); len(probs) > 0 {
		return nil, nil, fmt.Errorf("cannot build Job %q for %s %s/%s: %w", r.JobName, r.Owner.Kind, r.Owner.Namespace, r.Owner.Name, podSecurityError(probs))
	}
	return job, dropped, nil
}

// job assembles the Job of a validated run and the names of the env
// entries it dropped.
func (r *Run) job() (*batchv1.Job, []string) {
	p := r.Policy
	labels := Labels(r.Owner, r.Op, r.Attempt)
	podLabels := make(map[string]string, len(labels))
	for k, v := range labels {
		podLabels[k] = v
	}
	annotations := make(map[string]string, 4)
	if r.InputsHash != "" {
		annotations[infrav1.InputsHashAnnotation] = r.InputsHash
	}
	if r.DriftRemediation {
		annotations[infrav1.DriftRemediationAnnotation] = "true"
	}
	if r.ExpectPlan != "" {
		annotations[infrav1.ApprovedPlanAnnotation] = r.ExpectPlan
	}
	if r.Op == infrav1.OperationRestore {
		annotations[infrav1.RestoreSerialAnnotation] = strconv.FormatInt(r.Restore.Serial, 10)
	}
	if len(annotations) == 0 {
		annotations = nil
	}

	pull := r.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	env, dropped := r.env()
	runnerSC := RunnerSecurityContext()
	sourceSC := *p.SecurityContext.DeepCopy()
	podSC := *p.PodSecurityContext.DeepCopy()
	mode := SecretFileMode

	configVolume := corev1.SecretVolumeSource{SecretName: RunSecretName(r.JobName), DefaultMode: &mode}
	if r.Op == infrav1.OperationRestore {
		configVolume.Items = make([]corev1.KeyToPath, len(r.Restore.Chunks))
		for i := range r.Restore.Chunks {
			configVolume.Items[i] = corev1.KeyToPath{Key: restoreKey(i), Path: RestoreDir + "/" + strconv.Itoa(i)}
		}
	}
	credsName := CredsSecretName(r.Identity)

	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.JobName,
			Namespace:   r.Owner.Namespace,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         infrav1.GroupVersion.String(),
				Kind:               string(r.Owner.Kind),
				Name:               r.Owner.Name,
				UID:                r.Owner.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(p.ActiveDeadlineSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: map[string]string{infrav1.SafeToEvictAnnotation: "false"},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To(TerminationGracePeriodSeconds),
					ServiceAccountName:            p.ServiceAccountName,
					ImagePullSecrets:              append([]corev1.LocalObjectReference(nil), p.ImagePullSecrets...),
					SecurityContext:               &podSC,
					InitContainers: []corev1.Container{{
						Name:                     RunnerContainer,
						Image:                    r.RunnerImage,
						Command:                  []string{RunnerBinary, "copy", RunnerPath},
						Resources:                RunnerResources(),
						SecurityContext:          &runnerSC,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						VolumeMounts:             []corev1.VolumeMount{{Name: RunnerVolume, MountPath: contract.RunnerDir}},
					}},
					Containers: []corev1.Container{{
						Name:                     SourceContainer,
						Image:                    r.Image,
						ImagePullPolicy:          pull,
						Command:                  []string{RunnerPath, "run"},
						Args:                     r.args(),
						Env:                      env,
						EnvFrom:                  []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: credsName}}}},
						Resources:                *p.Resources.DeepCopy(),
						SecurityContext:          &sourceSC,
						TerminationMessagePath:   contract.TerminationMessagePath,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						VolumeMounts: []corev1.VolumeMount{
							{Name: RunnerVolume, MountPath: contract.RunnerDir, ReadOnly: true},
							{Name: WorkVolume, MountPath: contract.WorkDir},
							{Name: TmpVolume, MountPath: TmpDir},
							{Name: ConfigVolume, MountPath: contract.ConfigDir, ReadOnly: true},
							{Name: CredsVolume, MountPath: contract.CredentialsDir, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: RunnerVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: WorkVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: TmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{Secret: &configVolume}},
						{Name: CredsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: credsName, DefaultMode: ptr.To(SecretFileMode)}}},
					},
				},
			},
		},
	}
	if len(job.Spec.Template.Spec.ImagePullSecrets) == 0 {
		job.Spec.Template.Spec.ImagePullSecrets = nil
	}
	p.Placement.apply(&job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec)
	return job, dropped
}

// RunSecret returns the per-run Secret captf-run-<job> of a created Job:
// owned by the Job (controller, blocking its deletion), so it goes with the
// Job, and immutable, so nothing can change the files under a running Job.
// It holds main.tf.json and terraform.tfvars.json, or for a restore the
// backup chunks as restore-0, restore-1, … (mounted as restore/0, …). job
// must be the Job Build returned for r, as created (it needs its UID).
// The manager creates it as PendingRunSecret before the Job, then hands it
// to the Job (RunSecretOwners): this is the Secret it ends up as.
func RunSecret(r *Run, job *batchv1.Job) (*corev1.Secret, error) {
	if r == nil || job == nil {
		return nil, errors.New("a per-run Secret needs its run and its created Job")
	}
	if job.UID == "" {
		return nil, fmt.Errorf("the Job %s/%s has no UID yet: create it before its per-run Secret", job.Namespace, job.Name)
	}
	if job.Name != r.JobName || job.Namespace != r.Owner.Namespace {
		return nil, fmt.Errorf("the Job %s/%s is not the Job %s/%s of this run", job.Namespace, job.Name, r.Owner.Namespace, r.JobName)
	}
	return runSecret(r, RunSecretOwners(job))
}

// PendingRunSecret returns the per-run Secret of r before its Job exists:
// the data and labels of RunSecret's, owned by the Terraform* object
// instead (owner.Reference: no controller, not blocking its deletion).
// Created before the Job, it closes the window in which a manager that
// dies between the two creations would leave a Job whose pod can never
// start: it leaves a Secret instead, which the next pass takes up for the
// same Job name (or the garbage collector with the object). Once the Job
// exists, its owner references become RunSecretOwners(job).
func PendingRunSecret(r *Run) (*corev1.Secret, error) {
	if r == nil {
		return nil, errors.New("a per-run Secret needs its run")
	}
	if r.Owner.UID == "" {
		return nil, fmt.Errorf("%s has no UID: a per-run Secret is owned by it until its Job exists", r.Owner)
	}
	return runSecret(r, []metav1.OwnerReference{r.Owner.Reference()})
}

// RunSecretOwners are the owner references of a created Job's per-run
// Secret: the Job alone, as controller, blocking its deletion.
func RunSecretOwners(job *batchv1.Job) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion:         batchv1.SchemeGroupVersion.String(),
		Kind:               "Job",
		Name:               job.Name,
		UID:                job.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
}

func runSecret(r *Run, owners []metav1.OwnerReference) (*corev1.Secret, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("cannot build the per-run Secret of Job %s/%s: %w", r.Owner.Namespace, r.JobName, err)
	}
	var data map[string][]byte
	if r.Op == infrav1.OperationRestore {
		data = make(map[string][]byte, len(r.Restore.Chunks))
		for i, c := range r.Restore.Chunks {
			data[restoreKey(i)] = c
		}
	} else {
		data = map[string][]byte{contract.MainFile: r.Inputs.MainTF, contract.TFVarsFile: r.Inputs.TFVars}
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            RunSecretName(r.JobName),
			Namespace:       r.Owner.Namespace,
			Labels:          Labels(r.Owner, r.Op, r.Attempt),
			OwnerReferences: owners,
		},
		Immutable: ptr.To(true),
		Type:      corev1.SecretTypeOpaque,
		Data:      data,
	}, nil
}

func restoreKey(i int) string { return restoreKeyPrefix + strconv.Itoa(i) }
