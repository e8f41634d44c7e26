package imagebuild

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
)

// openStackMirror lays out a provider mirror holding the OpenStack
// provider, in the unpacked layout providers mirror writes
// (HOST/NAMESPACE/TYPE/VERSION/TARGET/terraform-provider-TYPE_vVERSION),
// under host for the platform target. The package is a small stand-in
// executable: what the image build and image lint look at is the mirror's
// layout, not the provider's code (the runner's tests run the real provider
// from a mirror).
func openStackMirror(t *testing.T, host, target string) string {
	t.Helper()
	mirror := t.TempDir()
	dir := filepath.Join(mirror, host, "terraform-provider-openstack", "openstack", "3.4.0", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "terraform-provider-openstack_v3.4.0")
	if err := os.WriteFile(dst, []byte("#!/bin/false\nstand-in for terraform-provider-openstack 3.4.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return mirror
}

// TestProviderMirrorImage: a module image whose module requires a
// third-party provider, built with that provider in its /captf/providers
// mirror, lints clean for the runtime it ships (the mirror is under that
// runtime's registry host); without the platform's package, image lint
// fails naming the provider and the platform (Image Contract, "Provider
// mirror layout"; tfcapi-lint image/providers-complete).
func TestProviderMirrorImage(t *testing.T) {
	stub := filepath.Join(t.TempDir(), "runtime")
	if err := os.WriteFile(stub, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	module := t.TempDir()
	if err := os.CopyFS(module, os.DirFS(repoModule(t, contract.RoleCluster))); err != nil {
		t.Fatal(err)
	}
	requires := "terraform {\n  required_providers {\n    openstack = {\n      source  = \"terraform-provider-openstack/openstack\"\n      version = \"3.4.0\"\n    }\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(module, "providers.tf"), []byte(requires), 0o644); err != nil {
		t.Fatal(err)
	}
	lintOf := func(t *testing.T, runtimeName, mirror string) lint.Report {
		t.Helper()
		img, err := ModuleImage{
			Role: contract.RoleCluster, ModuleDir: module, Runtime: stub, RuntimeName: runtimeName,
			RuntimeVersion: "1", ProvidersDir: mirror, Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		}.Build()
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "image")
		if _, err := WriteLayout(dir, "test", img); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		lint.Main([]string{"image", "oci:" + dir + ":test", "--role", "cluster", "--strict", "--json"}, &out, &out)
		var r lint.Report
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("tfcapi-lint --json: %v\n%s", err, out.String())
		}
		return r
	}
	for _, tc := range []struct{ runtime, host string }{
		{contract.RuntimeTofu, "registry.opentofu.org"},
		{contract.RuntimeTerraform, "registry.terraform.io"},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			r := lintOf(t, tc.runtime, openStackMirror(t, tc.host, "linux_amd64"))
			if r.Summary.Error+r.Summary.Warning != 0 {
				t.Errorf("the image with the provider in its mirror: %+v", r.Findings)
			}
			r = lintOf(t, tc.runtime, openStackMirror(t, tc.host, "linux_arm64"))
			found := false
			for _, f := range r.Findings {
				if f.ID == lint.CheckImageProvidersComplete && strings.Contains(f.Message, "terraform-provider-openstack/openstack") && strings.Contains(f.Message, "linux_amd64") {
					found = true
				}
			}
			if !found {
				t.Errorf("an arm64-only mirror linted for linux/amd64: no %s finding naming the provider and the platform: %+v", lint.CheckImageProvidersComplete, r.Findings)
			}
		})
	}
}
