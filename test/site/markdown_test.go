package site

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The groups of the table of contents, in reading order: the "## "
// headings of docs/book/README.md that list pages.
var tocGroups = []string{
	"Getting started",
	"Concepts",
	"Operator guide",
	"Module author's guide",
	"Control-plane integration",
	"Reference",
	"Runbooks",
	"Development",
}

// tocEntry matches an entry of the table of contents as the site's
// navigation (docs/site/layouts/partials/toc.html) reads it: a list item
// that starts with a link to a .md page.
var tocEntry = regexp.MustCompile(`^[-*] \[(.+?)\]\(([^)#\s]+\.md)\)`)

type tocItem struct{ Group, Title, Path string }

// parseTOC reads the table of contents of a README.md the way the site does.
func parseTOC(readme string) []tocItem {
	var items []tocItem
	group, fenced := "", false
	for _, l := range strings.Split(readme, "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(l, "## ") {
			group = strings.TrimSpace(strings.TrimPrefix(l, "## "))
		}
		if m := tocEntry.FindStringSubmatch(l); m != nil {
			items = append(items, tocItem{Group: group, Title: m[1], Path: filepath.ToSlash(filepath.Clean(m[2]))})
		}
	}
	return items
}

// tocProblems checks a table of contents against the pages of its book:
// every page listed once, the groups those of tocGroups in their order.
func tocProblems(items []tocItem, pages []string) []string {
	var problems []string
	listed := map[string]int{}
	var groups []string
	for _, it := range items {
		listed[it.Path]++
		if listed[it.Path] == 2 {
			problems = append(problems, fmt.Sprintf("README.md lists %s more than once", it.Path))
		}
		if len(groups) == 0 || groups[len(groups)-1] != it.Group {
			groups = append(groups, it.Group)
		}
	}
	if !slices.Equal(groups, tocGroups) {
		problems = append(problems, fmt.Sprintf("README.md's groups of pages are %q; the book's are %q, in that order", groups, tocGroups))
	}
	for _, p := range pages {
		if p != "README.md" && listed[p] == 0 {
			problems = append(problems, fmt.Sprintf("README.md does not list %s: the site's navigation does not reach it", p))
		}
	}
	return problems
}

// bookPages returns the .md files of a book, relative to it, with slashes.
func bookPages(t *testing.T, book string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(book, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(book, p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pages)
	return pages
}

func bookDir(t *testing.T) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "docs", "book")
}

