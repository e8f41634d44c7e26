package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/hack/internal/noopimages"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup/managerimage"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// ProviderLabel is the folder clusterctl's local repositories keep an
// infrastructure provider named terraform in.
const ProviderLabel = "infrastructure-terraform"

// DefaultImageName is the manager image's repository.
const DefaultImageName = "ghcr.io/captf-io/cluster-api-provider-terraform/manager"

// module is CAPTF's Go module path.
const module = "github.com/captf-io/cluster-api-provider-terraform"

var (
	// DefaultImagePlatforms are the manager image's platforms.
	DefaultImagePlatforms = []string{"linux/amd64", "linux/arm64"}
	// DefaultBinaryPlatforms are the platforms of the command-line tools.
	DefaultBinaryPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}
)

// Files a release folder holds besides its images and per-platform
// binaries.
const (
	ComponentsFile = "infrastructure-components.yaml"
	MetadataFile   = "metadata.yaml"
	NotesFile      = "RELEASE_NOTES.md"
	ChecksumsFile  = "checksums.txt"
	KrewFile       = "kubectl-captf.yaml"
	ImagesDir      = "images"
	SBOMDir        = "sbom"
	ManagerRepo    = "manager"
)

// Options say what to release and where.
type Options struct {
	// Repo is the CAPTF checkout to build from.
	Repo string
	// Version is the release version (vX.Y.Z).
	Version string
	// Dir is the release folder.
	Dir string
	// ImageName is the manager image's repository.
	ImageName string
	// ImagePlatforms are the manager image's platforms (linux/<arch>).
	ImagePlatforms []string
	// BinaryPlatforms are the tfcapi-lint and kubectl-captf platforms
	// (<os>/<arch>).
	BinaryPlatforms []string
}

func (o Options) check() error {
	if o.Version == "" {
		return errors.New("--version is required")
	}
	if o.Dir == "" {
		return errors.New("--dir is required")
	}
	return nil
}

// All builds the whole release: the manager image, then the assets, then
// the notes; checksums.txt is written last.
func All(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return err
	}
	ref, err := BuildManagerImage(ctx, o)
	if err != nil {
		return err
	}
	fmt.Println("manager image", ref)
	if err := assets(ctx, o); err != nil {
		return err
	}
	if err := notes(ctx, o); err != nil {
		return err
	}
	return finish(o.Dir)
}

// Assets builds everything but the manager image and the notes, from the
// manager image already in the folder (BuildManagerImage).
func Assets(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := assets(ctx, o); err != nil {
		return err
	}
	return finish(o.Dir)
}

// WriteNotes writes the release notes.
func WriteNotes(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := notes(ctx, o); err != nil {
		return err
	}
	return finish(o.Dir)
}

// finish writes what every step ends with: the SBOMs of whatever binaries
// and images the folder holds, then the checksums of every file.
func finish(dir string) error {
	if err := WriteSBOMs(dir); err != nil {
		return err
	}
	return WriteChecksums(dir)
}

func assets(ctx context.Context, o Options) error {
	ref, err := ManagerImageRef(o)
	if err != nil {
		return err
	}
	if err := Manifests(ctx, o, ref); err != nil {
		return err
	}
	if err := noopImages(ctx, o); err != nil {
		return err
	}
	if err := lintBinaries(ctx, o); err != nil {
		return err
	}
	return Plugin(ctx, o)
}

// BuildManagerImage builds the manager image for every platform into the
// layout images/manager, tagged with the version, and returns its
// reference pinned by digest.
func BuildManagerImage(ctx context.Context, o Options) (string, error) {
	if err := o.check(); err != nil {
		return "", err
	}
	archs, err := managerimage.ParsePlatforms(strings.Join(o.ImagePlatforms, ","))
	if err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "captf-release-bin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	commit, _ := git(ctx, o.Repo, "rev-parse", "HEAD")
	idx, err := managerimage.BuildIndex(ctx, managerimage.Options{
		RepoRoot: o.Repo, OutputDir: work, Version: o.Version, Commit: commit, Source: "https://" + module,
	}, archs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(o.Dir, ImagesDir, ManagerRepo)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if _, err := imagebuild.WriteIndexLayout(dir, o.Version, idx); err != nil {
		return "", err
	}
	return ManagerImageRef(o)
}

// ManagerImageRef is the manager image's reference pinned by the digest of
// the image index in the folder: <ImageName>:<version>@sha256:….
func ManagerImageRef(o Options) (string, error) {
	d, err := layoutDigest(filepath.Join(o.Dir, ImagesDir, ManagerRepo), o.Version)
	if err != nil {
		return "", fmt.Errorf("the manager image is not in the release folder (release image first): %w", err)
	}
	return o.ImageName + ":" + o.Version + "@" + d, nil
}

// layoutDigest is the digest of what the layout at dir holds under refName.
func layoutDigest(dir, refName string) (string, error) {
	_, d, err := imagebuild.LayoutEntry(dir, refName)
	if err != nil {
		return "", err
	}
	return d.Digest.String(), nil
}

// Manifests renders infrastructure-components.yaml with the manager image
// set to image (in a copy of config/, built with the pinned kustomize), and
// copies metadata.yaml, the cluster templates, the ClusterClasses and the
// identity templates next to it.
func Manifests(ctx context.Context, o Options, image string) error {
	k, err := tools.Path("kustomize")
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "captf-release-config-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(work, os.DirFS(filepath.Join(o.Repo, "config"))); err != nil {
		return err
	}
	set := exec.CommandContext(ctx, k, "edit", "set", "image", DefaultImageName+"="+image)
	set.Dir = filepath.Join(work, "default")
	if out, err := set.CombinedOutput(); err != nil {
		return fmt.Errorf("kustomize edit set image: %w: %s", err, out)
	}
	build := exec.CommandContext(ctx, k, "build", filepath.Join(work, "default"))
	var stderr bytes.Buffer
	build.Stderr = &stderr
	out, err := build.Output()
	if err != nil {
		return fmt.Errorf("kustomize build: %w: %s", err, stderr.String())
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Dir, ComponentsFile), out, 0o644); err != nil {
		return err
	}
	files, err := TemplateFiles(o.Repo)
	if err != nil {
		return err
	}
	for _, f := range append(files, filepath.Join(o.Repo, "config", MetadataFile)) {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.Dir, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// TemplateFiles are the files of templates/ a release ships: the cluster
// flavors, the ClusterClasses and the identity templates.
func TemplateFiles(repo string) ([]string, error) {
	var files []string
	for _, pattern := range []string{"cluster-template*.yaml", "clusterclass-*.yaml", "identity*.yaml"} {
		m, err := filepath.Glob(filepath.Join(repo, "templates", pattern))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("templates/ holds no %s", pattern)
		}
		files = append(files, m...)
	}
	return files, nil
}

