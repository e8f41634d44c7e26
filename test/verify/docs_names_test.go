package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The book's pages name things in code spans: conditions, reasons, events,
// kinds, Go identifiers, tests, Kubernetes enum values. A PascalCase code
// span must be one of these, so a page cannot name a reason, a condition or
// a test that does not exist.

// docsBookPages returns every Markdown page under docs/book: pages added to
// the book are checked without being listed anywhere.
func docsBookPages(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(filepath.Join(root, "docs", "book"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages under docs/book")
	}
	return pages
}

// docsNamePackages are the packages outside the repository whose names a
// page may use in a code span: Kubernetes' core, batch and meta types
// (pull policies, taint effects, pod and Job conditions, status reasons),
// Cluster API's core and kubeadm types (conditions, reasons), its feature
// gates and clusterctl's inventory kinds, and the feature gates and
// logging options component-base gives the manager's flags.
var docsNamePackages = []string{
	"k8s.io/api/core/v1",
	"k8s.io/api/batch/v1",
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"sigs.k8s.io/cluster-api/api/core/v1beta2",
	"sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2",
	"sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2",
	"sigs.k8s.io/cluster-api/feature",
	"sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3",
	"k8s.io/component-base/featuregate",
	"k8s.io/component-base/logs/api/v1",
}

// docsRunName matches a subtest's literal name, t.Run("Name", ...).
var docsRunName = regexp.MustCompile(`\.Run\("([A-Za-z0-9]+)"`)

// docsManifestKind matches the kind of an object in a YAML manifest.
var docsManifestKind = regexp.MustCompile(`(?m)^kind: ([A-Z][A-Za-z0-9]*)\s*$`)

// docsCodeVocabulary returns every name a page may write as a PascalCase
// code span besides CAPTF's condition, reason and event values: the names
// the repository's Go code declares (types, functions, methods, constants,
// variables, struct fields, test functions and literal subtest names), the
// value of every string constant it declares, the kinds of the manifests
// under config/ and templates/, and the type and constant names and string
// constant values of docsNamePackages.
func docsCodeVocabulary(root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "_out" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".go"):
			return docsGoNames(p, out, true)
		case strings.HasSuffix(p, ".yaml") && (strings.HasPrefix(p, filepath.Join(root, "config")) || strings.HasPrefix(p, filepath.Join(root, "templates"))):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range docsManifestKind.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.Dir}}"}, docsNamePackages...)...)
	cmd.Dir = root
	dirs, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", strings.Join(docsNamePackages, " "), err)
	}
	for _, dir := range strings.Fields(string(dirs)) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			if err := docsGoNames(f, out, false); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// docsGoNames adds the names a Go file declares to out: with all, every
// declared identifier and field and the literal subtest names; without,
// only type and constant names. String constant values are added in both
// cases.
func docsGoNames(path string, out map[string]bool, all bool) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if all {
				out[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out[s.Name.Name] = true
				case *ast.ValueSpec:
					if d.Tok == token.CONST || all {
						for _, id := range s.Names {
							out[id.Name] = true
						}
					}
					if d.Tok != token.CONST {
						continue
					}
					for _, v := range s.Values {
						if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								out[s] = true
							}
						}
					}
				}
			}
		}
	}
	if !all {
		return nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if fl, ok := n.(*ast.Field); ok {
			for _, id := range fl.Names {
				out[id.Name] = true
			}
		}
		return true
	})
	for _, m := range docsRunName.FindAllSubmatch(src, -1) {
		out[string(m[1])] = true
	}
	return nil
}

// docsTagKeys returns the keys of the captf_tags input (internal/inputs'
// Tag* constants), which pages name like annotation keys.
func docsTagKeys() (map[string]bool, error) {
	root, err := tools.RepoRoot()
	if err != nil {
		return nil, err
	}
	consts, err := docsAPIConsts(filepath.Join(root, "internal", "inputs"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range consts {
		if strings.HasPrefix(c.Name, "Tag") {
			out[c.Value] = true
		}
	}
	return out, nil
}
