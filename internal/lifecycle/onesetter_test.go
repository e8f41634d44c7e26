package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// conditionSite is a function that sets or builds a condition.
type conditionSite struct {
	fn  string // package.Function or package.Type.Method
	pos string
}

// conditionConsts reads the condition types of reference-facts §1 from
// api/v1alpha1/conditions_consts.go: constant name → type.
func conditionConsts(t *testing.T, root string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "api/v1alpha1/conditions_consts.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasSuffix(n.Name, "Condition") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					v, _ := strconv.Unquote(lit.Value)
					out[n.Name] = v
				}
			}
		}
	}
	if len(out) < 17 {
		t.Fatalf("found %d condition types in conditions_consts.go, want every one of reference-facts §1", len(out))
	}
	return out
}

// setCalls are the condition-setting functions of Cluster API's
// conditions package and apimachinery's meta package, with the index of
// the argument that holds the condition (a metav1.Condition) or its type
// (a string).
var setCalls = map[string]int{
	"Set":                   1, // conditions.Set(obj, condition)
	"SetStatusCondition":    1, // meta.SetStatusCondition(&conditions, condition)
	"MarkTrue":              1, // conditions.MarkTrue(obj, type)
	"MarkFalse":             1,
	"MarkUnknown":           1,
	"SetSummaryCondition":   2, // conditions.SetSummaryCondition(source, target, type, ...)
	"SetMirrorCondition":    2,
	"SetAggregateCondition": 2,
}

// builtElsewhere are the functions that set a condition built by another
// function the walk sees: a TerraformClusterIdentity's Ready, built by
// identity.IdentityReadyCondition.
var builtElsewhere = map[string]bool{"identity.SetIdentityStatus": true}

// otherObjects are condition setters of an object that is not a
// workload: a TerraformClusterIdentity's Ready (reference-facts §1.2),
// which shares its type with the workloads' Ready summary.
var otherObjects = map[string]bool{"identity.IdentityReadyCondition": true}

// findConditionSites walks the non-test Go files under dirs and returns,
// by condition type, the functions that set or build that condition: a
// metav1.Condition literal with that Type, a Type field assigned it, or a
// call of a condition-setting function naming it. It also returns the
// setting calls whose condition it cannot see (not a literal).
func findConditionSites(t *testing.T, root string, dirs ...string) (map[string][]conditionSite, []string) {
	t.Helper()
	types := conditionConsts(t, root)
	sites := map[string][]conditionSite{}
	var unseen []string
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				name := f.Name.Name + "." + fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 {
					name = f.Name.Name + "." + recvName(fd.Recv.List[0].Type) + "." + fd.Name.Name
				}
				for typ := range conditionTypesIn(fd.Body, types, func(call *ast.CallExpr) {
					unseen = append(unseen, name+" at "+fset.Position(call.Pos()).String())
				}) {
					sites[typ] = append(sites[typ], conditionSite{fn: name, pos: fset.Position(fd.Pos()).String()})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sites, unseen
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	}
	return "?"
}