// noopImages builds the no-op module images on both runtimes into the
// layouts images/noop-<role>, for this machine's architecture (the
// runtimes are the pinned builds for it).
func noopImages(ctx context.Context, o Options) error {
	commit, _ := git(ctx, o.Repo, "rev-parse", "HEAD")
	images, err := noopimages.Build(ctx, noopimages.Options{
		Modules: filepath.Join(o.Repo, "modules", "noop"), Tag: o.Version, Arch: runtime.GOARCH,
		Source: "https://" + module, Revision: commit,
	})
	if err != nil {
		return err
	}
	for _, im := range images {
		dir := filepath.Join(o.Dir, ImagesDir, im.Name)
		if _, err := imagebuild.WriteLayout(dir, im.Tag, im.Image); err != nil {
			return err
		}
	}
	return nil
}

// LintBinary is the name of tfcapi-lint's release binary for a platform.
func LintBinary(platform string) string {
	goos, arch, _ := strings.Cut(platform, "/")
	return "tfcapi-lint-" + goos + "-" + arch + exe(goos)
}

// PluginArchive is the name of kubectl-captf's archive for a platform.
func PluginArchive(platform string) string {
	goos, arch, _ := strings.Cut(platform, "/")
	return "kubectl-captf_" + goos + "_" + arch + ".tar.gz"
}

func exe(goos string) string {
	if goos == "windows" {
		return ".exe"
	}
	return ""
}

func lintBinaries(ctx context.Context, o Options) error {
	for _, p := range o.BinaryPlatforms {
		if err := goBuild(ctx, o.Repo, p, filepath.Join(o.Dir, LintBinary(p)),
			module+"/internal/lint.Version="+o.Version, "./cmd/tfcapi-lint"); err != nil {
			return err
		}
	}
	return nil
}

// goBuild cross-compiles pkg statically for platform, stripped, with one
// -X stamp.
func goBuild(ctx context.Context, repo, platform, out, stamp, pkg string) error {
	goos, arch, ok := strings.Cut(platform, "/")
	if !ok {
		return fmt.Errorf("platform %q: want <os>/<arch>", platform)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X "+stamp, "-o", out, pkg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w: %s", pkg, platform, err, b)
	}
	return nil
}

// Plugin builds kubectl-captf for every platform into a tar.gz archive
// holding the binary alone, and renders the krew manifest with each
// archive's checksum.
func Plugin(ctx context.Context, o Options) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "captf-release-plugin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var entries []krewPlatform
	for _, p := range o.BinaryPlatforms {
		goos, _, _ := strings.Cut(p, "/")
		bin := filepath.Join(work, p, "kubectl-captf"+exe(goos))
		if err := goBuild(ctx, o.Repo, p, bin, module+"/internal/cli.version="+o.Version, "./cmd/kubectl-captf"); err != nil {
			return err
		}
		archive := filepath.Join(o.Dir, PluginArchive(p))
		if err := tarGz(archive, bin); err != nil {
			return err
		}
		sum, err := fileSHA256(archive)
		if err != nil {
			return err
		}
		entries = append(entries, krewPlatform{Platform: p, Archive: PluginArchive(p), SHA256: sum, Bin: filepath.Base(bin)})
	}
	manifest, err := krewManifest(o.Version, entries)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.Dir, KrewFile), manifest, 0o644)
}

// tarGz writes a gzipped tar holding the one file src under its base
// name, with fixed times and owners so the same binary makes the same
// archive.
func tarGz(dst, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: filepath.Base(src), Mode: 0o755, Size: st.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// git runs git in repo and returns its trimmed output.
func git(ctx context.Context, repo string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
