package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mainModule = "github.com/captf-io/cluster-api-provider-terraform"

// TestTfcapiLintIsGoInstallable: `go install
// github.com/captf-io/cluster-api-provider-terraform/cmd/tfcapi-lint@<version>`
// works. go install builds the module alone, from its module zip, and
// refuses a go.mod with replace directives; so go.mod has none, no go.work
// is needed, every package the command imports belongs to this module (not
// a nested module, which the zip leaves out), and the command builds from a
// copy holding only go.mod, go.sum and those packages, with GOWORK=off and
// -mod=readonly, then runs.
func TestTfcapiLintIsGoInstallable(t *testing.T) {
	r := docsRoot(t)
	gomod, err := os.ReadFile(filepath.Join(r, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "replace" {
			t.Errorf("go.mod has a replace directive (%q): go install ...@version refuses it", sc.Text())
		}
	}
	list := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Module,EmbedFiles", "./cmd/tfcapi-lint")
	list.Dir = r
	list.Env = append(os.Environ(), "GOWORK=off")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	copyDir := t.TempDir()
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			EmbedFiles      []string
			Module          *struct {
				Path string
				Main bool
			}
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil {
			continue // the standard library
		}
		if strings.HasPrefix(p.Module.Path, mainModule) && !p.Module.Main {
			t.Errorf("%s is in the nested module %s, which the module zip of %s leaves out", p.ImportPath, p.Module.Path, mainModule)
		}
		if !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(r, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		// Files the package embeds travel in the module zip too.
		for _, e := range p.EmbedFiles {
			files = append(files, filepath.Join(p.Dir, filepath.FromSlash(e)))
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sub, err := filepath.Rel(p.Dir, f)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(copyDir, rel, sub)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			docsWriteFile(t, dst, string(b))
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		docsCopyFile(t, filepath.Join(r, f), filepath.Join(copyDir, f))
	}
	bin := filepath.Join(t.TempDir(), "tfcapi-lint")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/tfcapi-lint")
	build.Dir = copyDir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/tfcapi-lint from a copy of the module: %v\n%s", err, out)
	}
	run := exec.Command(bin, "module", filepath.Join(r, "modules", "noop", "machine"), "--role", "machine", "--strict")
	if out, err := run.CombinedOutput(); err != nil {
		t.Errorf("the built tfcapi-lint: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "version", "--json").Output(); err != nil || !strings.Contains(string(out), `"v1alpha1"`) {
		t.Errorf("version --json: %v %s", err, out)
	}
}
