package lifecycle

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
)

// TestReservedPodLabelWithoutTheWebhook: a cluster whose spec.defaults.jobs
// gives its machines' pods a CAPTF label, stored without the webhook (this
// suite has none), gets its machine no Job: ApplyJobSucceeded is
// False/JobPolicyInvalid naming the key, nothing is written and the
// cluster's state is untouched. Removing the key starts the machine's
// apply with the machine's own pod label on it.
func TestReservedPodLabelWithoutTheWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.provisionedCluster("prod")
	before := e.stateSecret(w.TC)
	e.update(w.TC, func() {
		w.TC.Spec.Defaults = &infrav1.ClusterDefaults{Jobs: &infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{
			Labels: map[string]string{infrav1.OpLabel: "destroy", "team": "platform"}}}}
	})
	mw := e.newMachine(w, "prod-md-0", func(tm *infrav1.TerraformMachine) {
		tm.Spec.Jobs = &infrav1.JobPolicy{PodMetadata: &infrav1.PodMetadata{Labels: map[string]string{"team": "db"}}}
	})
	e.mustPass(mw.TM)
	e.mustPass(mw.TM)
	if js := e.jobsOf(mw.TM); len(js) != 0 {
		t.Fatalf("a Job was created under a reserved pod label: %v", jobNames(js))
	}
	if s := e.secretsWithPrefix(jobs.RunSecretPrefix); len(s) != 0 {
		t.Fatalf("a per-run Secret %s was written under a reserved pod label", s[0].Name)
	}
	c := e.wantCondition(mw.TM, infrav1.ApplyJobSucceededCondition, metav1.ConditionFalse, infrav1.JobPolicyInvalidReason)
	if !strings.Contains(c.Message, "podMetadata.labels["+infrav1.OpLabel+"]") {
		t.Fatalf("JobPolicyInvalid message %q does not name the key", c.Message)
	}
	if e.durable(mw.TM) != nil {
		t.Error("durable inputs written for a Job that is not created")
	}
	if after := e.stateSecret(w.TC); after == nil || after.ResourceVersion != before.ResourceVersion {
		t.Error("the cluster's state Secret changed")
	}

	e.update(w.TC, func() { delete(w.TC.Spec.Defaults.Jobs.PodMetadata.Labels, infrav1.OpLabel) })
	e.mustPass(mw.TM)
	job := e.wantJob(mw.TM, infrav1.OperationApply)
	if got := job.Spec.Template.Labels["team"]; got != "db" {
		t.Errorf("pod label team = %q, want the machine's db over the cluster's platform", got)
	}
}
