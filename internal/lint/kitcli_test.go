package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/internal/lint/kit"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

func runMain(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// kitRuntimeArgs returns the --runtime flags that run the pinned OpenTofu
// (or the runtime CAPTF_KIT_TEST_RUNTIME names, as in internal/lint/kit).
func kitRuntimeArgs(t *testing.T) []string {
	t.Helper()
	if v := os.Getenv("CAPTF_KIT_TEST_RUNTIME"); v != "" {
		name, bin, _ := strings.Cut(v, "=")
		return []string{"--runtime", name, "--runtime-binary", bin}
	}
	bin, err := tools.OpenTofu.Path()
	if err != nil {
		t.Fatalf("the pinned OpenTofu: %v", err)
	}
	return []string{"--runtime-binary", bin}
}

// TestKitCommandsExitCodes: tfcapi-lint test and init follow the exit code
// convention (book: tfcapi-lint): 0 passed, 1 a scenario failed, 2 the
// module or runtime could not be used or the scaffold's files are already
// there, 3 a bad command line.
func TestKitCommandsExitCodes(t *testing.T) {
	rt := kitRuntimeArgs(t)
	noop := filepath.Join(repoRoot(t), "modules", "noop", "machine")
	broken := t.TempDir()
	if code, _, stderr := runMain("init", broken, "--role", "machine"); code != ExitOK {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	outputs := filepath.Join(broken, "outputs.tf")
	b, _ := os.ReadFile(outputs)
	if err := os.WriteFile(outputs, bytes.Replace(b, []byte(`"192.0.2.10"`), []byte(`""`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	// Stand-in runtimes: one whose test command is not the one the harness
	// needs (as Terraform 1.5's), one that hangs.
	old := filepath.Join(empty, "old-runtime")
	writeFile(t, old, "#!/bin/sh\n[ \"$1\" = init ] && exit 0\necho 'Usage: terraform test [options]'\nexit 1\n")
	hangs := filepath.Join(empty, "hanging-runtime")
	writeFile(t, hangs, "#!/bin/sh\n[ \"$1\" = init ] && exit 0\nexec sleep 60\n")
	for _, f := range []string{old, hangs} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no role", []string{"test", noop}, ExitUsage, "--role is required"},
		{"unknown role", []string{"test", noop, "--role", "pool"}, ExitUsage, "--role"},
		{"bad runtime", []string{"test", noop, "--role", "machine", "--runtime", "pulumi"}, ExitUsage, "--runtime"},
		{"two directories", []string{"test", noop, noop, "--role", "machine"}, ExitUsage, "one module directory"},
		{"cluster outputs for a cluster", []string{"test", noop, "--role", "cluster", "--cluster-outputs", outputs}, ExitUsage, "no captf_cluster_outputs"},
		{"missing variables file", []string{"test", noop, "--role", "machine", "--variables", filepath.Join(empty, "nope.json")}, ExitUsage, "--variables"},
		{"variables that are not an object", append([]string{"test", noop, "--role", "machine", "--variables", outputs}, rt...), ExitUsage, "variables"},
		{"missing runtime binary", []string{"test", noop, "--role", "machine", "--runtime-binary", filepath.Join(empty, "tofu")}, ExitUnparsable, "runtime binary"},
		{"runtime without the test command", []string{"test", noop, "--role", "machine", "--runtime-binary", old}, ExitUnparsable, "printed no run"},
		{"hanging runtime", []string{"test", noop, "--role", "machine", "--runtime-binary", hangs, "--timeout", "2s"}, ExitUnparsable, "did not finish within 2s"},
		{"no module", append([]string{"test", empty, "--role", "machine"}, rt...), ExitUnparsable, "no .tf"},
		{"noop passes", append([]string{"test", noop, "--role", "machine"}, rt...), ExitOK, "2 scenario(s): 2 passed, 0 failed"},
		{"broken fails", append([]string{"test", broken, "--role", "machine"}, rt...), ExitFindings, `FAIL machine with bootstrap data`},
		{"init over a module", []string{"init", noop, "--role", "machine"}, ExitUnparsable, "overwrites nothing"},
		{"init without role", []string{"init", empty}, ExitUsage, "--role is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runMain(c.args...)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("took %s: --timeout (default 5m) or the runtime did not bound it", took)
			}
			if code != c.code || !strings.Contains(stdout+stderr, c.out) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", code, c.code, c.out, stdout, stderr)
			}
			for _, secret := range []string{string(kit.SampleBootstrapData), "I2Nsb3VkLWNvbmZpZw"} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("the output holds the bootstrap data")
				}
			}
		})
	}
}

// TestTestWriteKeepsTheHarnessInTheModule: --write writes the harness into
// the module and runs nothing; the module's directory is otherwise left
// alone by a test run.
func TestTestWriteKeepsTheHarnessInTheModule(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"main.tf", "outputs.tf", "variables.tf", "versions.tf"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "modules", "noop", "cluster", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), string(b))
	}
	code, stdout, stderr := runMain("test", dir, "--role", "cluster", "--write", "--runtime-binary", filepath.Join(dir, "never-run"))
	if code != ExitOK || !strings.Contains(stdout, kit.HarnessFile) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, kit.HarnessFile))
	if err != nil || !bytes.Contains(b, []byte(`run "cluster_external_endpoint"`)) {
		t.Errorf("the harness was not written: %v\n%s", err, b)
	}
}

// TestOneArgumentCommands: module, image, test and init take exactly one
// argument, and a wrong count is a usage error naming the command and what
// it takes.
func TestOneArgumentCommands(t *testing.T) {
	for _, c := range []struct{ command, what string }{
		{"module", "module directory"}, {"image", "image reference"}, {"test", "module directory"}, {"init", "module directory"},
	} {
		for _, args := range [][]string{{}, {"a", "b"}} {
			code, _, stderr := runMain(append(append([]string{c.command}, args...), "--role", "machine")...)
			want := c.command + " takes one " + c.what
			if code != ExitUsage || !strings.Contains(stderr, want) {
				t.Errorf("%s with %d arguments: exit %d, %q; want exit 3 and %q", c.command, len(args), code, stderr, want)
			}
		}
	}
}

// TestTestOnPinnedTerraform: HashiCorp Terraform 1.5.7, the pinned
// Terraform of CAPTF's images, has no test command with mock providers;
// the contract test says so and exits 2 (book page: tfcapi-lint CLI,
// "Runtimes").
func TestTestOnPinnedTerraform(t *testing.T) {
	tf, err := tools.Terraform.Path()
	if err != nil {
		t.Fatalf("the pinned Terraform: %v", err)
	}
	code, stdout, stderr := runMain("test", filepath.Join(repoRoot(t), "modules", "noop", "machine"), "--role", "machine", "--runtime", "terraform", "--runtime-binary", tf)
	if code != ExitUnparsable || !strings.Contains(stderr, "needs OpenTofu 1.8 or later, or Terraform 1.7 or later") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
