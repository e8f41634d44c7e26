package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// terraform holds the no-op images built on the pinned Terraform, pushed
// once for the scenarios that run them.
var terraform struct {
	once   sync.Once
	err    error
	images framework.Images
}

// terraformImages returns the shared images with the no-op modules on
// Terraform (captf/noop-<role>:v0.1.0-terraform, the Quick Start's tags).
func (w *world) terraformImages(ctx context.Context) framework.Images {
	w.t.Helper()
	terraform.once.Do(func() {
		terraform.images, terraform.err = framework.PushModuleImages(ctx, root(w.t), w.e, tools.Terraform)
		terraform.images.Runner = w.images.Runner
	})
	if terraform.err != nil {
		w.t.Fatalf("the Terraform no-op images: %v", terraform.err)
	}
	return terraform.images
}

// TestQuickStartOnTerraform is the Quick Start as the book runs it, on the
// images tagged v0.1.0-terraform ("This tutorial uses the terraform tag"):
// the TerraformCluster and the control-plane TerraformMachine run their
// Jobs with HashiCorp Terraform at /captf/runtime and reach Ready=True, the
// Cluster and Machine phase Provisioned; each object's status records the
// Terraform version that ran.
func TestQuickStartOnTerraform(t *testing.T) {
	t.Parallel()
	w := start(t, "team-terraform")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	images := w.terraformImages(ctx)
	if !strings.HasSuffix(images.Cluster, "/captf/noop-cluster:v0.1.0-terraform") || !strings.HasSuffix(images.Machine, "/captf/noop-machine:v0.1.0-terraform") {
		t.Fatalf("images %+v", images)
	}
	q := w.quickStart()
	q.Images = images
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	rows, ok := q.Watch(ctx, testWriter{t}, 10*time.Minute)
	var table strings.Builder
	framework.Table(&table, rows)
	t.Log("\n" + table.String())
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the Quick Start on Terraform did not finish: %s", why)
	}
	w.checkRuntime(ctx, tools.Terraform)
	w.logJobTimes(ctx, tools.Terraform)
}

// checkRuntime fails unless every TerraformCluster and TerraformMachine of
// the scenario last ran on rt: status.source.runtimeVersion is what the
// image's /captf/runtime reported.
func (w *world) checkRuntime(ctx context.Context, rt tools.Runtime) {
	w.t.Helper()
	var tcs infrav1.TerraformClusterList
	var tms infrav1.TerraformMachineList
	if err := w.c.List(ctx, &tcs, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.List(ctx, &tms, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	check := func(kind, name string, st infrav1.WorkspaceStatus) {
		if st.Source == nil || st.Source.RuntimeVersion != rt.Version {
			w.t.Errorf("%s %s: status.source %+v, want runtimeVersion %s (%s)", kind, name, st.Source, rt.Version, rt.Name)
		}
	}
	for _, o := range tcs.Items {
		check("TerraformCluster", o.Name, o.Status.WorkspaceStatus)
	}
	for _, o := range tms.Items {
		check("TerraformMachine", o.Name, o.Status.WorkspaceStatus)
	}
}

// logJobTimes logs each apply Job of the scenario's namespace: its wall
// time (the Job's start to its completion) and the runner's steps with
// their durations, as the object's status.lastRun records them.
func (w *world) logJobTimes(ctx context.Context, rt tools.Runtime) {
	w.t.Helper()
	var jobs batchv1.JobList
	if err := w.c.List(ctx, &jobs, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	steps := map[string]string{}
	var tcs infrav1.TerraformClusterList
	var tms infrav1.TerraformMachineList
	_ = w.c.List(ctx, &tcs, client.InNamespace(w.ns))
	_ = w.c.List(ctx, &tms, client.InNamespace(w.ns))
	record := func(lr *infrav1.LastRun) {
		if lr == nil {
			return
		}
		var parts []string
		var total int64
		for _, s := range lr.Steps {
			parts = append(parts, fmt.Sprintf("%s %dms", s.Name, s.DurationMilliseconds))
			total += s.DurationMilliseconds
		}
		steps[lr.Job] = fmt.Sprintf("steps %dms: %s", total, strings.Join(parts, ", "))
	}
	for _, o := range tcs.Items {
		record(o.Status.LastRun)
	}
	for _, o := range tms.Items {
		record(o.Status.LastRun)
	}
	for _, j := range jobs.Items {
		if j.Status.StartTime == nil || j.Status.CompletionTime == nil {
			continue
		}
		w.t.Logf("%s Job %s (%s %s): wall %s; %s", rt.Name, j.Name, j.Labels[infrav1.OwnerKindLabel], j.Labels[infrav1.OwnerNameLabel],
			j.Status.CompletionTime.Sub(j.Status.StartTime.Time), steps[j.Name])
	}
}
