package site

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// vale runs Vale with the book's configuration (docs/vale/vale.ini), as make
// lint-docs-prose does, on files, and returns its findings, one a line.
func vale(t *testing.T, files ...string) []string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := tools.Path("vale")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config", filepath.Join(root, "docs", "vale", "vale.ini"), "--output", "line", "--no-exit"}, files...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vale: %v\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestProseLintCatchesMistakes: the book's Vale configuration reports a
// misspelling, a name written wrong, an unfinished sentence and a repeated
// word, and lets through code, code names and CAPTF's vocabulary. (make
// lint-docs-prose runs it over the book; the book itself is not linted here,
// so that a new word does not fail make test.)
func TestProseLintCatchesMistakes(t *testing.T) {
	bad := vale(t, filepath.Join("testdata", "prose", "bad.md"))
	for _, want := range []string{
		"CAPTF.Spelling:Unknown word 'Teh'",
		"CAPTF.Names:Write 'OpenTofu', not 'Open Tofu'",
		"CAPTF.Internal:'TODO'",
		"Vale.Repetition:'the' is repeated",
	} {
		found := false
		for _, l := range bad {
			found = found || strings.Contains(l, want)
		}
		if !found {
			t.Errorf("Vale does not report %q on testdata/prose/bad.md; it reports:\n%s", want, strings.Join(bad, "\n"))
		}
	}
	if good := vale(t, filepath.Join("testdata", "prose", "good.md")); len(good) > 0 {
		t.Errorf("Vale reports testdata/prose/good.md:\n%s", strings.Join(good, "\n"))
	}
}