// TestBookTableOfContents: docs/book/README.md, the home page whose lists
// are the site's sidebar and previous/next order, lists every page of the
// book once, in the book's groups. (A page it lists that is not written yet
// is a broken link, which TestDocsLinksResolve and TestSiteInBrowser report.)
func TestBookTableOfContents(t *testing.T) {
	book := bookDir(t)
	readme, err := os.ReadFile(filepath.Join(book, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	items := parseTOC(string(readme))
	for _, p := range tocProblems(items, bookPages(t, book)) {
		t.Error(p)
	}
	t.Logf("%d pages in %d groups", len(items), len(tocGroups))
}

// TestBookTableOfContentsCheckCatchesMistakes: a page left out, a page listed
// twice and a group out of order are each reported.
func TestBookTableOfContentsCheckCatchesMistakes(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Book\n\n")
	for _, g := range tocGroups {
		fmt.Fprintf(&b, "## %s\n\n- [P](%s/p.md): a page.\n\n", g, strings.ToLower(strings.Fields(g)[0]))
	}
	good := b.String()
	pages := []string{"README.md"}
	for _, it := range parseTOC(good) {
		pages = append(pages, it.Path)
	}
	if p := tocProblems(parseTOC(good), pages); len(p) != 0 {
		t.Fatalf("a complete table of contents is reported: %q", p)
	}
	for name, tc := range map[string]struct {
		readme string
		pages  []string
		want   string
	}{
		"page left out":   {good, append(slices.Clone(pages), "concepts/new.md"), "does not list concepts/new.md"},
		"listed twice":    {good + "- [P again](runbooks/p.md)\n", pages, "lists runbooks/p.md more than once"},
		"group moved":     {strings.Replace(good, "## Concepts", "## Reference", 1), pages, "groups of pages are"},
		"fenced list":     {strings.Replace(good, "- [P](getting/p.md)", "```\n- [P](getting/p.md)\n```", 1), pages, "does not list getting/p.md"},
		"not a list item": {strings.Replace(good, "- [P](development/p.md): a page.", "See [P](development/p.md).", 1), pages, "does not list development/p.md"},
	} {
		t.Run(name, func(t *testing.T) {
			problems := tocProblems(parseTOC(tc.readme), tc.pages)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem contains %q; got %q", tc.want, problems)
			}
		})
	}
}

var (
	fenceLine   = regexp.MustCompile("^\\s*(```+|~~~+)\\s*(\\S*)")
	headingLine = regexp.MustCompile(`^(#{1,6})\s+\S`)
	imageNoAlt  = regexp.MustCompile(`!\[\]\(`)
	emptyLink   = regexp.MustCompile(`(^|[^!\]])\[\]\(`)
	tableSep    = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+\s*$`)
)

// markdownProblems lints one page of the book: it opens with "# Title" and
// has no other H1, a heading goes at most one level below the one before
// it, every code fence names its language and is closed, every table row
// has as many cells as its header, and every image has alternative text
// and every link has text.
func markdownProblems(page string) []string {
	var problems []string
	report := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}
	lines := strings.Split(strings.ReplaceAll(page, "\r\n", "\n"), "\n")
	if !strings.HasPrefix(lines[0], "# ") {
		report(1, "the page does not open with a \"# Title\" line")
	}
	fence, fenceAt := "", 0
	level := 0
	for i := 0; i < len(lines); i++ {
		l, n := lines[i], i+1
		if m := fenceLine.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				fence, fenceAt = m[1], n
				if m[2] == "" {
					report(n, "a code block without a language (```sh, ```text, ```yaml, ...)")
				}
			case strings.HasPrefix(m[1], fence) && m[2] == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := headingLine.FindStringSubmatch(l); m != nil {
			h := len(m[1])
			if h == 1 && n != 1 {
				report(n, "a second \"# \" heading: a page has one title")
			}
			if level > 0 && h > level+1 {
				report(n, "heading level %d below a level %d heading", h, level)
			}
			level = h
		}
		if imageNoAlt.MatchString(l) {
			report(n, "an image without alternative text")
		}
		if emptyLink.MatchString(l) {
			report(n, "a link without text")
		}
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "|") && i+1 < len(lines) && tableSep.MatchString(strings.TrimSpace(lines[i+1])) {
			want := len(tableCells(t))
			if got := len(tableCells(strings.TrimSpace(lines[i+1]))); got != want {
				report(n+1, "the table's separator row has %d cells, its header %d", got, want)
			}
			for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				if got := len(tableCells(strings.TrimSpace(lines[i]))); got != want {
					report(i+1, "a table row with %d cells under a header of %d", got, want)
				}
			}
			i--
		}
	}
	if fence != "" {
		report(fenceAt, "a code block that is never closed")
	}
	return problems
}

// tableCells splits a table row at its pipes, as GitHub does: a pipe
// escaped with a backslash is part of its cell, also inside code.
func tableCells(row string) []string {
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = strings.TrimSuffix(row, "|")
	}
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case row[i] == '|':
			cells = append(cells, cell.String())
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, cell.String())
}

// TestBookMarkdown lints every page of docs/book (markdownProblems).
func TestBookMarkdown(t *testing.T) {
	book := bookDir(t)
	pages := bookPages(t, book)
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(book, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range markdownProblems(string(b)) {
			t.Errorf("docs/book/%s %s", p, problem)
		}
	}
	t.Logf("%d pages linted", len(pages))
}

// TestBookMarkdownCheckCatchesMistakes: each rule of markdownProblems reports
// a page that breaks it, and a page that keeps them all passes.
func TestBookMarkdownCheckCatchesMistakes(t *testing.T) {
	good := "# Title\n\nText with a [link](x.md) and ![a plot](p.png).\n\n## Part\n\n### Detail\n\n" +
		"| A | B |\n| --- | --- |\n| `a \\| b` | c |\n\n```sh\necho '# not a heading'\n```\n\n## Next\n"
	if p := markdownProblems(good); len(p) != 0 {
		t.Fatalf("a good page is reported: %q", p)
	}
	for _, tc := range []struct{ page, want string }{
		{strings.Replace(good, "# Title", "Title", 1), "does not open with"},
		{good + "\n# Another\n", "a second \"# \" heading"},
		{strings.Replace(good, "### Detail", "#### Detail", 1), "heading level 4 below a level 2"},
		{strings.Replace(good, "```sh", "```", 1), "without a language"},
		{good + "\n```text\nno end\n", "never closed"},
		{strings.Replace(good, "| `a \\| b` | c |", "| a | b | c |", 1), "a table row with 3 cells under a header of 2"},
		{strings.Replace(good, "| --- | --- |", "| --- |", 1), "separator row has 1 cells"},
		{strings.Replace(good, "![a plot]", "![]", 1), "without alternative text"},
		{strings.Replace(good, "[link]", "[]", 1), "a link without text"},
	} {
		problems := markdownProblems(tc.page)
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("no problem contains %q; got %q", tc.want, problems)
		}
	}
}
