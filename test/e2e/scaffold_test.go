package e2e

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestScaffoldedMachineModule walks the module author's kit, untouched
// scaffold in hand: tfcapi-lint init --role machine, the module checks
// (--strict, clean), the contract test on the pinned OpenTofu (offline,
// every scenario passing), the image its Containerfile.opentofu describes
// (built with CAPTF's image builder, no container engine), linted and
// pushed to the environment's registry; then the Quick Start with that
// image as the machine image, whose control-plane TerraformMachine reaches
// Ready with the scaffold's placeholder provider ID.
func TestScaffoldedMachineModule(t *testing.T) {
	t.Parallel()
	w := start(t, "scaffold")
	machine := filepath.Join(t.TempDir(), "my-machine")

	if code, out := tfcapiLint(t, "init", machine, "--role", "machine"); code != lint.ExitOK {
		t.Fatalf("tfcapi-lint init: exit %d\n%s", code, out)
	}
	lintClean(t, "the scaffold", true, "module", machine, "--role", "machine", "--strict")
	tofu, err := tools.OpenTofu.Path()
	if err != nil {
		t.Fatal(err)
	}
	if code, out := tfcapiLint(t, "test", machine, "--role", "machine", "--runtime-binary", tofu); code != lint.ExitOK || !strings.Contains(out, "0 failed") {
		t.Fatalf("tfcapi-lint test: exit %d\n%s", code, out)
	}
	// Containerfile.opentofu: the pinned OpenTofu at /captf/runtime, the
	// module at /captf/module, an empty mirror (no required providers),
	// USER 65532, the io.captf.* labels with ROLE=machine.
	if _, err := os.Stat(filepath.Join(machine, "Containerfile.opentofu")); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.ModuleImage{
		Role: contract.RoleMachine, ModuleDir: machine,
		Runtime: tofu, RuntimeName: tools.OpenTofu.Name, RuntimeVersion: tools.OpenTofu.Version,
		EmptyProviders: true, Version: "v0.1.0",
		Platform: v1.Platform{OS: "linux", Architecture: goruntime.GOARCH},
	}.Build()
	if err != nil {
		t.Fatal(err)
	}
	// The steps above run offline and, on a loaded machine, take minutes of
	// their own: the environment's deadline starts here.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, err := w.e.PushImage(ctx, "acme/my-machine:v0.1.0", img); err != nil {
		t.Fatal(err)
	}
	image := w.e.ImageRef("acme/my-machine:v0.1.0")
	lintClean(t, "the pushed image", false, "image", "--role", "machine", "--strict", image)

	q := w.quickStart()
	q.Images.Machine = image
	if err := q.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	// outputs.tf: provider_id = "example:///${var.captf_object.namespace}/${var.machine_name}"
	w.quickStartMachineRuns(ctx, q, 4*time.Minute, image, "example:///")
}
