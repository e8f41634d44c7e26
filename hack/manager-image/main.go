// Command manager-image builds CAPTF's manager image (/manager and a static
// /runner, see internal/setup/managerimage) from this checkout, with no
// container engine, and writes it to an OCI image layout, pushes it to a
// registry, or both. The digest reference is printed.
//
//	go run ./hack/manager-image --registry 127.0.0.1:5000/captf --tag dev
//	go run ./hack/manager-image --layout-dir _out/images --tag v0.1.0 --version v0.1.0
//	go run ./hack/manager-image --image registry.example.com/you/cluster-api-provider-terraform:v0.1.0
//	go run ./hack/manager-image --image registry.example.com/you/cluster-api-provider-terraform:v0.1.0 --platforms linux/amd64,linux/arm64
//
// With --platforms the binaries are cross-compiled for each platform and
// the result is one multi-platform image index, as docker buildx pushes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup/managerimage"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func main() {
	var (
		o         managerimage.Options
		registry  string
		layoutDir string
		tag       string
		image     string
		insecure  bool
		platforms string
	)
	flag.StringVar(&registry, "registry", "", "push to <registry>/manager:<tag> (for example 127.0.0.1:5000/captf)")
	flag.StringVar(&layoutDir, "layout-dir", "", "write to the OCI layout <dir>/manager under the reference name <tag>")
	flag.StringVar(&tag, "tag", "dev", "image tag")
	flag.StringVar(&image, "image", "", "push to this exact reference (host/path/name:tag), as make docker-push IMG= does")
	flag.BoolVar(&insecure, "insecure", false, "use plain HTTP for a registry that is neither loopback nor private")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the binaries and the image")
	flag.StringVar(&platforms, "platforms", "", "build one image per platform of this comma-separated list (linux/amd64,linux/arm64) into a multi-platform index; --arch is then ignored")
	flag.StringVar(&o.Version, "version", "", "version stamped into the binaries and the org.opencontainers.image.version label")
	flag.StringVar(&o.Commit, "commit", "", "commit stamped into the manager and the org.opencontainers.image.revision label")
	flag.StringVar(&o.Source, "source", "", "org.opencontainers.image.source label")
	flag.StringVar(&o.OutputDir, "output-dir", "", "where the binaries are built (default bin/linux-<arch>)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "manager-image: unexpected arguments %v\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, registry, layoutDir, tag, image, platforms, insecure); err != nil {
		fmt.Fprintf(os.Stderr, "manager-image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o managerimage.Options, registry, layoutDir, tag, image, platforms string, insecure bool) error {
	if registry == "" && layoutDir == "" && image == "" {
		return errors.New("nothing to do: set --registry, --image, --layout-dir or a combination")
	}
	var archs []string
	if platforms != "" {
		var err error
		if archs, err = managerimage.ParsePlatforms(platforms); err != nil {
			return err
		}
	}
	root, err := tools.RepoRoot()
	if err != nil {
		return err
	}
	o.RepoRoot = root
	var (
		img v1.Image
		idx v1.ImageIndex
	)
	if archs != nil {
		idx, err = managerimage.BuildIndex(ctx, o, archs)
	} else {
		img, err = managerimage.Build(ctx, o)
	}
	if err != nil {
		return err
	}
	if layoutDir != "" {
		dir := filepath.Join(layoutDir, "manager")
		var d v1.Hash
		if idx != nil {
			d, err = imagebuild.WriteIndexLayout(dir, tag, idx)
		} else {
			d, err = imagebuild.WriteLayout(dir, tag, img)
		}
		if err != nil {
			return err
		}
		fmt.Printf("oci:%s:%s@%s\n", dir, tag, d)
	}
	var refs []string
	if registry != "" {
		refs = append(refs, registry+"/manager:"+tag)
	}
	if image != "" {
		refs = append(refs, image)
	}
	for _, ref := range refs {
		var d name.Digest
		if idx != nil {
			d, err = imagebuild.PushIndex(ctx, ref, idx, insecure)
		} else {
			d, err = imagebuild.Push(ctx, ref, img, insecure)
		}
		if err != nil {
			return err
		}
		fmt.Println(d.String())
	}
	return nil
}
