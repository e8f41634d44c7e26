// Package images builds the images CAPTF runs on the local environment: the
// runner image (the static /runner a Job's init container copies) and the
// no-op module images with a pinned runtime. The end-to-end tests and the
// Quick Start push them; `captf-env push-images` builds and pushes them from
// a process of its own.
package images

import (
	"fmt"
	"path/filepath"
	goruntime "runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// RunnerRepo is the repository and tag the runner image is pushed under.
const RunnerRepo = "captf/runner:dev"

// ModuleRepo is the repository and tag of the no-op image of role on the
// runtime rt: captf/noop-<role>:v0.1.0-<rt.Tag>, the Quick Start's tags
// (the tag is the module version).
func ModuleRepo(role contract.Role, rt tools.Runtime) string {
	return "captf/noop-" + string(role) + ":v0.1.0-" + rt.Tag
}

func platform() v1.Platform { return v1.Platform{OS: "linux", Architecture: goruntime.GOARCH} }

// Runner builds the runner image from the static runner binary runnerBin.
func Runner(runnerBin string) (v1.Image, error) {
	img, err := imagebuild.Build(imagebuild.Spec{Platform: platform(), Layers: []imagebuild.Layer{{Entries: []imagebuild.Entry{
		{Path: "/runner", Mode: 0o755, Source: runnerBin},
	}}}})
	if err != nil {
		return nil, fmt.Errorf("build the runner image: %w", err)
	}
	return img, nil
}

// Module builds the no-op image of role (modules/noop/<role> under the
// repository root) with the pinned runtime rt.
func Module(root string, role contract.Role, rt tools.Runtime) (v1.Image, error) {
	bin, err := rt.Path()
	if err != nil {
		return nil, err
	}
	img, err := imagebuild.ModuleImage{
		Role: role, ModuleDir: filepath.Join(root, "modules", "noop", string(role)),
		Runtime: bin, RuntimeName: rt.Name, RuntimeVersion: rt.Version, EmptyProviders: true,
		Platform: platform(),
	}.Build()
	if err != nil {
		return nil, fmt.Errorf("build the %s image: %w", role, err)
	}
	return img, nil
}
