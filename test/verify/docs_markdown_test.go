package verify

import (
	"regexp"
	"strings"
)

// docsTable is one pipe table of a Markdown page.
type docsTable struct {
	Header []string
	Rows   []docsRow
	// Section is the nearest heading above the table.
	Section string
}

type docsRow struct {
	Cells []string
	Line  int
}

// column returns the index of the header cell named name, or -1.
func (t docsTable) column(name string) int {
	for i, h := range t.Header {
		if h == name {
			return i
		}
	}
	return -1
}

var docsTableSeparator = regexp.MustCompile(`^\|(\s*:?-{3,}:?\s*\|)+\s*$`)

// docsParseTables returns every pipe table of a Markdown page, skipping fenced
// code blocks. A table is a header row followed by a separator row.
func docsParseTables(text string) []docsTable {
	lines := strings.Split(text, "\n")
	var tables []docsTable
	section := ""
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(l, "#") {
			section = strings.TrimSpace(strings.TrimLeft(l, "#"))
			continue
		}
		if !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !docsTableSeparator.MatchString(strings.TrimSpace(lines[i+1])) {
			continue
		}
		t := docsTable{Header: docsSplitRow(l), Section: section}
		i += 2
		for ; i < len(lines); i++ {
			r := strings.TrimSpace(lines[i])
			if !strings.HasPrefix(r, "|") {
				break
			}
			t.Rows = append(t.Rows, docsRow{Cells: docsSplitRow(r), Line: i + 1})
		}
		i--
		tables = append(tables, t)
	}
	return tables
}

// docsSplitRow splits a table row on the pipes that are not escaped as \|.
func docsSplitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var docsCodeSpan = regexp.MustCompile("`([^`]+)`")

// docsCodeNames returns the contents of every code span of a cell.
func docsCodeNames(cell string) []string {
	var out []string
	for _, m := range docsCodeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

var docsLinkPattern = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// links returns every inline link target of a page, code blocks and code
// spans excluded.
func docsLinks(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		l = docsCodeSpan.ReplaceAllString(l, "")
		for _, m := range docsLinkPattern.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the anchors GitHub derives from a page's headings:
// lower case, punctuation dropped, spaces turned into hyphens.
func docsAnchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(t, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
