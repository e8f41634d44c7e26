package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"sigs.k8s.io/yaml"
)

// A problem is one thing wrong with a page's examples.
type problem struct {
	// Line is the line of the page the problem is at.
	Line int
	// Object is kind/name of the object the server judged, "" when the
	// problem is not about one.
	Object string
	// Msg says what is wrong; for a refused object, the server's message.
	Msg string
}

func (p problem) String(page string) string {
	if p.Object != "" {
		return fmt.Sprintf("%s:%d: %s: %s", page, p.Line, p.Object, p.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", page, p.Line, p.Msg)
}

// The kinds of block the checker counts.
const (
	countObjects     = "yaml objects (blocks)"
	countDocuments   = "yaml objects (objects)"
	countFragments   = "yaml fragments"
	countNotAnObject = "yaml not-an-object"
	countHCL         = "hcl"
	countJSON        = "json"
)

// checker checks the blocks of pages and counts them by type.
type checker struct {
	// srv dry-runs objects; nil checks everything but the server's
	// judgement (go test -short).
	srv    *server
	counts map[string]int
}

func newChecker(srv *server) *checker {
	return &checker{srv: srv, counts: map[string]int{}}
}

// summary is the counts, one type per line.
func (c *checker) summary() string {
	var keys []string
	for k := range c.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %-32s %d", k, c.counts[k])
	}
	return b.String()
}

// checkPage checks every block of the page src, named name, and returns
// its problems in the order of the page.
func (c *checker) checkPage(ctx context.Context, name string, src []byte) []problem {
	p := parsePage(src)
	problems := p.Problems
	for _, b := range p.Blocks {
		problems = append(problems, c.checkBlock(ctx, name, b)...)
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
	return problems
}

func (c *checker) checkBlock(ctx context.Context, page string, b block) []problem {
	switch {
	case isYAML(b.Lang) && b.Marker == nil:
		c.counts[countObjects]++
		return c.checkObjects(ctx, b)
	case isYAML(b.Lang) && b.Marker.Type == "fragment":
		c.counts[countFragments]++
		return c.checkFragment(ctx, b)
	case isYAML(b.Lang):
		c.counts[countNotAnObject]++
		var out []problem
		for _, d := range splitDocuments(b) {
			if _, err := yaml.YAMLToJSONStrict(d.Text); err != nil {
				out = append(out, problem{Line: d.Line, Msg: "not YAML: " + err.Error()})
			}
		}
		return out
	case b.Lang == "hcl":
		c.counts[countHCL]++
		return checkHCL(page, b)
	case b.Lang == "json":
		c.counts[countJSON]++
		return checkJSON(b)
	case b.Lang == "":
		c.counts["unchecked: no language"]++
	default:
		c.counts["unchecked: "+b.Lang]++
	}
	return nil
}

// A document is one YAML document of a block.
type document struct {
	Line int
	Text []byte
}

// splitDocuments splits a block at its "---" lines; documents that hold
// only comments or blank lines are dropped.
func splitDocuments(b block) []document {
	var out []document
	cur := document{Line: b.ContentLine}
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Text))) > 0 {
			out = append(out, cur)
		}
	}
	for i, l := range strings.SplitAfter(string(b.Content), "\n") {
		t := strings.TrimRight(l, " \t\r\n")
		if t == "---" || strings.HasPrefix(t, "--- #") {
			flush()
			cur = document{Line: b.ContentLine + i + 1}
			continue
		}
		if len(cur.Text) == 0 && strings.TrimSpace(l) == "" {
			cur.Line = b.ContentLine + i + 1
			continue
		}
		cur.Text = append(cur.Text, l...)
	}
	flush()
	return out
}

func stripComments(y []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(y, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l...)
		}
	}
	return out
}

