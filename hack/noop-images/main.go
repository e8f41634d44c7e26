package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
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

// list splits a comma- or space-separated flag value.
func list(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// selectRoles parses the --roles value (make noop-images NOOP=...): the
// roles named, each once, in the order first named; empty is all three.
func selectRoles(s string) ([]contract.Role, error) {
	names := list(s)
	if len(names) == 0 {
		return contract.Roles(), nil
	}
	var roles []contract.Role
	for _, n := range names {
		r, err := contract.ParseRole(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	return roles, nil
}

func run(ctx context.Context, o options) error {
	if o.layoutDir == "" && o.registry == "" {
		return errors.New("nothing to do: set --layout-dir, --registry or both")
	}
	roles, err := selectRoles(o.roles)
	if err != nil {
		return fmt.Errorf("--roles: %w", err)
	}
	type build struct {
		rt  tools.Runtime
		bin string
	}
	var builds []build
	for _, s := range list(o.runtimes) {
		i := slices.IndexFunc(tools.Runtimes(), func(rt tools.Runtime) bool { return rt.Tag == s })
		if i < 0 {
			return fmt.Errorf("--runtimes: unknown runtime %q: want opentofu or terraform", s)
		}
		rt := tools.Runtimes()[i]
		bin := o.tofu
		if rt == tools.Terraform {
			bin = o.terraform
		}
		if bin == "" {
			p, err := rt.Path()
			if err != nil {
				return fmt.Errorf("find the pinned %s: %w", rt.Tag, err)
			}
			bin = p
		}
		v, err := runtimeVersion(ctx, bin)
		if err != nil {
			return err
		}
		rt.Version = v
		builds = append(builds, build{rt: rt, bin: bin})
	}
	if len(builds) == 0 {
		return errors.New("--runtimes names no runtime")
	}
	for _, role := range roles {
		for _, b := range builds {
			tag := o.tag + "-" + b.rt.Tag
			m := imagebuild.ModuleImage{
				Role:           role,
				ModuleDir:      filepath.Join(o.modules, string(role)),
				Runtime:        b.bin,
				RuntimeName:    b.rt.Name,
				RuntimeVersion: b.rt.Version,
				EmptyProviders: true,
				Source:         o.source,
				Revision:       o.revision,
				Version:        tag,
				Platform:       v1.Platform{OS: "linux", Architecture: o.arch},
			}
			img, err := m.Build()
			if err != nil {
				return fmt.Errorf("build the %s image on %s: %w", role, b.rt.Tag, err)
			}
			name := "noop-" + string(role)
			if o.layoutDir != "" {
				dir := filepath.Join(o.layoutDir, name)
				d, err := imagebuild.WriteLayout(dir, tag, img)
				if err != nil {
					return err
				}
				fmt.Printf("oci:%s:%s@%s\n", dir, tag, d)
			}
			if o.registry != "" {
				d, err := imagebuild.Push(ctx, o.registry+"/"+name+":"+tag, img, o.insecure)
				if err != nil {
					return err
				}
				fmt.Println(d.String())
			}
		}
	}
	return nil
}

// runtimeVersion asks the binary for its version (version -json).
func runtimeVersion(ctx context.Context, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "version", "-json")
	cmd.Env = []string{"HOME=" + os.TempDir(), "CHECKPOINT_DISABLE=1"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version -json: %w", bin, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("%s version -json: no version in its output", bin)
	}
	return v.Version, nil
}
