// Package noopimages builds CAPTF's no-op module images (modules/noop) on
// each pinned runtime. The noop-images command writes or pushes them; the
// release command puts them in the release folder.
package noopimages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// Options say which images to build.
type Options struct {
	// Modules holds the cluster, machine and machinepool modules.
	Modules string
	// Tag is the module version: image tags are <Tag>-<runtime tag>.
	Tag string
	// Roles to build, in order (default all three).
	Roles []contract.Role
	// Runtimes are the runtime tags to build each role on (opentofu,
	// terraform; default both).
	Runtimes []string
	// Tofu and Terraform override the pinned runtime binaries.
	Tofu, Terraform string
	// Arch is the image architecture; it must match the runtime binaries.
	Arch string
	// Source and Revision set the image's OCI labels when not empty.
	Source, Revision string
}

// Image is one built image.
type Image struct {
	// Name is the repository name, noop-<role>.
	Name string
	// Tag is <Options.Tag>-<runtime tag>.
	Tag     string
	Role    contract.Role
	Runtime tools.Runtime
	Image   v1.Image
}

// Build builds every role on every runtime, roles first.
func Build(ctx context.Context, o Options) ([]Image, error) {
	if len(o.Roles) == 0 {
		o.Roles = contract.Roles()
	}
	if len(o.Runtimes) == 0 {
		for _, rt := range tools.Runtimes() {
			o.Runtimes = append(o.Runtimes, rt.Tag)
		}
	}
	type build struct {
		rt  tools.Runtime
		bin string
	}
	var builds []build
	for _, s := range o.Runtimes {
		i := slices.IndexFunc(tools.Runtimes(), func(rt tools.Runtime) bool { return rt.Tag == s })
		if i < 0 {
			return nil, fmt.Errorf("unknown runtime %q: want opentofu or terraform", s)
		}
		rt := tools.Runtimes()[i]
		bin := o.Tofu
		if rt == tools.Terraform {
			bin = o.Terraform
		}
		if bin == "" {
			p, err := rt.Path()
			if err != nil {
				return nil, fmt.Errorf("find the pinned %s: %w", rt.Tag, err)
			}
			bin = p
		}
		v, err := RuntimeVersion(ctx, bin)
		if err != nil {
			return nil, err
		}
		rt.Version = v
		builds = append(builds, build{rt: rt, bin: bin})
	}
	if len(builds) == 0 {
		return nil, errors.New("no runtime named")
	}
	var out []Image
	for _, role := range o.Roles {
		for _, b := range builds {
			tag := o.Tag + "-" + b.rt.Tag
			m := imagebuild.ModuleImage{
				Role:           role,
				ModuleDir:      filepath.Join(o.Modules, string(role)),
				Runtime:        b.bin,
				RuntimeName:    b.rt.Name,
				RuntimeVersion: b.rt.Version,
				EmptyProviders: true,
				Source:         o.Source,
				Revision:       o.Revision,
				Version:        tag,
				Platform:       v1.Platform{OS: "linux", Architecture: o.Arch},
			}
			img, err := m.Build()
			if err != nil {
				return nil, fmt.Errorf("build the %s image on %s: %w", role, b.rt.Tag, err)
			}
			out = append(out, Image{Name: "noop-" + string(role), Tag: tag, Role: role, Runtime: b.rt, Image: img})
		}
	}
	return out, nil
}

// SelectRoles parses a comma- or space-separated list of roles: the roles
// named, each once, in the order first named; empty is all three.
func SelectRoles(s string) ([]contract.Role, error) {
	names := List(s)
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

// List splits a comma- or space-separated flag value.
func List(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// RuntimeVersion asks a runtime binary for its version (version -json).
func RuntimeVersion(ctx context.Context, bin string) (string, error) {
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
