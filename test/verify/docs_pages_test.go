package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The book's pages name make targets and tests; these must exist, or a
// reader following the page meets a command that fails.
var (
	makeCommand = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
	makeTarget  = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)*):`)
	testName    = regexp.MustCompile(`\b(Test[A-Z][A-Za-z0-9]*)\b`)
	testFunc    = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
)

// pageNamesProblems lists the make targets and Test functions a page names
// that the Makefile or the repository's tests lack.
func pageNamesProblems(page string, targets, tests []string) []string {
	var problems []string
	for _, m := range makeCommand.FindAllStringSubmatch(page, -1) {
		if !slices.Contains(targets, m[1]) {
			problems = append(problems, fmt.Sprintf("names `make %s`; the Makefile has no such target", m[1]))
		}
	}
	for _, m := range testName.FindAllStringSubmatch(page, -1) {
		if !slices.Contains(tests, m[1]) {
			problems = append(problems, fmt.Sprintf("names %s; no test function has that name", m[1]))
		}
	}
	return problems
}

func makefileTargets(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, m := range makeTarget.FindAllStringSubmatch(string(b), -1) {
		targets = append(targets, strings.Fields(m[1])...)
	}
	return targets
}

func testFunctions(t *testing.T, root string) []string {
	t.Helper()
	var tests []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_out" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			tests = append(tests, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tests
}

// TestDocsPagesNameRealTargetsAndTests: every `make <target>` and every
// Test function any page of the book names exists. Every page under
// docs/book is checked.
func TestDocsPagesNameRealTargetsAndTests(t *testing.T) {
	root := docsRoot(t)
	targets, tests := makefileTargets(t, root), testFunctions(t, root)
	for _, page := range docsBookPages(t, root) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, p := range pageNamesProblems(string(b), targets, tests) {
			t.Errorf("%s %s", rel, p)
		}
	}
}

// TestDocsPageNamesCheckCatchesInventedNames: the check above reports a
// target or a test that does not exist.
func TestDocsPageNamesCheckCatchesInventedNames(t *testing.T) {
	page := "Run `make release` and `make relase`, then TestRelease and TestReleas."
	got := pageNamesProblems(page, []string{"release"}, []string{"TestRelease"})
	want := []string{"names `make relase`; the Makefile has no such target", "names TestReleas; no test function has that name"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}
