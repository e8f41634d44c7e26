// Command release builds a CAPTF release into one folder that is also a
// clusterctl provider repository (make release and its parts):
//
//	go run ./hack/release preflight --version v0.1.0   # the checks before a release
//	go run ./hack/release all --version v0.1.0         # everything below, into --dir
//	go run ./hack/release image --version v0.1.0       # the manager image; prints its digest reference
//	go run ./hack/release assets --version v0.1.0      # manifests, no-op images, binaries, SBOMs, checksums
//	go run ./hack/release notes --version v0.1.0       # RELEASE_NOTES.md from the commits since the previous tag
//	go run ./hack/release manifests --image REF        # infrastructure-components.yaml, metadata and templates only
//	go run ./hack/release plugin --version v0.1.0      # kubectl-captf archives and the krew manifest only
//	go run ./hack/release verify --dir DIR             # check a release folder: files, digests, checksums, clusterctl
//
// The folder, <dir>/infrastructure-terraform/<version>/ by default, holds:
//
//   - infrastructure-components.yaml (the manager image pinned by digest),
//     metadata.yaml, every cluster-template*.yaml flavor, every
//     clusterclass-*.yaml and both identity templates;
//   - images/: OCI image layouts, the manager (a multi-platform index
//     tagged <version>) and the no-op module images (noop-<role>, tagged
//     <version>-opentofu and <version>-terraform);
//   - tfcapi-lint-<os>-<arch>[.exe] binaries and kubectl-captf_<os>_<arch>.tar.gz
//     archives with the krew manifest kubectl-captf.yaml;
//   - sbom/<artifact>.cdx.json: a CycloneDX SBOM for each binary and image,
//     made from the Go build information each binary carries;
//   - RELEASE_NOTES.md and checksums.txt (sha256sum's format, every other
//     file of the folder).
//
// clusterctl reads it as a local repository: a configuration whose
// provider terraform has the URL
// file://<dir>/infrastructure-terraform/<version>/infrastructure-components.yaml.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

const usage = `usage: release <preflight|all|image|assets|notes|manifests|plugin|verify> [flags]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var o Options
	var skipVerify bool
	var platforms, binPlatforms, image string
	fs.StringVar(&o.Version, "version", "", "the release version, a semver tag such as v0.1.0")
	fs.StringVar(&o.Dir, "dir", "", "the release folder (default _out/release/infrastructure-terraform/<version>)")
	fs.StringVar(&o.ImageName, "image-name", DefaultImageName, "the manager image's repository, pinned by digest in infrastructure-components.yaml")
	fs.StringVar(&platforms, "platforms", strings.Join(DefaultImagePlatforms, ","), "the manager image's platforms")
	fs.StringVar(&binPlatforms, "binary-platforms", strings.Join(DefaultBinaryPlatforms, ","), "the platforms of the tfcapi-lint binaries and kubectl-captf archives")
	fs.StringVar(&image, "image", "", "manifests: the manager image reference to set")
	fs.BoolVar(&skipVerify, "skip-verify", false, "preflight: leave make verify out")
	_ = fs.Parse(os.Args[2:])
	o.ImagePlatforms = split(platforms)
	o.BinaryPlatforms = split(binPlatforms)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root, err := tools.RepoRoot()
	if err != nil {
		fail(err)
	}
	o.Repo = root
	if o.Dir == "" && cmd != "preflight" {
		v := o.Version
		if v == "" {
			v = "dev"
		}
		o.Dir = filepath.Join(root, "_out", "release", ProviderLabel, v)
	}
	switch cmd {
	case "preflight":
		err = Preflight(ctx, root, o.Version, !skipVerify)
	case "all":
		err = All(ctx, o)
	case "image":
		var ref string
		if ref, err = BuildManagerImage(ctx, o); err == nil {
			fmt.Println(ref)
		}
	case "assets":
		err = Assets(ctx, o)
	case "notes":
		err = WriteNotes(ctx, o)
	case "manifests":
		if image == "" {
			image = o.ImageName + ":" + o.Version
		}
		err = Manifests(ctx, o, image)
	case "plugin":
		err = Plugin(ctx, o)
	case "verify":
		var r *Report
		if r, err = Verify(o.Dir); err == nil {
			fmt.Print(r)
		}
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "release: %v\n", err)
	os.Exit(1)
}

func split(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