// conditionTypesIn returns the condition types a function body sets or
// builds; unseen is called for a setting call whose condition is not a
// literal.
func conditionTypesIn(body *ast.BlockStmt, types map[string]string, unseen func(*ast.CallExpr)) map[string]bool {
	out := map[string]bool{}
	// Local names bound to a condition type (const t = infrav1.XCondition).
	local := map[string]string{}
	typeOf := func(e ast.Expr) string {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return types[x.Sel.Name]
		case *ast.Ident:
			if v, ok := local[x.Name]; ok {
				return v
			}
			return types[x.Name]
		}
		return ""
	}
	isCondition := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Condition"
	}
	// Local variables holding a metav1.Condition literal the walk sees.
	literal := map[string]bool{}
	bind := func(name string, value ast.Expr) {
		if typ := typeOf(value); typ != "" {
			local[name] = typ
		}
		if lit, ok := value.(*ast.CompositeLit); ok && isCondition(lit.Type) {
			literal[name] = true
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ValueSpec:
			for i, nm := range x.Names {
				if i < len(x.Values) {
					bind(nm.Name, x.Values[i])
				}
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if id, ok := l.(*ast.Ident); ok && x.Tok == token.DEFINE && i < len(x.Rhs) {
					bind(id.Name, x.Rhs[i])
				}
			}
		}
		return true
	})
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CompositeLit:
			if !isCondition(x.Type) {
				return true
			}
			for _, el := range x.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Type" {
						if typ := typeOf(kv.Value); typ != "" {
							out[typ] = true
						}
					}
				}
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Type" && i < len(x.Rhs) {
					if typ := typeOf(x.Rhs[i]); typ != "" {
						out[typ] = true
					}
				}
			}
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || (pkg.Name != "conditions" && pkg.Name != "meta" && pkg.Name != "v1beta1conditions") {
				return true
			}
			i, ok := setCalls[sel.Sel.Name]
			if !ok || i >= len(x.Args) {
				return true
			}
			arg := x.Args[i]
			if typ := typeOf(arg); typ != "" {
				out[typ] = true
				return true
			}
			if lit, ok := arg.(*ast.CompositeLit); ok && isCondition(lit.Type) {
				return true // counted as a literal above
			}
			if id, ok := arg.(*ast.Ident); ok && literal[id.Name] {
				return true
			}
			unseen(x)
		}
		return true
	})
	return out
}

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestOneSetterPerCondition: each condition of reference-facts §1 is set
// (or built) in exactly one function of the repository's code: the flow's
// setters in conditions_set.go for the workloads' conditions. A second
// site, a condition set from a value the walk cannot see, or a condition
// type without a setter fails.
func TestOneSetterPerCondition(t *testing.T) {
	root := repoRoot(t)
	sites, unseen := findConditionSites(t, root, "internal", "api")
	for _, u := range unseen {
		if !builtElsewhere[strings.SplitN(u, " at ", 2)[0]] {
			t.Errorf("a condition is set from a value the walk cannot see (build it as a literal in its one setter): %s", u)
		}
	}
	var typs []string
	for typ := range conditionConsts(t, root) {
		typs = append(typs, typ)
	}
	sort.Strings(typs)
	for _, name := range typs {
		typ := conditionConsts(t, root)[name]
		var fns []string
		for _, s := range sites[typ] {
			if !otherObjects[s.fn] {
				fns = append(fns, s.fn+" ("+s.pos+")")
			}
		}
		switch {
		case len(fns) == 0:
			t.Errorf("condition %s has no setter", typ)
		case len(fns) > 1:
			t.Errorf("condition %s is set from %d functions, want one: %s", typ, len(fns), strings.Join(fns, "; "))
		}
	}
}

// TestOneSetterWalkFindsSecondSite: the walk finds a second setter of a
// condition (here, one written the way the steps used to record one).
func TestOneSetterWalkFindsSecondSite(t *testing.T) {
	src := `package x
func record(p *Pass) {
	const t = infrav1.StateReadableCondition
	conditions.Set(p.Obj, metav1.Condition{Type: t, Status: metav1.ConditionTrue})
}
func mark(obj conditions.Setter) { conditions.MarkFalse(obj, infrav1.DriftDetectedCondition, "r", "m") }
func build() metav1.Condition { return metav1.Condition{Type: infrav1.PausedCondition} }
func typed(c *metav1.Condition) { c.Type = infrav1.DeletingCondition }
func opaque(obj conditions.Setter, c metav1.Condition) { conditions.Set(obj, c) }
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	types := conditionConsts(t, repoRoot(t))
	want := map[string]string{"record": "StateReadable", "mark": "DriftDetected", "build": "Paused", "typed": "Deleting"}
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		blind := false
		got := conditionTypesIn(fd.Body, types, func(*ast.CallExpr) { blind = true })
		if w, ok := want[fd.Name.Name]; ok && (len(got) != 1 || !got[w]) {
			t.Errorf("%s: found %v, want %s", fd.Name.Name, got, w)
		}
		if fd.Name.Name == "opaque" && !blind {
			t.Error("a condition set from a value is not reported")
		}
	}
}
