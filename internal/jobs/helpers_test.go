package jobs

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/decide"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
)

// The reference cluster of the book's examples: TerraformCluster prod in
// team-a.
const (
	testNamespace  = "team-a"
	testName       = "prod"
	testUID        = "5d1c2a7e-8f0b-4c39-9a51-2f6e0d4b7c11"
	testInputsHash = "h2:7cf6c0362c13fea9b92e184921dddd95ff48099396f59b89515cb66c43358c8c"
	testImage      = "ghcr.io/example/cluster-module:v1.2.0"
	testRunner     = "ghcr.io/captf-io/cluster-api-provider-terraform:v0.1.0"
	testIdentity   = "aws-prod"
	testSuffix     = "0f6a8e3b5c2d1e47-c"
	// sentinel is a credential-like value that must never reach an error,
	// a label, an annotation or an argument.
	sentinel = "SENTINEL-sk-live-3b1f9c"
)

var (
	testMainTF = []byte(`{"terraform":{"backend":{"kubernetes":{}}},"module":{"role":{"source":"../../module"}}}` + "\n")
	testTFVars = []byte(`{"captf_contract":"v1alpha1","db_password":"` + sentinel + `"}` + "\n")
)

func testOwner() owner.Owner {
	return owner.Owner{Kind: infrav1.KindTerraformCluster, Namespace: testNamespace, Name: testName, UID: testUID, ClusterName: testName}
}

// testRun is the apply of TerraformCluster prod: guarded (a cluster's apply
// always is), runner events on, default policy.
func testRun() *Run {
	p := Effective(nil, nil)
	return &Run{
		Owner:        testOwner(),
		Policy:       &p,
		Op:           infrav1.OperationApply,
		Attempt:      1,
		JobName:      decide.JobName(infrav1.KindTerraformCluster, testName, decide.OpApply, 1, testInputsHash, 0),
		Image:        testImage,
		RunnerImage:  testRunner,
		Identity:     testIdentity,
		StateSuffix:  testSuffix,
		InputsHash:   testInputsHash,
		Inputs:       Inputs{MainTF: testMainTF, TFVars: testTFVars},
		GuardDeletes: true,
		RunnerEvents: true,
	}
}

func mustBuild(t testing.TB, r *Run) (*batchv1.Job, []string) {
	t.Helper()
	job, dropped, err := Build(r)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return job, dropped
}

func source(job *batchv1.Job) *corev1.Container {
	for i := range job.Spec.Template.Spec.Containers {
		if job.Spec.Template.Spec.Containers[i].Name == SourceContainer {
			return &job.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// flags returns the args after the fixed part (everything after the
// labels backend config).
func conditionalArgs(job *batchv1.Job) []string {
	args := source(job).Args
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--backend-config=labels=") })
	return args[i+1:]
}

func envValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func envNames(c *corev1.Container) []string {
	out := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}