// decode reads one YAML document strictly (no duplicate keys) into JSON
// values, numbers kept as written.
func decode(y []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

const markHint = "mark it <!-- fragment: <Kind> <path> --> or <!-- example: not-an-object --> if it is not meant to be one"

// checkObjects checks a yaml block with no marker: each document a
// complete object the server accepts.
func (c *checker) checkObjects(ctx context.Context, b block) []problem {
	docs := splitDocuments(b)
	if len(docs) == 0 {
		return []problem{{Line: b.Line, Msg: "an unmarked yaml block holds no object"}}
	}
	var out []problem
	for _, d := range docs {
		v, err := decode(d.Text)
		if err != nil {
			out = append(out, problem{Line: d.Line, Msg: "not YAML: " + err.Error()})
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			out = append(out, problem{Line: d.Line, Msg: fmt.Sprintf("an unmarked yaml block must hold Kubernetes objects, this document is a %s; %s", jsonType(v), markHint)})
			continue
		}
		var missing []string
		for _, f := range []string{"apiVersion", "kind"} {
			if s, _ := obj[f].(string); s == "" {
				missing = append(missing, f)
			}
		}
		meta, _ := obj["metadata"].(map[string]any)
		if s, _ := meta["name"].(string); s == "" {
			missing = append(missing, "metadata.name")
		}
		if len(missing) > 0 {
			out = append(out, problem{Line: d.Line, Msg: fmt.Sprintf("an unmarked yaml block must hold complete Kubernetes objects, this document has no %s; %s", strings.Join(missing, ", "), markHint)})
			continue
		}
		c.counts[countDocuments]++
		if c.srv == nil {
			continue
		}
		if err := c.srv.apply(ctx, obj); err != nil {
			out = append(out, problem{Line: d.Line, Object: objectName(obj), Msg: err.Error()})
		}
	}
	return out
}

// checkFragment places a fragment in a minimal object of its kind and has
// the server judge the whole.
func (c *checker) checkFragment(ctx context.Context, b block) []problem {
	m := b.Marker
	docs := splitDocuments(b)
	if len(docs) != 1 {
		return []problem{{Line: b.Line, Msg: fmt.Sprintf("%s: a fragment is one YAML document, this block has %d", m.Raw, len(docs))}}
	}
	snippet, err := decode(docs[0].Text)
	if err != nil {
		return []problem{{Line: docs[0].Line, Msg: "not YAML: " + err.Error()}}
	}
	if c.srv == nil {
		return nil
	}
	obj, err := c.srv.base(m.Kind)
	if err != nil {
		return []problem{{Line: m.Line, Msg: fmt.Sprintf("%s: %v", m.Raw, err)}}
	}
	if err := place(obj, strings.Split(m.Path, "."), snippet); err != nil {
		return []problem{{Line: m.Line, Msg: fmt.Sprintf("%s: %v", m.Raw, err)}}
	}
	if err := c.srv.apply(ctx, obj); err != nil {
		return []problem{{Line: docs[0].Line, Object: objectName(obj), Msg: fmt.Sprintf("the fragment at %s: %v", m.Path, err)}}
	}
	return nil
}

// place puts v at path in obj: maps along the path are created, a map
// already there is merged with v (v's keys win, maps merged in depth).
func place(obj map[string]any, path []string, v any) error {
	cur := obj
	for i, el := range path[:len(path)-1] {
		next, ok := cur[el]
		if !ok {
			m := map[string]any{}
			cur[el] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is a %s in a minimal object of this kind, so nothing can sit under it", strings.Join(path[:i+1], "."), jsonType(next))
		}
		cur = m
	}
	last := path[len(path)-1]
	if have, ok := cur[last].(map[string]any); ok {
		if add, ok := v.(map[string]any); ok {
			merge(have, add)
			return nil
		}
	}
	cur[last] = v
	return nil
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if d, ok := dst[k].(map[string]any); ok {
			if s, ok := v.(map[string]any); ok {
				merge(d, s)
				continue
			}
		}
		dst[k] = v
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "mapping"
	case []any:
		return "list"
	case string:
		return "string"
	default:
		return "scalar"
	}
}

func objectName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return fmt.Sprintf("%s %s/%s", kind, ns, name)
	}
	return kind + " " + name
}

// checkHCL parses a block as an HCL file of its own.
func checkHCL(page string, b block) []problem {
	_, diags := hclsyntax.ParseConfig(b.Content, page, hcl.Pos{Line: b.ContentLine, Column: 1})
	var out []problem
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		line := b.Line
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		msg := "not HCL: " + d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		out = append(out, problem{Line: line, Msg: msg})
	}
	return out
}

// checkJSON parses a block as one JSON value.
func checkJSON(b block) []problem {
	var v any
	err := json.Unmarshal(b.Content, &v)
	if err == nil {
		return nil
	}
	line := b.Line
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line = b.ContentLine + bytes.Count(b.Content[:min(max(int(se.Offset)-1, 0), len(b.Content))], []byte("\n"))
	}
	return []problem{{Line: line, Msg: "not JSON: " + err.Error()}}
}
