package kit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint/kit"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// runtimeEnv, when set to <tofu|terraform>=<binary>, runs these tests with
// another runtime binary than the pinned OpenTofu, for example a Terraform
// 1.7 or later to check the harness on it.
const runtimeEnv = "CAPTF_KIT_TEST_RUNTIME"

var (
	runtimeOnce sync.Once
	runtimeName string
	runtimeBin  string
	runtimeErr  error
)

// testRuntime returns the runtime the contract tests run with: the pinned
// OpenTofu from test/tools unless runtimeEnv names another.
func testRuntime(t *testing.T) (name, bin string) {
	t.Helper()
	runtimeOnce.Do(func() {
		if v := os.Getenv(runtimeEnv); v != "" {
			runtimeName, runtimeBin, _ = strings.Cut(v, "=")
			return
		}
		runtimeName = contract.RuntimeTofu
		runtimeBin, runtimeErr = tools.OpenTofu.Path()
	})
	if runtimeErr != nil {
		t.Fatalf("the pinned OpenTofu: %v", runtimeErr)
	}
	return runtimeName, runtimeBin
}

func testOptions(t *testing.T, role contract.Role) kit.TestOptions {
	name, bin := testRuntime(t)
	return kit.TestOptions{Role: role, Runtime: name, Binary: bin}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestContractTestPassesOnTheNoopModules: the no-op modules, which the
// Quick Start runs, pass every scenario of their role (Module Contract).
func TestContractTestPassesOnTheNoopModules(t *testing.T) {
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			dir := filepath.Join(repoRoot(t), "modules", "noop", string(role))
			before := snapshot(t, dir)
			r, err := kit.Test(context.Background(), dir, testOptions(t, role))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Scenarios) != 2 {
				t.Errorf("ran %d scenarios, want 2", len(r.Scenarios))
			}
			for _, f := range r.Failures() {
				t.Errorf("%s", f)
			}
			if after := snapshot(t, dir); !slices.Equal(before, after) {
				t.Errorf("the test changed the module directory: %v became %v", before, after)
			}
		})
	}
}

// snapshot lists a directory tree's paths and sizes.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, p+" "+strings.Repeat("d", btoi(d.IsDir()))+" "+string(rune('0'+info.Size()%10)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// kitCase is one case of testdata: a scaffold with files replaced.
type kitCase struct {
	name  string
	role  contract.Role
	want  []string
	err   string
	files map[string]string
}

func readCases(t *testing.T) []kitCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no contract test cases: %v", err)
	}
	var cases []kitCase
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := kitCase{name: strings.TrimSuffix(filepath.Base(p), ".txt"), files: map[string]string{}}
		a := txtar.Parse(b)
		for _, f := range a.Files {
			c.files[f.Name] = string(f.Data)
		}
		for _, line := range strings.Split(string(a.Comment), "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			switch k {
			case "role":
				c.role = contract.Role(v)
			case "want":
				c.want = append(c.want, v)
			case "error":
				c.err = v
			case "":
			default:
				t.Fatalf("%s: unknown key %q", p, k)
			}
		}
		if _, err := contract.ParseRole(string(c.role)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if (len(c.want) == 0) == (c.err == "") {
			t.Fatalf("%s: want either want: lines or one error: line", p)
		}
		cases = append(cases, c)
	}
	return cases
}

// writeCase writes the role's scaffold with the case's files over it.
func writeCase(t *testing.T, c kitCase) string {
	t.Helper()
	dir := t.TempDir()
	files, err := kit.Scaffold(c.role)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		content := f.Content
		if s, ok := c.files[f.Path]; ok {
			content = []byte(s)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range c.files {
		if !slices.ContainsFunc(files, func(f kit.ScaffoldFile) bool { return f.Path == name }) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(c.files[name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestContractTestFailsOnBrokenModules: each module of testdata breaks the
// contract in one way (a missing output, a wrong type, a provider ID over
// 512 characters, a null provider ID, a bad health state, an ignored
// failure domain, a cluster that never creates its endpoint, fractional
// exports or replicas, a provider ID list that is a string, an apply that
// fails, a provider that is not installed); the contract test names the
// scenario and the output, and passes the scenarios the case does not
// break.
func TestContractTestFailsOnBrokenModules(t *testing.T) {
	for _, c := range readCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := writeCase(t, c)
			r, err := kit.Test(context.Background(), dir, testOptions(t, c.role))
			if c.err != "" {
				var re *kit.RuntimeError
				if !errors.As(err, &re) {
					t.Fatalf("got %v, %v; want a runtime error containing %q", r, err, c.err)
				}
				if !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %q does not contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Failures() {
				got = append(got, f.String())
			}
			failing := map[string]bool{}
			for _, w := range c.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
					t.Errorf("no failure contains %q; got:\n%s", w, strings.Join(got, "\n"))
				}
				s, _, _ := strings.Cut(strings.TrimPrefix(w, `scenario "`), `"`)
				failing[s] = true
			}
			for _, s := range r.Scenarios {
				if !failing[s.Scenario] && len(s.Failures) > 0 {
					t.Errorf("scenario %q should pass, got %v", s.Scenario, s.Failures)
				}
			}
			for _, g := range got {
				if strings.Contains(g, string(kit.SampleBootstrapData)) || strings.Contains(g, "I2Nsb3VkLWNvbmZpZw") {
					t.Errorf("a failure prints the bootstrap data: %s", g)
				}
			}
		})
	}
}
