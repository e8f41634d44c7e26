package kit_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint/kit"
)

// TestScaffoldLintsCleanAndPassesItsContractTest: for each role, the
// scaffold lints clean under --strict (tfcapi-lint module checks,
// in-process) and passes its own contract test, and the harness it ships
// is the one tfcapi-lint test --write generates for it.
func TestScaffoldLintsCleanAndPassesItsContractTest(t *testing.T) {
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "module")
			files, err := kit.Init(dir, role)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"versions.tf", "variables.tf", "main.tf", "outputs.tf", "Containerfile.opentofu", "Containerfile.terraform", "README.md", filepath.ToSlash(kit.HarnessFile)} {
				if !slices.Contains(files, want) {
					t.Errorf("the scaffold has no %s (it has %v)", want, files)
				}
			}
			r, err := lint.LintModule(dir, lint.ModuleOptions{Role: role, Contract: contract.Version})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Findings) != 0 || r.ExitCode(true) != lint.ExitOK {
				var b bytes.Buffer
				_ = lint.WriteText(&b, r)
				t.Errorf("the scaffold does not lint clean under --strict:\n%s", b.String())
			}
			kept, err := os.ReadFile(filepath.Join(dir, kit.HarnessFile))
			if err != nil {
				t.Fatal(err)
			}
			o := testOptions(t, role)
			if _, err := kit.WriteHarness(dir, o); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(filepath.Join(dir, kit.HarnessFile)); !bytes.Equal(kept, again) {
				t.Errorf("the scaffold's harness differs from the one --write generates")
			}
			res, err := kit.Test(context.Background(), dir, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Failures() {
				t.Errorf("%s", f)
			}
		})
	}
}

// TestInitRefusesToOverwrite: a directory holding any file of the scaffold
// is refused with the files named, and nothing is written.
func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "outputs.tf"), []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := kit.Init(dir, contract.RoleMachine)
	var ee *kit.ExistsError
	if !errors.As(err, &ee) || !slices.Equal(ee.Files, []string{"outputs.tf"}) {
		t.Fatalf("Init over outputs.tf: %v, want an ExistsError naming outputs.tf", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("Init wrote files although it refused: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "outputs.tf")); string(b) != "# mine\n" {
		t.Errorf("outputs.tf was overwritten")
	}
	if _, err := kit.Init(dir, contract.Role("pool")); err == nil {
		t.Error("Init accepted an unknown role")
	}
}

// instructions returns a Containerfile's instructions without comments and
// blank lines, continuation lines joined, and ARG ROLE's default dropped.
func instructions(t *testing.T, b []byte) (ins []string, roleDefault string) {
	t.Helper()
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(strings.TrimSpace(l) + " ")
			continue
		}
		cur.WriteString(line)
		s := cur.String()
		cur.Reset()
		if r, ok := strings.CutPrefix(s, "ARG ROLE="); ok {
			roleDefault = r
			s = "ARG ROLE="
		}
		ins = append(ins, s)
	}
	return ins, roleDefault
}

// TestScaffoldContainerfilesFollowTheReference: the scaffold's
// Containerfiles have the instructions of modules/Containerfile.* (which
// internal/imagebuild's tests hold to the Image Contract), with the role
// as ARG ROLE's default.
func TestScaffoldContainerfilesFollowTheReference(t *testing.T) {
	for _, role := range contract.Roles() {
		files, err := kit.Scaffold(role)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"Containerfile.opentofu", "Containerfile.terraform"} {
			ref, err := os.ReadFile(filepath.Join(repoRoot(t), "modules", name))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := instructions(t, ref)
			i := slices.IndexFunc(files, func(f kit.ScaffoldFile) bool { return f.Path == name })
			if i < 0 {
				t.Fatalf("%s: the scaffold has no %s", role, name)
			}
			got, def := instructions(t, files[i].Content)
			if !slices.Equal(got, want) {
				t.Errorf("%s %s differs from modules/%s:\n got %q\nwant %q", role, name, name, got, want)
			}
			if def != string(role) {
				t.Errorf("%s %s: ARG ROLE defaults to %q", role, name, def)
			}
		}
	}
}

// TestScaffoldImageLintsClean: the scaffold, packaged as its Containerfile
// packages it (internal/imagebuild, the image builder the reference
// Containerfiles are checked against; a stand-in runtime binary keeps it
// quick), lints clean with tfcapi-lint image --strict.
func TestScaffoldImageLintsClean(t *testing.T) {
	stub := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(stub, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, role := range contract.Roles() {
		t.Run(string(role), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "module")
			if _, err := kit.Init(dir, role); err != nil {
				t.Fatal(err)
			}
			img, err := imagebuild.ModuleImage{
				Role: role, ModuleDir: dir, Runtime: stub, RuntimeName: contract.RuntimeTofu, RuntimeVersion: "1.12.6",
				EmptyProviders: true, Version: "v0.0.1", Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
			}.Build()
			if err != nil {
				t.Fatal(err)
			}
			layout := t.TempDir()
			if _, err := imagebuild.WriteLayout(layout, "scaffold", img); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := lint.Main([]string{"image", "oci:" + layout, "--role", string(role), "--strict"}, &stdout, &stderr)
			if code != lint.ExitOK || !strings.Contains(stdout.String(), "0 error(s), 0 warning(s)") {
				t.Errorf("exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
		})
	}
}
