package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestMachineRemediation follows the book's Machine Remediation page with
// annotateMachine on and unhealthyThreshold 2. The no-op machine module
// reports the health found in a state the test writes (its health_source
// variable), read at every health sample; drift checks every 10 s are the
// samples.
//
//   - Degraded: InfrastructureHealthy turns False; after two consecutive
//     unhealthy samples CAPTF sets cluster.x-k8s.io/remediate-machine and
//     captf.io/remediation-requested on the owning Machine
//     (RemediationRequested).
//   - Healthy again: CAPTF removes both (RemediationWithdrawn).
//   - Terminated: the threshold is skipped; the first sample requests it.
func TestMachineRemediation(t *testing.T) {
	t.Parallel()
	const ns, name, machine, healthSuffix = "team-heal", "heal", "heal-worker-0", "heal-health"
	w := start(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w.identityFor(ctx, ns)
	cluster, tc := w.clusterObjects(ns, name, nil)
	w.create(ctx, cluster, tc,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: machine + "-bootstrap", Namespace: ns},
			Data:       map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")},
		},
		&infrav1.TerraformMachine{
			ObjectMeta: metav1.ObjectMeta{Name: machine, Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Spec: infrav1.TerraformMachineSpec{
				WorkspaceSpec: infrav1.WorkspaceSpec{
					Source:    infrav1.SourceSpec{Image: w.images.Machine},
					Variables: map[string]apiextensionsv1.JSON{"health_source": {Raw: []byte(`"` + healthSuffix + `"`)}},
				},
				Drift:       &infrav1.MachineDriftPolicy{IntervalSeconds: ptr.To[int32](10)},
				Remediation: &infrav1.MachineRemediation{AnnotateMachine: ptr.To(true), UnhealthyThreshold: ptr.To[int32](2)},
			},
		},
		&clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: machine, Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: name}},
			Spec: clusterv1.MachineSpec{
				ClusterName: name,
				Version:     "v1.36.3",
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(machine + "-bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "TerraformMachine", Name: machine},
			},
		})
	tm := &infrav1.TerraformMachine{}
	cm := &clusterv1.Machine{}
	read := func() {
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: machine}, tm); err != nil {
			t.Fatal(err)
		}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: machine}, cm); err != nil {
			t.Fatal(err)
		}
	}
	healthy := func() (metav1.Condition, bool) {
		c := conditionOf(tm, infrav1.InfrastructureHealthyCondition)
		return c, c.Status == metav1.ConditionTrue
	}
	requested := func() (bool, string) {
		_, remediate := cm.Annotations[infrav1.RemediateMachineAnnotation]
		why, mine := cm.Annotations[infrav1.RemediationRequestedAnnotation]
		return remediate && mine, why
	}
	w.eventually(ctx, 5*time.Minute, "the machine to be Ready", func() (bool, string) {
		read()
		return ready(tm)
	})

	setHealth := func(state string, ok bool) {
		t.Helper()
		if err := writeHealthState(ctx, w.c, ns, healthSuffix, state, ok); err != nil {
			t.Fatal(err)
		}
	}
	setHealth("degraded", false)
	var why string
	w.eventually(ctx, 3*time.Minute, "remediation to be requested after two unhealthy samples", func() (bool, string) {
		read()
		c, _ := healthy()
		var ok bool
		ok, why = requested()
		return ok, fmt.Sprintf("InfrastructureHealthy %s/%s, unhealthySamples %d, requested %q", c.Status, c.Reason, tm.Status.UnhealthySamples, why)
	})
	// The Machine is annotated before the TerraformMachine's status of the
	// same pass is written; the request itself says after how many samples.
	var samples int
	if _, err := fmt.Sscanf(why[strings.Index(why, " for ")+1:], "for %d consecutive samples", &samples); err != nil || samples < 2 {
		t.Errorf("remediation was requested with %q, want after at least 2 unhealthy samples", why)
	}

	setHealth("running", true)
	w.eventually(ctx, 3*time.Minute, "the request to be withdrawn once healthy", func() (bool, string) {
		read()
		c, ok := healthy()
		_, remediate := cm.Annotations[infrav1.RemediateMachineAnnotation]
		_, mine := cm.Annotations[infrav1.RemediationRequestedAnnotation]
		return ok && !remediate && !mine, fmt.Sprintf("InfrastructureHealthy %s/%s, annotations %v", c.Status, c.Reason, cm.Annotations)
	})

	setHealth("terminated", false)
	w.eventually(ctx, 3*time.Minute, "a terminated instance to be remediated at once", func() (bool, string) {
		read()
		ok, why := requested()
		return ok && strings.Contains(why, "terminated"), fmt.Sprintf("unhealthySamples %d, requested %q", tm.Status.UnhealthySamples, why)
	})

	// Events are written after the pass's writes, by the manager's event
	// broadcaster: wait for them.
	w.eventually(ctx, time.Minute, "two RemediationRequested events and one RemediationWithdrawn", func() (bool, string) {
		seen := w.eventCounts(ctx, ns, "TerraformMachine")
		return seen[infrav1.RemediationRequestedEvent] >= 2 && seen[infrav1.RemediationWithdrawnEvent] >= 1,
			fmt.Sprintf("RemediationRequested %d, RemediationWithdrawn %d", seen[infrav1.RemediationRequestedEvent], seen[infrav1.RemediationWithdrawnEvent])
	})
}

// writeHealthState writes the state the no-op machine module's
// health_source reads: one output, machine_health, in the kubernetes
// backend's format (gzip JSON under "tfstate", Secret
// tfstate-default-<suffix>).
func writeHealthState(ctx context.Context, c client.Client, ns, suffix, state string, healthy bool) error {
	doc := map[string]any{
		"version": 4, "terraform_version": "1.12.6", "serial": time.Now().UnixNano(), "lineage": "captf-e2e-health",
		"outputs": map[string]any{"machine_health": map[string]any{
			"value": map[string]any{"state": state, "healthy": healthy, "message": "set by the test", "reasons": []string{"test"}},
			"type":  []any{"object", map[string]any{"state": "string", "healthy": "bool", "message": "string", "reasons": []any{"list", "string"}}},
		}},
		"resources": []any{},
	}
	b, err := gzipJSON(doc)
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tfstate-default-" + suffix, Namespace: ns}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); client.IgnoreNotFound(err) != nil {
		return err
	}
	s.Data = map[string][]byte{"tfstate": b}
	if s.ResourceVersion == "" {
		return c.Create(ctx, s)
	}
	return c.Update(ctx, s)
}
