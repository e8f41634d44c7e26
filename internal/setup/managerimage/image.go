package managerimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
)

// Paths of the binaries in the image.
const (
	ManagerPath = "/manager"
	RunnerPath  = "/runner"
)

// User is the image's user.
const User = "65532"

const module = "github.com/captf-io/cluster-api-provider-terraform"

// Options say what to build.
type Options struct {
	// RepoRoot is the CAPTF checkout to build from (required).
	RepoRoot string
	// Arch is the GOARCH of the binaries and the image (default this
	// process's).
	Arch string
	// OutputDir receives the binaries manager and runner (default
	// <RepoRoot>/bin/linux-<arch>). It must outlive the image: layers read
	// the binaries when the image is written or pushed.
	OutputDir string
	// Version and Commit are stamped into both binaries and the image's
	// org.opencontainers.image.version/.revision labels when set.
	Version, Commit string
	// Source sets org.opencontainers.image.source when set.
	Source string
	// Go is the go command (default "go").
	Go string
}

// Binaries are the built files.
type Binaries struct {
	Manager, Runner string
}

// BuildBinaries compiles the manager and the runner for linux/<arch>,
// statically (CGO_ENABLED=0), with -trimpath and stripped symbols.
func BuildBinaries(ctx context.Context, o Options) (Binaries, error) {
	o = defaults(o)
	if o.RepoRoot == "" {
		return Binaries{}, fmt.Errorf("managerimage: RepoRoot is required")
	}
	if err := os.MkdirAll(o.OutputDir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("failed to create %s: %w", o.OutputDir, err)
	}
	ldflags := []string{"-s", "-w"}
	if o.Version != "" {
		ldflags = append(ldflags,
			"-X", module+"/internal/setup.Version="+o.Version,
			"-X", module+"/internal/runner.Version="+o.Version)
	}
	if o.Commit != "" {
		ldflags = append(ldflags, "-X", module+"/internal/setup.Commit="+o.Commit)
	}
	out := o.OutputDir + string(filepath.Separator)
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", strings.Join(ldflags, " "),
		"-o", out, "./cmd/manager", "./cmd/runner")
	cmd.Dir = o.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return Binaries{}, fmt.Errorf("failed to build the manager and runner: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return Binaries{Manager: filepath.Join(o.OutputDir, "manager"), Runner: filepath.Join(o.OutputDir, "runner")}, nil
}

// Build compiles the binaries and returns the image holding them. Write it
// with imagebuild.WriteLayout or push it with imagebuild.Push.
func Build(ctx context.Context, o Options) (v1.Image, error) {
	o = defaults(o)
	bins, err := BuildBinaries(ctx, o)
	if err != nil {
		return nil, err
	}
	return Image(bins, o)
}

// Image assembles the image from built binaries: /runner in its own layer
// below /manager, both root-owned and 0755, run as User with /manager as
// entrypoint.
func Image(bins Binaries, o Options) (v1.Image, error) {
	o = defaults(o)
	labels := map[string]string{}
	for k, v := range map[string]string{
		contract.LabelVersion:  o.Version,
		contract.LabelRevision: o.Commit,
		contract.LabelSource:   o.Source,
	} {
		if v != "" {
			labels[k] = v
		}
	}
	img, err := imagebuild.Build(imagebuild.Spec{
		Platform: v1.Platform{OS: "linux", Architecture: o.Arch},
		Layers: []imagebuild.Layer{
			{Entries: []imagebuild.Entry{{Path: RunnerPath, Mode: 0o755, Source: bins.Runner}}},
			{Entries: []imagebuild.Entry{{Path: ManagerPath, Mode: 0o755, Source: bins.Manager}}},
		},
		User:       User,
		Entrypoint: []string{ManagerPath},
		Labels:     labels,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to build the manager image: %w", err)
	}
	return img, nil
}

func defaults(o Options) Options {
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.OutputDir == "" && o.RepoRoot != "" {
		o.OutputDir = filepath.Join(o.RepoRoot, "bin", "linux-"+o.Arch)
	}
	return o
}
