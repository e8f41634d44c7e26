package jobs

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// BenchmarkBuild builds one apply Job and its per-run Secret, as the
// reconcile does for every Job it starts, with a policy that sets env and
// pull secrets over a cluster's defaults.
func BenchmarkBuild(b *testing.B) {
	own := &infrav1.JobPolicy{
		Env:              []corev1.EnvVar{{Name: "AWS_REGION", Value: "eu-west-1"}, {Name: "TF_LOG", Value: "DEBUG"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}
	defs := &infrav1.JobPolicy{Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}}
	r := testRun()
	b.ReportAllocs()
	for b.Loop() {
		p := Effective(own, defs)
		if err := p.Validate(); err != nil {
			b.Fatal(err)
		}
		r.Policy = &p
		job, _, err := Build(r)
		if err != nil {
			b.Fatal(err)
		}
		job.UID = "uid"
		if _, err := RunSecret(r, job); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassify classifies a finished apply Job from its pod, decoding
// the result document, as bookkeeping does once per finished Job.
func BenchmarkClassify(b *testing.B) {
	job := jobWith(infrav1.OperationApply, complete())
	pod := podWith(marshal(b, baseDoc(infrav1.OperationApply)), 0)
	b.ReportAllocs()
	for b.Loop() {
		c := Classify(job, pod)
		if c.Outcome != OutcomeSucceeded {
			b.Fatal(c.Outcome)
		}
	}
}
