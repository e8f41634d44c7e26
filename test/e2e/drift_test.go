package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestClusterDriftRemediation follows the book's Drift page for a
// TerraformCluster with action Remediate: the infrastructure is changed out
// of band (here the no-op module's stand-in resource, edited in the state the
// kubernetes backend keeps), the next drift check finds it (DriftDetected
// True, a DriftDetected event), a remediation apply re-applies the recorded
// inputs (DriftRemediationStarted), and the check after it finds none
// (DriftResolved, DriftDetected False/NoDrift).
func TestClusterDriftRemediation(t *testing.T) {
	t.Parallel()
	const ns, name = "team-drift", "drifty"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	cluster, tc := w.clusterObjects(ns, name, func(s *infrav1.TerraformClusterSpec) {
		s.Drift = &infrav1.DriftPolicy{IntervalSeconds: ptr.To[int32](10), Action: infrav1.DriftActionRemediate}
	})
	w.create(ctx, cluster, tc)
	key := client.ObjectKey{Namespace: ns, Name: name}
	driftCond := func() metav1.Condition { return conditionOf(tc, infrav1.DriftDetectedCondition) }
	w.eventually(ctx, 5*time.Minute, "the first drift check to find nothing", func() (bool, string) {
		if err := w.c.Get(ctx, key, tc); err != nil {
			return false, err.Error()
		}
		ok, why := ready(tc)
		c := driftCond()
		return ok && c.Status == metav1.ConditionFalse && c.Reason == infrav1.NoDriftReason, why + "; DriftDetected " + c.Reason
	})

	// Out of band: someone changes the stand-in resource.
	if err := editState(ctx, w.c, ns, name, func(st map[string]any) error {
		for _, r := range st["resources"].([]any) {
			res := r.(map[string]any)
			if res["type"] != "terraform_data" || res["name"] != "substrate" {
				continue
			}
			attrs := res["instances"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
			value := attrs["input"].(map[string]any)["value"].(map[string]any)
			value["endpoint"].(map[string]any)["host"] = "changed-by-hand.invalid"
			return nil
		}
		return fmt.Errorf("no terraform_data.substrate in the state")
	}); err != nil {
		t.Fatal(err)
	}

	w.eventually(ctx, 5*time.Minute, "the drift to be found, remediated and found gone", func() (bool, string) {
		seen := w.eventCounts(ctx, ns, "TerraformCluster")
		if err := w.c.Get(ctx, key, tc); err != nil {
			return false, err.Error()
		}
		c := driftCond()
		done := seen[infrav1.DriftDetectedEvent] > 0 && seen[infrav1.DriftRemediationStartedEvent] > 0 && seen[infrav1.DriftResolvedEvent] > 0 &&
			c.Status == metav1.ConditionFalse && c.Reason == infrav1.NoDriftReason
		return done, fmt.Sprintf("events %v; DriftDetected %s/%s", seen, c.Status, c.Reason)
	})
	if ok, why := ready(tc); !ok {
		t.Errorf("the cluster is not Ready after the remediation: %s", why)
	}
}

// editState rewrites the state the kubernetes backend keeps for a
// TerraformCluster (the gzip JSON under "tfstate"), keeping its serial, as
// an out-of-band change to the infrastructure would look to the next
// refresh-less plan.
func editState(ctx context.Context, c client.Client, ns, name string, edit func(map[string]any) error) error {
	var list corev1.SecretList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
		"tfstate": "true", infrav1.OwnerKindLabel: "TerraformCluster", infrav1.OwnerNameLabel: name}); err != nil {
		return err
	}
	if len(list.Items) != 1 {
		return fmt.Errorf("%d state Secrets for TerraformCluster %s, want 1", len(list.Items), name)
	}
	s := &list.Items[0]
	var st map[string]any
	if err := gunzipJSON(s.Data["tfstate"], &st); err != nil {
		return err
	}
	if err := edit(st); err != nil {
		return err
	}
	b, err := gzipJSON(st)
	if err != nil {
		return err
	}
	s.Data["tfstate"] = b
	return c.Update(ctx, s)
}
