package managerimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

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

// Architectures are the GOARCH values an image index may carry (linux
// only).
var Architectures = []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64", "386"}

// ParsePlatforms parses a comma-separated list of linux/<arch> platforms
// (for example "linux/amd64,linux/arm64", as docker buildx takes them) into
// architectures, in order and each once.
func ParsePlatforms(s string) ([]string, error) {
	var archs []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		parts := strings.Split(p, "/")
		if len(parts) != 2 || parts[0] != "linux" {
			return nil, fmt.Errorf("platform %q: want linux/<arch> (the manager runs on linux; variants are not supported)", p)
		}
		if !slices.Contains(Architectures, parts[1]) {
			return nil, fmt.Errorf("platform %q: architecture %q is not one of %s", p, parts[1], strings.Join(Architectures, ", "))
		}
		if slices.Contains(archs, parts[1]) {
			return nil, fmt.Errorf("platform %q is listed twice", p)
		}
		archs = append(archs, parts[1])
	}
	if len(archs) == 0 {
		return nil, fmt.Errorf("no platform in %q", s)
	}
	return archs, nil
}

// BuildIndex compiles the binaries for each architecture (each into
// OutputDir/linux-<arch>, or <RepoRoot>/bin/linux-<arch>) and returns the
// multi-platform image index holding one image per architecture.
func BuildIndex(ctx context.Context, o Options, archs []string) (v1.ImageIndex, error) {
	images := make([]v1.Image, 0, len(archs))
	for _, arch := range archs {
		oa := o
		oa.Arch = arch
		if o.OutputDir != "" {
			oa.OutputDir = filepath.Join(o.OutputDir, "linux-"+arch)
		}
		img, err := Build(ctx, oa)
		if err != nil {
			return nil, fmt.Errorf("linux/%s: %w", arch, err)
		}
		images = append(images, img)
	}
	return Index(images...)
}

// Index puts images into one OCI image index, each under the platform its
// config names, in the order given; two images of the same platform are an
// error.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	seen := map[string]bool{}
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("failed to read an image's config: %w", err)
		}
		p := cf.Platform()
		if p == nil || p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("an image has no platform in its config")
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for platform %s", p)
		}
		seen[p.String()] = true
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: mt, Platform: p}})
	}
	if len(adds) == 0 {
		return nil, fmt.Errorf("no image to index")
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}
