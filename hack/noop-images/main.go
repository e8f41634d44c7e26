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

	"github.com/captf-io/cluster-api-provider-terraform/hack/internal/noopimages"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
)

type options struct {
	modules   string
	layoutDir string
	registry  string
	insecure  bool
	tag       string
	roles     string
	runtimes  string
	tofu      string
	terraform string
	arch      string
	source    string
	revision  string
}

func main() {
	var o options
	flag.StringVar(&o.modules, "modules", "modules/noop", "directory holding the cluster, machine and machinepool modules")
	flag.StringVar(&o.layoutDir, "layout-dir", "", "write each role's images to the OCI layout <dir>/noop-<role>")
	flag.StringVar(&o.registry, "registry", "", "push each image to <registry>/noop-<role>:<tag>-<runtime> (for example 127.0.0.1:5000/captf)")
	flag.BoolVar(&o.insecure, "insecure", false, "use plain HTTP for a registry that is neither loopback nor private")
	flag.StringVar(&o.tag, "tag", "dev", "the module version: images are tagged <tag>-opentofu and <tag>-terraform, also their org.opencontainers.image.version label")
	flag.StringVar(&o.roles, "roles", "cluster,machine,machinepool", "the roles to build, comma- or space-separated")
	flag.StringVar(&o.runtimes, "runtimes", "opentofu,terraform", "the runtimes to build each role with, comma- or space-separated")
	flag.StringVar(&o.tofu, "tofu", "", "OpenTofu binary for /captf/runtime (default: the pinned build from hack/tools)")
	flag.StringVar(&o.terraform, "terraform", "", "Terraform binary for /captf/runtime (default: the pinned build from hack/tools)")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture; must match the runtime binaries")
	flag.StringVar(&o.source, "source", "", "org.opencontainers.image.source label")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision label")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "noop-images: unexpected arguments %v\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "noop-images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.layoutDir == "" && o.registry == "" {
		return errors.New("nothing to do: set --layout-dir, --registry or both")
	}
	roles, err := noopimages.SelectRoles(o.roles)
	if err != nil {
		return fmt.Errorf("--roles: %w", err)
	}
	runtimes := noopimages.List(o.runtimes)
	if len(runtimes) == 0 {
		return errors.New("--runtimes names no runtime")
	}
	images, err := noopimages.Build(ctx, noopimages.Options{
		Modules: o.modules, Tag: o.tag, Roles: roles, Runtimes: runtimes,
		Tofu: o.tofu, Terraform: o.terraform, Arch: o.arch, Source: o.source, Revision: o.revision,
	})
	if err != nil {
		return err
	}
	for _, im := range images {
		if o.layoutDir != "" {
			dir := filepath.Join(o.layoutDir, im.Name)
			d, err := imagebuild.WriteLayout(dir, im.Tag, im.Image)
			if err != nil {
				return err
			}
			fmt.Printf("oci:%s:%s@%s\n", dir, im.Tag, d)
		}
		if o.registry != "" {
			d, err := imagebuild.Push(ctx, o.registry+"/"+im.Name+":"+im.Tag, im.Image, o.insecure)
			if err != nil {
				return err
			}
			fmt.Println(d.String())
		}
	}
	return nil
}
