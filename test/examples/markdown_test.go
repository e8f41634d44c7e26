package examples

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// A block is one fenced code block of a page.
type block struct {
	// Line is the line of the opening fence (1-based).
	Line int
	// ContentLine is the line of the block's first content line.
	ContentLine int
	// Lang is the first word of the info string ("" when none).
	Lang string
	// Content is the block's text, indentation of an enclosing list item
	// removed.
	Content []byte
	// Marker is the example marker on the line right before the fence,
	// nil when there is none.
	Marker *marker
}

// A marker is an example comment of the book's conventions.
type marker struct {
	Line int
	// Type is "fragment" or "example".
	Type string
	// Kind and Path are a fragment's arguments.
	Kind, Path string
	// Raw is the comment as written.
	Raw string
}

// markerPattern matches an HTML comment holding an example marker; any
// other comment is not the checker's business.
var markerPattern = regexp.MustCompile(`^<!--\s*(fragment|example)\s*:\s*(.*?)\s*-->$`)

var kindPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// page is a parsed page: its fenced code blocks, and the problems found in
// its markers (a marker that attaches to no yaml fence, or that is
// malformed).
type page struct {
	Blocks   []block
	Problems []problem
}

// parsePage parses src as CommonMark with goldmark and returns its fenced
// code blocks with the marker, if any, that sits on the line right before
// each.
func parsePage(src []byte) page {
	lines := lineStarts(src)
	lineOf := func(off int) int { return sort.Search(len(lines), func(i int) bool { return lines[i] > off }) }
	doc := goldmark.New().Parser().Parse(text.NewReader(src))

	var p page
	attached := map[ast.Node]bool{}
	var markers []struct {
		node ast.Node
		m    marker
		err  string
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			raw := strings.TrimSpace(string(htmlText(n, src)))
			mm := markerPattern.FindStringSubmatch(raw)
			if mm == nil {
				return ast.WalkSkipChildren, nil
			}
			m, err := parseMarker(mm[1], mm[2])
			m.Raw = raw
			m.Line = lineOf(n.Lines().At(0).Start)
			markers = append(markers, struct {
				node ast.Node
				m    marker
				err  string
			}{n, m, err})
			return ast.WalkSkipChildren, nil
		case *ast.FencedCodeBlock:
			b := block{Line: lineOf(n.Pos())}
			if l := n.Language(src); l != nil {
				b.Lang = string(l)
			}
			var buf bytes.Buffer
			segs := n.Lines()
			for i := 0; i < segs.Len(); i++ {
				s := segs.At(i)
				buf.Write(bytes.Repeat([]byte(" "), s.Padding))
				buf.Write(s.Value(src))
			}
			b.Content = buf.Bytes()
			b.ContentLine = b.Line + 1
			if segs.Len() > 0 {
				b.ContentLine = lineOf(segs.At(0).Start)
			}
			if prev, ok := n.PreviousSibling().(*ast.HTMLBlock); ok {
				for i := range markers {
					if markers[i].node != prev {
						continue
					}
					if markers[i].err == "" && lastLine(prev, src, lineOf) == b.Line-1 {
						m := markers[i].m
						b.Marker = &m
						attached[prev] = true
					}
				}
			}
			p.Blocks = append(p.Blocks, b)
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	for _, m := range markers {
		switch {
		case m.err != "":
			p.Problems = append(p.Problems, problem{Line: m.m.Line, Msg: fmt.Sprintf("%s: %s", m.m.Raw, m.err)})
		case !attached[m.node]:
			p.Problems = append(p.Problems, problem{Line: m.m.Line, Msg: fmt.Sprintf("%s is not on the line right before a ```yaml fence, so it marks nothing", m.m.Raw)})
		}
	}
	// A marker attached to a fence of another language marks nothing either.
	for _, b := range p.Blocks {
		if b.Marker != nil && !isYAML(b.Lang) {
			p.Problems = append(p.Problems, problem{Line: b.Marker.Line, Msg: fmt.Sprintf("%s precedes a ```%s block; markers apply to ```yaml blocks only", b.Marker.Raw, b.Lang)})
		}
	}
	return p
}

func isYAML(lang string) bool { return lang == "yaml" || lang == "yml" }

// parseMarker reads a marker's arguments; the error says what is wrong.
func parseMarker(typ, args string) (marker, string) {
	m := marker{Type: typ}
	f := strings.Fields(args)
	switch typ {
	case "fragment":
		if len(f) != 2 {
			return m, "a fragment marker is <!-- fragment: <Kind> <path> -->"
		}
		m.Kind, m.Path = f[0], f[1]
		if !kindPattern.MatchString(m.Kind) {
			return m, fmt.Sprintf("%q is not a kind", m.Kind)
		}
		for _, el := range strings.Split(m.Path, ".") {
			if el == "" {
				return m, fmt.Sprintf("%q is not a dot path (spec, spec.jobs, metadata, ...)", m.Path)
			}
		}
	case "example":
		if len(f) != 1 || f[0] != "not-an-object" {
			return m, "the only example marker is <!-- example: not-an-object -->"
		}
	}
	return m, ""
}

// htmlText is an HTML block's text, its closing line included.
func htmlText(n *ast.HTMLBlock, src []byte) []byte {
	var buf bytes.Buffer
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		buf.Write(seg.Value(src))
	}
	if n.HasClosure() {
		closure := n.ClosureLine
		buf.Write(closure.Value(src))
	}
	return buf.Bytes()
}

// lastLine is the line an HTML block ends on.
func lastLine(n *ast.HTMLBlock, src []byte, lineOf func(int) int) int {
	if n.HasClosure() {
		return lineOf(n.ClosureLine.Start)
	}
	segs := n.Lines()
	return lineOf(segs.At(segs.Len() - 1).Start)
}

// lineStarts returns the offset at which each line of src starts.
func lineStarts(src []byte) []int {
	out := []int{0}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			out = append(out, i+1)
		}
	}
	return out
}
