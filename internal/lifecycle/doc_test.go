package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDocStepTableFollowsFlow checks that the step table of doc.go names
// the steps of an unpaused pass in the order flow.go runs them: the
// preamble, the steps passSteps lists for an unpaused pass, and the status
// patch Reconcile defers. A step added to or moved in the flow fails here
// until the table says so.
func TestDocStepTableFollowsFlow(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "flow.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var unpaused []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "passSteps" {
			continue
		}
		// The steps of an unpaused pass are the slice assigned under
		// `if !p.paused`.
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			ifs, ok := n.(*ast.IfStmt)
			if !ok {
				return true
			}
			if u, ok := ifs.Cond.(*ast.UnaryExpr); !ok || u.Op != token.NOT || !strings.HasSuffix(exprString(u.X), ".paused") {
				return true
			}
			ast.Inspect(ifs.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					for _, e := range lit.Elts {
						unpaused = append(unpaused, exprString(e))
					}
					return false
				}
				return true
			})
			return false
		})
	}
	if len(unpaused) == 0 {
		t.Fatal("flow.go: found no steps of an unpaused pass in passSteps")
	}
	want := []string{"preamble"}
	for _, s := range unpaused {
		want = append(want, strings.TrimPrefix(s, "f."))
	}
	want = append(want, "patchStatus")

	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	got := docStepTable(string(doc))
	if !slices.Equal(got, want) {
		t.Errorf("doc.go's step table names %v;\nflow.go runs %v", got, want)
	}
}

// docStepTable returns the first word of each row of the step table that
// follows "An unpaused pass:" in doc.go: a row starts at a tab and a word,
// its continuation lines at a tab and spaces.
func docStepTable(doc string) []string {
	_, table, ok := strings.Cut(doc, "An unpaused pass:")
	if !ok {
		return nil
	}
	var steps []string
	for _, line := range strings.Split(table, "\n")[1:] {
		line = strings.TrimPrefix(line, "//")
		if strings.TrimSpace(line) == "" {
			if len(steps) > 0 {
				break
			}
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			break
		}
		if row := strings.TrimPrefix(line, "\t"); !strings.HasPrefix(row, " ") {
			steps = append(steps, strings.Fields(row)[0])
		}
	}
	return steps
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return ""
}
