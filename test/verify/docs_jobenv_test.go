package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// docsCell returns the trimmed cell of a row in the named column, or "".
func docsCell(t docsTable, r docsRow, column string) string {
	c := t.column(column)
	if c < 0 || c >= len(r.Cells) {
		return ""
	}
	return strings.TrimSpace(r.Cells[c])
}

// docsFirstCode is the first code span of a cell, or "".
func docsFirstCode(cell string) string {
	if n := docsCodeNames(cell); len(n) > 0 {
		return n[0]
	}
	return ""
}

// TestDocsJobEnvironmentMatchesGolden: job-environment.md's volume, mount,
// environment, argument, name and policy facts are those of the golden Job
// (internal/jobs/testdata/apply.yaml, itself checked by internal/jobs
// against the builder) and of internal/jobs' and internal/decide's exported
// values.
func TestDocsJobEnvironmentMatchesGolden(t *testing.T) {
	r := docsRoot(t)
	page := filepath.Join(r, docsReferenceDir, "job-environment.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	gb, err := os.ReadFile(filepath.Join(r, "internal", "jobs", "testdata", "apply.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(gb, &job); err != nil {
		t.Fatalf("parsing the golden Job: %v", err)
	}
	pod := job.Spec.Template.Spec
	var src *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == jobs.SourceContainer {
			src = &pod.Containers[i]
		}
	}
	if src == nil {
		t.Fatalf("the golden Job has no %s container", jobs.SourceContainer)
	}
	tables := docsParseTables(text)
	find := func(cols ...string) []docsTable {
		var out []docsTable
		for _, tb := range tables {
			ok := true
			for _, c := range cols {
				ok = ok && tb.column(c) >= 0
			}
			if ok {
				out = append(out, tb)
			}
		}
		return out
	}

	// Volumes and mounts, both ways.
	vt := find("Volume", "Mount path", "Read-only")
	if len(vt) != 1 {
		t.Fatalf("job-environment.md needs one table with Volume, Mount path and Read-only columns, has %d", len(vt))
	}
	docMounts := map[string][2]string{}
	for _, row := range vt[0].Rows {
		docMounts[docsFirstCode(docsCell(vt[0], row, "Volume"))] = [2]string{docsFirstCode(docsCell(vt[0], row, "Mount path")), docsCell(vt[0], row, "Read-only")}
	}
	for _, m := range src.VolumeMounts {
		ro := "no"
		if m.ReadOnly {
			ro = "yes"
		}
		got, ok := docsMounts(docMounts, m.Name)
		if !ok {
			t.Errorf("the golden Job mounts volume %s at %s, but job-environment.md has no row for it", m.Name, m.MountPath)
			continue
		}
		if got != [2]string{m.MountPath, ro} {
			t.Errorf("volume %s: the golden Job mounts it at %s read-only=%s, the page says %s read-only=%s", m.Name, m.MountPath, ro, got[0], got[1])
		}
	}
	if len(docMounts) != len(src.VolumeMounts) {
		t.Errorf("job-environment.md lists %d volumes, the golden Job's %s container mounts %d", len(docMounts), jobs.SourceContainer, len(src.VolumeMounts))
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode != jobs.SecretFileMode {
			t.Errorf("volume %s has mode %o, want %o", v.Name, *v.Secret.DefaultMode, jobs.SecretFileMode)
		}
	}
	if !strings.Contains(text, fmt.Sprintf("mode %04o", jobs.SecretFileMode)) {
		t.Errorf("job-environment.md does not state the Secret file mode %04o", jobs.SecretFileMode)
	}
	for _, p := range []string{contract.ModuleDir, contract.RuntimePath, contract.ProvidersDir, contract.TerminationMessagePath, jobs.RunnerPath} {
		if !strings.Contains(text, "`"+p) {
			t.Errorf("job-environment.md does not name the path %s", p)
		}
	}

	// Environment, both ways.
	et := find("Variable", "Value")
	if len(et) != 1 {
		t.Fatalf("job-environment.md needs one table with Variable and Value columns, has %d", len(et))
	}
	docEnv := map[string]string{}
	for _, row := range et[0].Rows {
		docEnv[docsFirstCode(docsCell(et[0], row, "Variable"))] = docsFirstCode(docsCell(et[0], row, "Value"))
	}
	for _, e := range src.Env {
		want, ok := docEnv[e.Name]
		switch {
		case !ok:
			t.Errorf("the golden Job sets %s, but job-environment.md has no row for it", e.Name)
		case e.Name == "KUBE_NAMESPACE":
			if e.Value != job.Namespace {
				t.Errorf("KUBE_NAMESPACE is %q in the golden Job, want the namespace %q", e.Value, job.Namespace)
			}
		case want != e.Value:
			t.Errorf("%s is %q in the golden Job, the page says %q", e.Name, e.Value, want)
		}
	}
	if len(docEnv) != len(src.Env) {
		t.Errorf("job-environment.md lists %d variables, the golden Job sets %d", len(docEnv), len(src.Env))
	}

	// Arguments: every fixed argument of the golden Job is on the page, in
	// the golden order.
	last := -1
	for _, a := range src.Args {
		flag, _, _ := strings.Cut(a, "=")
		probe := "`" + flag
		if flag == "--backend-config" {
			probe = "`" + a[:strings.IndexAny(a[len("--backend-config="):], "=")+len("--backend-config=")+1]
		}
		i := strings.Index(text, probe)
		if i < 0 {
			t.Errorf("the golden Job passes %s, but job-environment.md does not name %s", a, strings.Trim(probe, "`"))
			continue
		}
		if i < last {
			t.Errorf("job-environment.md names %s before the argument that precedes it in the golden Job", strings.Trim(probe, "`"))
		}
		last = i
	}
	if !strings.Contains(text, "`--stop-timeout="+jobs.StopTimeout+"`") {
		t.Errorf("job-environment.md does not state --stop-timeout=%s", jobs.StopTimeout)
	}

	// Job fields and the name.
	for what, want := range map[string]string{
		"`backoffLimit` | `" + strconv.Itoa(int(*job.Spec.BackoffLimit)) + "`":                                  "backoffLimit",
		"`terminationGracePeriodSeconds` | `" + strconv.FormatInt(*pod.TerminationGracePeriodSeconds, 10) + "`": "terminationGracePeriodSeconds",
		"`restartPolicy` | `" + string(pod.RestartPolicy) + "`":                                                 "restartPolicy",
		"default `" + strconv.FormatInt(jobs.DefaultActiveDeadlineSeconds, 10) + "`":                            "the activeDeadlineSeconds default",
		"default `" + jobs.DefaultServiceAccount + "`":                                                          "the serviceAccountName default",
		"`fsGroup: " + strconv.FormatInt(jobs.RunnerUID, 10) + "`":                                              "the pod fsGroup",
		"`runAsUser: " + strconv.FormatInt(jobs.RunnerUID, 10) + "`":                                            "the runner's user",
		"`" + job.Name + "`": "the golden Job's name as the example",
		strconv.Itoa(decide.MaxJobNameLength) + " characters":                                                               "the name length limit",
		"`" + infrav1.SafeToEvictAnnotation + ": \"" + job.Spec.Template.Annotations[infrav1.SafeToEvictAnnotation] + "\"`": "the pod annotation",
	} {
		if !strings.Contains(text, what) {
			t.Errorf("job-environment.md does not state %s (%s)", want, what)
		}
	}
	if name := decide.JobName(infrav1.KindTerraformCluster, "prod", decide.OpApply, 1, job.Annotations[infrav1.InputsHashAnnotation], 0); name != job.Name {
		t.Errorf("decide.JobName gives %s for the golden Job's inputs, the golden name is %s", name, job.Name)
	}

	// Policy defaults.
	pt := find("Field", "Default", "Limits")
	if len(pt) != 1 {
		t.Fatalf("job-environment.md needs one table with Field, Default and Limits columns, has %d", len(pt))
	}
	defaults := map[string]string{
		"successfulJobsHistoryLimit": strconv.Itoa(int(jobs.DefaultSuccessfulJobsHistoryLimit)),
		"failedJobsHistoryLimit":     strconv.Itoa(int(jobs.DefaultFailedJobsHistoryLimit)),
		"activeDeadlineSeconds":      strconv.FormatInt(jobs.DefaultActiveDeadlineSeconds, 10),
		"lockTimeoutSeconds":         strconv.Itoa(int(jobs.DefaultLockTimeoutSeconds)),
		"serviceAccountName":         jobs.DefaultServiceAccount,
	}
	for _, row := range pt[0].Rows {
		f := docsFirstCode(docsCell(pt[0], row, "Field"))
		want, ok := defaults[f]
		if !ok {
			t.Errorf("job-environment.md line %d: the policy field %q is not one this test knows", row.Line, f)
			continue
		}
		if got := docsFirstCode(docsCell(pt[0], row, "Default")); got != want {
			t.Errorf("job-environment.md line %d: %s defaults to %s in internal/jobs, the page says %s", row.Line, f, want, got)
		}
		delete(defaults, f)
	}
	for f := range defaults {
		t.Errorf("job-environment.md has no policy row for %s", f)
	}
	res := jobs.DefaultResources()
	for _, q := range []string{"`cpu: " + res.Requests.Cpu().String() + "`", "`memory: " + res.Requests.Memory().String() + "`", "limit `memory: " + res.Limits.Memory().String() + "`"} {
		if !strings.Contains(text, q) {
			t.Errorf("job-environment.md does not state the default resource %s", q)
		}
	}
	if res.Limits.Cpu() != nil && !res.Limits.Cpu().IsZero() {
		t.Errorf("internal/jobs sets a default CPU limit, the page says there is none")
	}

	// Reserved environment names: what the page says is dropped is.
	p := jobs.Resolve(&infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "TF_LOG", Value: "x"}, {Name: "KUBE_CONFIG_PATH", Value: "x"}, {Name: "TFX", Value: "x"}, {Name: "KUBERNETES_X", Value: "x"}}})
	if !slices.Equal(p.DroppedEnv, []string{"TF_LOG", "KUBE_CONFIG_PATH"}) {
		t.Errorf("jobs.Resolve dropped %v, the page says exactly the names starting with TF_ or KUBE_ are dropped", p.DroppedEnv)
	}
	for _, s := range []string{"`TF_`", "`KUBE_`", "`" + infrav1.EnvVarDroppedEvent + "`"} {
		if !strings.Contains(text, s) {
			t.Errorf("job-environment.md does not name %s", s)
		}
	}
	problems, err := docsCheckKeysExist(filepath.Join(r, "api", "v1alpha1"), page)
	docsReport(t, problems, err)
}

func docsMounts(m map[string][2]string, name string) ([2]string, bool) {
	v, ok := m[name]
	return v, ok
}
