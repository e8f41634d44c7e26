//go:build chaos

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
)

// webhookDown is how long the webhook scenario keeps CAPTF's webhook
// unreachable.
const webhookDown = 30 * time.Second

// TestFaultWebhookDown makes CAPTF's validating webhook unreachable for 30
// seconds while the machine's apply is held: every webhook of the
// configuration points at a port nothing listens on, as when the webhook
// Service has no ready endpoint. A tenant's writes fail with the symptom
// the webhook-unavailable runbook names ("failed calling webhook",
// "connection refused", the webhook's name) and leave nothing
// half-written: a create leaves no object, an update and a delete leave
// the object as it was. The held Job is released during the outage and
// succeeds; the manager's own writes through the webhook (the machine's
// providerID) fail and are retried. Once the webhook is back, the
// tenant's update goes through and the bring-up converges with the Jobs
// the book predicts. It does not run in parallel: the webhook is every
// namespace's.
func TestFaultWebhookDown(t *testing.T) {
	b, ctx := startHeldFaultScenario(t, 50, "TerraformMachine")
	held := b.heldRun(ctx, "apply")
	c := b.w.c
	restore := b.takeWebhookDown(ctx)
	t.Cleanup(restore)
	start := time.Now()

	// The outage is in force once a tenant's create is refused for it.
	extra := &infrav1.TerraformMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "f-extra", Namespace: b.ns},
		Spec:       infrav1.TerraformMachineSpec{WorkspaceSpec: infrav1.WorkspaceSpec{Source: infrav1.SourceSpec{Image: b.w.images.Machine}}},
	}
	var createErr error
	b.w.eventually(ctx, time.Minute, "a create refused by the unreachable webhook", func() (bool, string) {
		createErr = c.Create(ctx, extra.DeepCopy())
		return webhookUnreachable(createErr), fmt.Sprintf("create answered %v", createErr)
	})
	t.Logf("webhook down, Job %s held: a create is refused with %q", held.job.Name, createErr)
	if err := c.Get(ctx, client.ObjectKeyFromObject(extra), &infrav1.TerraformMachine{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused create left TerraformMachine %s behind (%v)", extra.Name, err)
	}
	tc := &infrav1.TerraformCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.name}, tc); err != nil {
		t.Fatal(err)
	}
	labeled := tc.DeepCopy()
	labeled.Labels["tenant-change"] = "1"
	if err := c.Update(ctx, labeled); !webhookUnreachable(err) {
		t.Errorf("an update while the webhook is down answered %v, want the webhook's failure", err)
	}
	tm := &infrav1.TerraformMachine{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: b.machines[0]}, tm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, tm); !webhookUnreachable(err) {
		t.Errorf("a delete while the webhook is down answered %v, want the webhook's failure", err)
	}
	now := &infrav1.TerraformCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tc), now); err != nil {
		t.Fatal(err)
	}
	if _, ok := now.Labels["tenant-change"]; ok {
		t.Error("the refused update changed the TerraformCluster")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(tm), tm); err != nil || !tm.DeletionTimestamp.IsZero() {
		t.Errorf("the refused delete touched TerraformMachine %s (%v)", tm.Name, err)
	}

	b.hold.Release()
	b.w.eventually(ctx, webhookDown, "Job "+held.job.Name+" to succeed while the webhook is down", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(held.job), held.job); err != nil {
			return false, err.Error()
		}
		return held.job.Status.Succeeded == 1, "not succeeded yet"
	})
	time.Sleep(time.Until(start.Add(webhookDown)))
	restore()
	t.Logf("webhook back after %v", time.Since(start).Round(time.Second))

	b.w.eventually(ctx, time.Minute, "the tenant's update to go through", func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tc), now); err != nil {
			return false, err.Error()
		}
		now.Labels["tenant-change"] = "1"
		err := c.Update(ctx, now)
		return err == nil, fmt.Sprintf("update answered %v", err)
	})
	b.waitConverged(ctx, 10*time.Minute)
	b.checkEnd(ctx)
}

// webhookUnreachable reports whether err is the API server's answer to a
// write its webhook could not be called for.
func webhookUnreachable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed calling webhook") &&
		strings.Contains(err.Error(), "validation.terraform") && strings.Contains(err.Error(), "connection refused")
}

// takeWebhookDown points every webhook of CAPTF's configuration at a port
// nothing listens on, and returns how to put them back (once).
func (b *faultBringUp) takeWebhookDown(ctx context.Context) func() {
	t, c := b.w.t, b.w.c
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: framework.WebhookConfiguration}, cfg); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	orig := cfg.DeepCopy()
	for i := range cfg.Webhooks {
		u, err := url.Parse(*cfg.Webhooks[i].ClientConfig.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = closed
		s := u.String()
		cfg.Webhooks[i].ClientConfig.URL = &s
	}
	if err := c.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		cur := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(orig), cur); err != nil {
			t.Error(err)
			return
		}
		cur.Webhooks = orig.Webhooks
		if err := c.Update(context.Background(), cur); err != nil {
			t.Error(err)
		}
	}
}
