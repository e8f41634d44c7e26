package verify

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// docsConst is a top-level string constant of the API package.
type docsConst struct {
	Name  string
	Value string
	// Pos is "file.go:line", for messages.
	Pos string
}

// docsAPIConsts reads every top-level string constant of the Go package in dir
// (test files excluded) with go/ast. A constant defined as another constant
// of the package is resolved to its value; anything else that is not a
// string literal is skipped, since no name constant is written that way.
func docsAPIConsts(dir string) (map[string]docsConst, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	type pending struct {
		c   docsConst
		ref string
	}
	var refs []pending
	out := map[string]docsConst{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, n), err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					p := fset.Position(id.Pos())
					c := docsConst{Name: id.Name, Pos: fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)}
					switch v := vs.Values[i].(type) {
					case *ast.BasicLit:
						if v.Kind != token.STRING {
							continue
						}
						c.Value, err = strconv.Unquote(v.Value)
						if err != nil {
							return nil, fmt.Errorf("constant %s at %s: %w", c.Name, c.Pos, err)
						}
						out[c.Name] = c
					case *ast.Ident:
						refs = append(refs, pending{c: c, ref: v.Name})
					}
				}
			}
		}
	}
	for _, p := range refs {
		target, ok := out[p.ref]
		if !ok {
			continue
		}
		p.c.Value = target.Value
		out[p.c.Name] = p.c
	}
	return out, nil
}

// docsWithSuffix returns the constants whose names end in one of the suffixes,
// sorted by name.
func docsWithSuffix(consts map[string]docsConst, suffixes ...string) []docsConst {
	var out []docsConst
	for _, c := range consts {
		for _, s := range suffixes {
			if strings.HasSuffix(c.Name, s) && c.Name != s {
				out = append(out, c)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
