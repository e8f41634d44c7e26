package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/images"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/registry"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// pushImages is `captf-env push-images`: it builds the runner image (with
// -runner) and the three no-op module images on one runtime, pushes them to
// the environment's registry, and prints one "<name> <reference>" line for
// each: "runner <registry>/captf/runner@sha256:…" and "<role>
// <registry>/captf/noop-<role>:v0.1.0-<runtime>".
func pushImages(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("captf-env push-images", flag.ContinueOnError)
	reg := fs.String("registry", os.Getenv("CAPTF_ENV_REGISTRY"), "host:port of the loopback registry (default $CAPTF_ENV_REGISTRY)")
	runner := fs.String("runner", "", "static runner binary to push as captf/runner:dev (default: no runner image)")
	runtime := fs.String("runtime", tools.OpenTofu.Tag, "the no-op images' runtime: opentofu or terraform (none: no module images)")
	root := fs.String("root", "", "repository root holding modules/noop (default: found from the working directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *reg == "" {
		return errors.New("-registry is required (or CAPTF_ENV_REGISTRY)")
	}
	if *runner != "" {
		img, err := images.Runner(*runner)
		if err != nil {
			return err
		}
		ref, err := registry.PushTo(ctx, *reg, images.RunnerRepo, img)
		if err != nil {
			return err
		}
		fmt.Printf("runner %s\n", ref)
	}
	if *runtime == "none" {
		return nil
	}
	i := slices.IndexFunc(tools.Runtimes(), func(rt tools.Runtime) bool { return rt.Tag == *runtime })
	if i < 0 {
		return fmt.Errorf("-runtime: unknown runtime %q: want opentofu, terraform or none", *runtime)
	}
	rt := tools.Runtimes()[i]
	if *root == "" {
		r, err := tools.RepoRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	for _, role := range contract.Roles() {
		img, err := images.Module(*root, role, rt)
		if err != nil {
			return err
		}
		repo := images.ModuleRepo(role, rt)
		if _, err := registry.PushTo(ctx, *reg, repo, img); err != nil {
			return err
		}
		// By tag: the tag is the module version.
		fmt.Printf("%s %s/%s\n", role, *reg, repo)
	}
	return nil
}
