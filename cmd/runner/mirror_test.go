package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The third-party provider the mirror tests install: the OpenStack
// provider, built from its Go module by hack/tools (openstack).
const (
	osNamespace = "terraform-provider-openstack"
	osType      = "openstack"
	osVersion   = "3.4.0"
)

// registryHost is the host a runtime gives a provider source without one:
// what providers mirror writes the mirror under for that runtime.
func registryHost(rt tools.Runtime) string {
	if rt == tools.OpenTofu {
		return "registry.opentofu.org"
	}
	return "registry.terraform.io"
}

// requireOpenStack is a module file that requires the provider; no
// resource uses it, so no run configures it (it has no cloud to reach
// here), but validate loads its schema over the plugin protocol.
const requireOpenStack = `terraform {
  required_providers {
    openstack = {
      source  = "terraform-provider-openstack/openstack"
      version = "` + osVersion + `"
    }
  }
}
`

// mirrorFixture is a cluster fixture whose module requires the OpenStack
// provider and whose /captf/providers mirror holds it, in the unpacked
// layout providers mirror writes (HOST/NAMESPACE/TYPE/VERSION/TARGET/), for
// the platforms given.
func mirrorFixture(t *testing.T, rt tools.Runtime, platforms ...string) *fixture {
	t.Helper()
	bin, err := tools.Path("terraform-provider-openstack")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, contract.RoleCluster, rt)
	if err := os.WriteFile(filepath.Join(f.dir, "module", "providers.tf"), []byte(requireOpenStack), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		dir := filepath.Join(f.dir, "providers", registryHost(rt), osNamespace, osType, osVersion, p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// The image's package: the provider's executable, linked rather
		// than copied (it is about 26 MB).
		if err := os.Symlink(bin, filepath.Join(dir, "terraform-provider-openstack_v"+osVersion)); err != nil {
			t.Fatal(err)
		}
	}
	f.render(`{"generation":"1"}`)
	return f
}

// offlineEnv is the Job's environment with every proxy variable pointing
// at a closed port: any attempt to reach a registry fails at once, while
// the loopback API server (never proxied) stays reachable.
func (f *fixture) offlineEnv() []string {
	env := f.baseEnv()
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		env = append(env, k+"=http://127.0.0.1:9")
	}
	return append(env, "NO_PROXY=", "no_proxy=")
}

func platform() string { return goruntime.GOOS + "_" + goruntime.GOARCH }

// TestProviderFromTheMirror: with the image's mirror, the runner's CLI
// configuration makes init install a real third-party provider from
// /captf/providers with no network, validate talks to it over the plugin
// protocol, the lock file the module ships is honoured and its hashes are
// checked, and a mirror without the platform's package fails init with a
// summary naming the provider and the platform (Runtime Environment,
// "Provider mirror and CLI configuration"; Image Contract, "Provider mirror
// layout").
func TestProviderFromTheMirror(t *testing.T) { onRuntimes(t, testProviderFromTheMirror) }

func testProviderFromTheMirror(t *testing.T, rt tools.Runtime) {
	f := mirrorFixture(t, rt, platform())
	host := registryHost(rt)
	addr := host + "/" + osNamespace + "/" + osType

	var lock []byte
	t.Run("init installs the provider from the mirror, offline; validate loads it", func(t *testing.T) {
		out := f.runEnv(f.offlineEnv(), "apply")
		f.mustSucceed(out, "init,validate,apply")
		installed := filepath.Join(f.dir, "work", ".terraform", "providers", host, osNamespace, osType, osVersion, platform())
		if _, err := os.Stat(installed); err != nil {
			t.Errorf("the provider is not installed under TF_DATA_DIR: %v", err)
		}
		if !strings.Contains(out.log(), "Installing "+osNamespace+"/"+osType+" v"+osVersion) {
			t.Errorf("init did not report installing %s v%s:\n%s", addr, osVersion, out.log())
		}
		var err error
		if lock, err = os.ReadFile(filepath.Join(runner.RootDir(filepath.Join(f.dir, "work")), runner.LockFile)); err != nil {
			t.Fatalf("init wrote no lock file: %v", err)
		}
		if !strings.Contains(string(lock), `provider "`+addr+`"`) || !regexp.MustCompile(`"h1:[A-Za-z0-9+/=]+"`).Match(lock) {
			t.Errorf("the lock file records no hash for %s:\n%s", addr, lock)
		}
	})
	if lock == nil {
		t.FailNow()
	}
	lockPath := filepath.Join(f.dir, "module", runner.LockFile)

	t.Run("a module's lock file whose hashes match installs as before", func(t *testing.T) {
		if err := os.WriteFile(lockPath, lock, 0o644); err != nil {
			t.Fatal(err)
		}
		// init is what reads the lock file: a refresh (init, then
		// apply -refresh-only) is the cheapest run that succeeds.
		out := f.runEnv(f.offlineEnv(), "refresh")
		f.mustSucceed(out, "init,refresh")
		if !strings.Contains(out.log(), "Reusing previous version of "+osNamespace+"/"+osType+" from the dependency lock file") {
			t.Errorf("init did not use the module's lock file:\n%s", out.log())
		}
	})

	t.Run("a module's lock file whose hashes do not match fails init, naming the provider", func(t *testing.T) {
		wrong := regexp.MustCompile(`"h1:[A-Za-z0-9+/=]+"`).ReplaceAll(lock, []byte(`"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="`))
		if err := os.WriteFile(lockPath, wrong, 0o644); err != nil {
			t.Fatal(err)
		}
		out := f.runEnv(f.offlineEnv(), "apply")
		e := out.doc.Error
		if out.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorStep || *e.Step != runner.StepInit {
			t.Fatalf("exit %d result %s\n%s", out.code, out.raw, out.log())
		}
		if !strings.Contains(e.Tail, addr+" v"+osVersion) || !strings.Contains(e.Tail, "checksums in the dependency lock file") {
			t.Errorf("summary %q does not name the provider and the checksum mismatch", e.Tail)
		}
		t.Logf("summary: %s", e.Tail)
	})
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}

	t.Run("a mirror without the platform's package fails init, naming the provider and the platform", func(t *testing.T) {
		other := "linux_arm64"
		if platform() == other {
			other = "linux_amd64"
		}
		g := mirrorFixture(t, rt, other)
		out := g.runEnv(g.offlineEnv(), "apply")
		e := out.doc.Error
		if out.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorStep || *e.Step != runner.StepInit {
			t.Fatalf("exit %d result %s\n%s", out.code, out.raw, out.log())
		}
		if !strings.Contains(e.Tail, addr+" v"+osVersion) || !strings.Contains(e.Tail, "for "+platform()) {
			t.Errorf("summary %q does not name the provider and the platform %s", e.Tail, platform())
		}
		t.Logf("summary: %s", e.Tail)
	})

	t.Run("a mirror without the provider fails init, naming the provider", func(t *testing.T) {
		g := mirrorFixture(t, rt)
		out := g.runEnv(g.offlineEnv(), "apply")
		e := out.doc.Error
		if out.code != runner.ExitFailure || e == nil || *e.Step != runner.StepInit {
			t.Fatalf("exit %d result %s\n%s", out.code, out.raw, out.log())
		}
		if !strings.Contains(e.Tail, addr+": the provider is not in the mirror") {
			t.Errorf("summary %q does not name the provider", e.Tail)
		}
		t.Logf("summary: %s", e.Tail)
	})
}
