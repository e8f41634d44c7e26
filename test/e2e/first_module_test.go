package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
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
// all-zero summary ("A clean module prints an empty finding list and an
// all-zero summary"). A machine image without capacity labels keeps one
// info finding (image/label-capacity), which the page's image does not set.
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

// TestYourFirstModule follows the book's "Your First Module" page in order,
// as a module author would, on the local environment:
//
//  1. the page's four files (testdata/first-module/machine) in machine/;
//  2. tfcapi-lint module ./machine --role machine --strict: clean;
//  3. the reference Containerfile.terraform saved into machine/, and the
//     image built with CAPTF's image builder instead of a container engine:
//     what that Containerfile produces (the module and the Containerfile
//     at /captf/module, an empty /captf/providers from the mirror stage,
//     Terraform at /captf/runtime, USER 65532, the io.captf.* labels with
//     ROLE=machine);
//  4. saved to a local OCI directory and linted there, then pushed and
//     linted by reference: clean;
//  5. first-module-template.yaml applied and read back;
//
// and then its "Next steps": a machine template like this one wired into
// the Quick Start's cluster, whose control-plane TerraformMachine runs the
// module on Terraform and reaches Ready with the module's provider ID.
func TestYourFirstModule(t *testing.T) {
	t.Parallel()
	w := start(t, "first-module")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	r := root(t)
	work := t.TempDir()
	machine := filepath.Join(work, "machine")

	// 1. Write the module.
	if err := os.CopyFS(machine, os.DirFS(filepath.Join("testdata", "first-module", "machine"))); err != nil {
		t.Fatal(err)
	}

	// 2. Lint the module.
	lintClean(t, "the module", true, "module", machine, "--role", "machine", "--strict")

	// 3. Package it as an image: the reference Terraform-based
	// Containerfile saved into machine/, then the build.
	cf, err := os.ReadFile(filepath.Join(r, "modules", "Containerfile.terraform"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(machine, "Containerfile.terraform"), cf, 0o644); err != nil {
		t.Fatal(err)
	}
	tf, err := tools.Terraform.Path()
	if err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.ModuleImage{
		Role: contract.RoleMachine, ModuleDir: machine,
		Runtime: tf, RuntimeName: tools.Terraform.Name, RuntimeVersion: tools.Terraform.Version,
		// The mirror stage's mkdir: a module with no required_providers
		// ships an empty mirror.
		EmptyProviders: true,
		Platform:       v1.Platform{OS: "linux", Architecture: goruntime.GOARCH},
	}.Build()
	if err != nil {
		t.Fatal(err)
	}

	// 4. Lint the image: a local OCI directory first, then the pushed
	// reference.
	ociDir := filepath.Join(work, "first-module-image")
	if _, err := imagebuild.WriteLayout(ociDir, "v1.0.0", img); err != nil {
		t.Fatal(err)
	}
	lintClean(t, "the OCI directory", false, "image", "--role", "machine", "oci:"+ociDir)
	if _, err := w.e.PushImage(ctx, "acme/machine:v1.0.0", img); err != nil {
		t.Fatal(err)
	}
	image := w.e.ImageRef("acme/machine:v1.0.0")
	lintClean(t, "the pushed image", false, "image", "--role", "machine", image)

	// 5. Reference it from a TerraformMachineTemplate: the page's file,
	// with the scenario's namespace and the pushed image.
	raw, err := os.ReadFile(filepath.Join("testdata", "first-module", "first-module-template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.Decode(raw)
	if err != nil || len(objs) != 1 {
		t.Fatalf("first-module-template.yaml: %d objects, %v", len(objs), err)
	}
	tmpl := objs[0]
	tmpl.SetNamespace(w.ns)
	if err := unstructured.SetNestedField(tmpl.Object, image, "spec", "template", "spec", "source", "image"); err != nil {
		t.Fatal(err)
	}
	w.namespace(ctx, w.ns)
	w.create(ctx, tmpl)
	var got infrav1.TerraformMachineTemplate
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "first-module"}, &got); err != nil {
		t.Fatalf("kubectl get terraformmachinetemplate first-module: %v", err)
	}
	if got.Spec.Template.Spec.Source.Image != image {
		t.Errorf("template image %q, want %q", got.Spec.Template.Spec.Source.Image, image)
	}

	// Next steps: the Quick Start with this module as the machine image.
	q := w.quickStart()
	q.Images = w.terraformImages(ctx)
	q.Images.Machine = image
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	// provider_id = "noop:///${var.captf_object.namespace}/${var.machine_name}"
	w.quickStartMachineRuns(ctx, q, 10*time.Minute, image, "noop:///")
	w.checkRuntime(ctx, tools.Terraform)
	w.logJobTimes(ctx, tools.Terraform)
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
