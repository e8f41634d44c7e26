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
	roles          string
	terraform      string
	modules        string
	layoutDir      string
	registry       string
	insecure       bool
	tag            string
	tofu           string
	runtimeVersion string
	arch           string
	source         string
	revision       string
}

func main() {
	var o options
	flag.StringVar(&o.roles, "roles", "", "roles to build, separated by spaces or commas (default: cluster, machine and machinepool)")
	flag.StringVar(&o.terraform, "terraform", "", "build on this Terraform binary instead of the pinned OpenTofu (io.captf.runtime terraform)")
	flag.StringVar(&o.modules, "modules", "modules/noop", "directory holding the cluster, machine and machinepool modules")
	flag.StringVar(&o.layoutDir, "layout-dir", "", "write each image to the OCI layout <dir>/noop-<role>")
	flag.StringVar(&o.registry, "registry", "", "push each image to <registry>/noop-<role>:<tag> (for example 127.0.0.1:5000/captf)")
	flag.BoolVar(&o.insecure, "insecure", false, "use plain HTTP for a registry that is neither loopback nor private")
	flag.StringVar(&o.tag, "tag", "dev", "image tag (the module version); also the org.opencontainers.image.version label")
	flag.StringVar(&o.tofu, "tofu", "", "OpenTofu binary for /captf/runtime (default: the pinned build from hack/tools)")
	flag.StringVar(&o.runtimeVersion, "runtime-version", "", "io.captf.runtime.version (default: asked from the binary)")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "image architecture; must match the OpenTofu binary")
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
	roles, err := selectRoles(o.roles)
	if err != nil {
		return err
	}
	runtimeName := contract.RuntimeTofu
	switch {
	case o.terraform != "":
		if o.tofu != "" {
			return errors.New("set --tofu or --terraform, not both")
		}
		o.tofu, runtimeName = o.terraform, contract.RuntimeTerraform
	case o.tofu == "":
		p, err := tools.Path("tofu")
		if err != nil {
			return fmt.Errorf("find the pinned OpenTofu: %w", err)
		}
		o.tofu = p
	}
	if o.runtimeVersion == "" {
		v, err := tofuVersion(ctx, o.tofu)
		if err != nil {
			return err
		}
		o.runtimeVersion = v
	}
	for _, role := range roles {
		m := imagebuild.ModuleImage{
			Role:           role,
			ModuleDir:      filepath.Join(o.modules, string(role)),
			Runtime:        o.tofu,
			RuntimeName:    runtimeName,
			RuntimeVersion: o.runtimeVersion,
			EmptyProviders: true,
			Source:         o.source,
			Revision:       o.revision,
			Version:        o.tag,
			Platform:       v1.Platform{OS: "linux", Architecture: o.arch},
		}
		img, err := m.Build()
		if err != nil {
			return fmt.Errorf("build the %s image: %w", role, err)
		}
		name := "noop-" + string(role)
		if o.layoutDir != "" {
			dir := filepath.Join(o.layoutDir, name)
			d, err := imagebuild.WriteLayout(dir, o.tag, img)
			if err != nil {
				return err
			}
			fmt.Printf("oci:%s:%s@%s\n", dir, o.tag, d)
		}
		if o.registry != "" {
			d, err := imagebuild.Push(ctx, o.registry+"/"+name+":"+o.tag, img, o.insecure)
			if err != nil {
				return err
			}
			fmt.Println(d.String())
		}
	}
	return nil
}

// selectRoles parses --roles: names of contract roles separated by spaces
// or commas, each once; empty is every role.
func selectRoles(list string) ([]contract.Role, error) {
	all := contract.Roles()
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var out []contract.Role
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		r := contract.Role(f)
		if !slices.Contains(all, r) {
			return nil, fmt.Errorf("unknown role %q in --roles (the roles are %v)", f, all)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// tofuVersion asks the binary for its version (version -json).
func tofuVersion(ctx context.Context, tofu string) (string, error) {
	cmd := exec.CommandContext(ctx, tofu, "version", "-json")
	cmd.Env = []string{"HOME=" + os.TempDir(), "CHECKPOINT_DISABLE=1"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version -json: %w", tofu, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("%s version -json: no version in its output", tofu)
	}
	return v.Version, nil
}
