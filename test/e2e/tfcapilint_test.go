package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
	"github.com/captf-io/cluster-api-provider-terraform/test/e2e/framework"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// lintCLI is the tfcapi-lint binary, built once per test binary.
var lintCLI struct {
	once sync.Once
	path string
	err  error
}

// tfcapiLint runs the tfcapi-lint command with args, as a module author
// does, and returns its exit code and output. It runs as its own process,
// without the race detector: reading an image's layers in the test binary
// costs ten times the CPU.
func tfcapiLint(t *testing.T, args ...string) (int, string) {
	t.Helper()
	lintCLI.once.Do(func() {
		dir := filepath.Join(shared.dir, "build", "tfcapi-lint")
		if lintCLI.err = os.MkdirAll(dir, 0o755); lintCLI.err == nil {
			lintCLI.path = filepath.Join(dir, "tfcapi-lint")
			lintCLI.err = tools.Build(context.Background(), "./cmd/tfcapi-lint", lintCLI.path)
		}
	})
	if lintCLI.err != nil {
		t.Fatalf("tfcapi-lint: %v", lintCLI.err)
	}
	var out bytes.Buffer
	cmd := exec.Command(lintCLI.path, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("tfcapi-lint %s: %v", strings.Join(args, " "), err)
	return 0, ""
}

// lintClean fails the test unless tfcapi-lint exits 0 and its --json
// report has no error and no warning; with noInfo, no finding at all and an
// all-zero summary. A machine image without capacity labels keeps one info
// finding (image/label-capacity). (The book's Your First Module runs its
// own module through tfcapi-lint in test/docs, as the page is written.)
func lintClean(t *testing.T, what string, noInfo bool, args ...string) {
	t.Helper()
	code, out := tfcapiLint(t, args...)
	if code != lint.ExitOK {
		t.Fatalf("tfcapi-lint %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	code, out = tfcapiLint(t, append(args, "--json")...)
	var r lint.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != lint.ExitOK {
		t.Fatalf("tfcapi-lint %s --json: exit %d, %v\n%s", strings.Join(args, " "), code, err, out)
	}
	if r.Summary.Error+r.Summary.Warning != 0 || noInfo && (len(r.Findings) != 0 || r.Summary != (lint.Summary{})) {
		t.Errorf("%s: findings %+v, summary %+v; want none and all zero", what, r.Findings, r.Summary)
	}
	t.Logf("tfcapi-lint %s: clean", strings.Join(args, " "))
}

// quickStartMachineRuns watches the applied Quick Start q until its
// control-plane machine is up, and checks that its one TerraformMachine
// runs image and took its provider ID from the module:
// <providerIDPrefix><namespace>/<Machine name>.
func (w *world) quickStartMachineRuns(ctx context.Context, q framework.QuickStart, timeout time.Duration, image, providerIDPrefix string) {
	t := w.t
	t.Helper()
	rows, ok := q.Watch(ctx, testWriter{t}, timeout)
	var table strings.Builder
	framework.Table(&table, rows)
	t.Log("\n" + table.String())
	if !ok {
		w.dump(ctx)
		_, why := framework.Done(rows)
		t.Fatalf("the TerraformMachine running %s did not come up: %s", image, why)
	}
	var tms infrav1.TerraformMachineList
	if err := w.c.List(ctx, &tms, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	var ms clusterv1.MachineList
	if err := w.c.List(ctx, &ms, client.InNamespace(w.ns)); err != nil {
		t.Fatal(err)
	}
	if len(tms.Items) != 1 || len(ms.Items) != 1 {
		t.Fatalf("%d TerraformMachines, %d Machines", len(tms.Items), len(ms.Items))
	}
	tm := tms.Items[0]
	if tm.Spec.Source.Image != image {
		t.Errorf("TerraformMachine %s runs %q, want %q", tm.Name, tm.Spec.Source.Image, image)
	}
	if want := providerIDPrefix + w.ns + "/" + ms.Items[0].Name; tm.Spec.ProviderID != want {
		t.Errorf("providerID %q, want the module's %q", tm.Spec.ProviderID, want)
	}
}
