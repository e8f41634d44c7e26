package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
)

// This file answers "which strings can reach an event's reason, or a
// condition's reason?" for CAPTF's own code (cmd/ and internal/, test files
// excluded), so the docs tests can tell a declared reason from one the code
// really uses. The packages are type-checked from source; their
// dependencies come from the export data `go list -export` produces.
//
// The answer is a small flow-insensitive data-flow analysis. An edge says a
// value moves into a variable: a call argument into the callee's parameter,
// a composite-literal element into its field, an assignment's right side
// into its left side, a returned value into the function's result, a call
// of an interface method into the same parameter of each implementation.
// Starting from the sinks (a parameter or field that ends in an event or a
// condition, outside CAPTF), the analysis walks the edges backwards and
// collects every string constant that reaches a sink.
//
// It errs on the side of "reaches": a struct field is one variable for every
// value of its type, and a path a run never takes counts like any other. So
// a reason it reports as unused is certainly unused, while a reason it
// reports as used may, in a corner, only be used in principle.

const flowModule = "github.com/captf-io/cluster-api-provider-terraform"

// flowPkg is one package of the module, type-checked from source.
type flowPkg struct {
	Path  string
	Files []*ast.File
	Info  *types.Info
	Types *types.Package
}

// flowProgram is CAPTF's code, type-checked.
type flowProgram struct {
	Fset *token.FileSet
	Pkgs []*flowPkg

	// listed is go list's answer the program was checked from, deps
	// first; imp imports the packages outside the module from their
	// export data, one *types.Package each, for this program and every
	// program derived from it.
	listed []flowListed
	imp    types.Importer
}

type flowListed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Export     string
	Standard   bool
	Error      *struct{ Err string }
}

// flowBase caches, per root and patterns, the program checked without an
// overlay: the test binary lists and checks the module once, and a test
// that changes a few files checks again only the packages those files
// reach.
var flowBase = struct {
	sync.Mutex
	progs map[string]*flowProgram
}{progs: map[string]*flowProgram{}}

// flowLoad type-checks the packages matching patterns (relative to root)
// and every package of the module they import. overlay replaces the
// content of source files, by absolute path, so a test can change the code
// it analyses: the packages it changes, and those of the module that
// import them, are checked again; the others are shared with the program
// loaded without an overlay.
func flowLoad(root string, overlay map[string]string, patterns ...string) (*flowProgram, error) {
	flowBase.Lock()
	defer flowBase.Unlock()
	key := root + "\x00" + strings.Join(patterns, "\x00")
	base, ok := flowBase.progs[key]
	if !ok {
		listed, err := flowList(root, patterns...)
		if err != nil {
			return nil, err
		}
		if base, err = flowCheck(listed, nil, nil); err != nil {
			return nil, err
		}
		flowBase.progs[key] = base
	}
	if len(overlay) == 0 {
		return base, nil
	}
	return flowCheck(base.listed, overlay, base)
}

// flowBuildFlags are the test binary's own -race and -trimpath: go list
// then compiles export data under the same action IDs as the build of the
// test binaries (make test's flags), so it finds it in the build cache, in
// any clone.
func flowBuildFlags() []string {
	flags := []string{"-trimpath"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		flags = flags[:0]
		for _, s := range bi.Settings {
			if (s.Key == "-race" || s.Key == "-trimpath") && s.Value == "true" {
				flags = append(flags, s.Key)
			}
		}
	}
	return flags
}

// flowList lists the packages matching patterns and their dependencies,
// deps first, with their export data.
func flowList(root string, patterns ...string) ([]flowListed, error) {
	args := append([]string{"list"}, flowBuildFlags()...)
	args = append(args, "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,Export,Standard,Error")
	args = append(args, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	var listed []flowListed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p flowListed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: package %s: %s", p.ImportPath, p.Error.Err)
		}
		listed = append(listed, p)
	}
	return listed, nil
}

func flowOurs(path string) bool { return path == flowModule || strings.HasPrefix(path, flowModule+"/") }

// flowCheck type-checks the module's packages of listed. With a base, a
// package is taken from it as it is unless overlay changes one of its
// files or it imports a package checked again.
func flowCheck(listed []flowListed, overlay map[string]string, base *flowProgram) (*flowProgram, error) {
	prog := &flowProgram{listed: listed}
	from := map[string]*flowPkg{}
	if base != nil {
		prog.Fset, prog.imp = base.Fset, base.imp
		for _, p := range base.Pkgs {
			from[p.Path] = p
		}
	} else {
		prog.Fset = token.NewFileSet()
		exports := map[string]string{}
		for _, p := range listed {
			exports[p.ImportPath] = p.Export
		}
		prog.imp = importer.ForCompiler(prog.Fset, "gc", func(path string) (io.ReadCloser, error) {
			f, ok := exports[path]
			if !ok || f == "" {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(f)
		})
	}
	fset := prog.Fset
	ours := map[string]*types.Package{}
	imp := flowImporter(func(path string) (*types.Package, error) {
		if p, ok := ours[path]; ok {
			return p, nil
		}
		if flowOurs(path) {
			return nil, fmt.Errorf("package %s is imported before it was checked", path)
		}
		return prog.imp.Import(path)
	})
	again := map[string]bool{}
	// go list -deps prints a package after everything it imports.
	for _, p := range listed {
		if p.Standard || !flowOurs(p.ImportPath) {
			continue
		}
		if old, ok := from[p.ImportPath]; ok && !flowChanged(p, overlay, again) {
			ours[p.ImportPath] = old.Types
			prog.Pkgs = append(prog.Pkgs, old)
			continue
		}
		again[p.ImportPath] = true
		fp := &flowPkg{Path: p.ImportPath}
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			var src any
			if s, ok := overlay[path]; ok {
				src = s
			}
			f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			fp.Files = append(fp.Files, f)
		}
		fp.Info = &types.Info{
			Types:      map[ast.Expr]types.TypeAndValue{},
			Defs:       map[*ast.Ident]types.Object{},
			Uses:       map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
		}
		conf := types.Config{Importer: imp}
		var err error
		fp.Types, err = conf.Check(p.ImportPath, fset, fp.Files, fp.Info)
		if err != nil {
			return nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
		}
		ours[p.ImportPath] = fp.Types
		prog.Pkgs = append(prog.Pkgs, fp)
	}
	return prog, nil
}

// flowChanged reports whether overlay changes one of p's files or p
// imports a package in again.
func flowChanged(p flowListed, overlay map[string]string, again map[string]bool) bool {
	for _, name := range p.GoFiles {
		if _, ok := overlay[filepath.Join(p.Dir, name)]; ok {
			return true
		}
	}
	for _, i := range p.Imports {
		if again[i] {
			return true
		}
	}
	return false
}

type flowImporter func(path string) (*types.Package, error)

func (f flowImporter) Import(path string) (*types.Package, error) { return f(path) }

// flowEdge is a value moving into a variable.
type flowEdge struct {
	// Src is the expression that is moved; Info types it.
	Src  ast.Expr
	Info *types.Info
	// Owner is, when the destination is a struct field, the struct's named
	// type ("k8s.io/api/events/v1.Event"), else "".
	Owner string
}

// flowGraph holds every edge of the analysed packages, by destination.
type flowGraph struct {
	into map[*types.Var][]flowEdge
	// owner is the named struct type of each field seen as a destination.
	owner map[*types.Var]string
	// results are the result variables of each function, for calls used
	// as values.
	results map[*types.Func]*types.Tuple
}

// flowSink says whether a variable (a parameter, or a field of the named
// struct type owner) is where a reason leaves CAPTF's code.
type flowSink func(v *types.Var, owner string) bool

// flowGraphOf builds the edges of the packages of prog whose import path
// starts with one of prefixes.
func flowGraphOf(prog *flowProgram, prefixes ...string) *flowGraph {
	g := &flowGraph{into: map[*types.Var][]flowEdge{}, owner: map[*types.Var]string{}, results: map[*types.Func]*types.Tuple{}}
	var impls []*types.Func
	var ifaceMethods []*types.Func
	for _, p := range prog.Pkgs {
		scope := p.Types.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok {
				continue
			}
			named, ok := tn.Type().(*types.Named)
			if !ok {
				continue
			}
			if _, isIface := named.Underlying().(*types.Interface); isIface {
				continue
			}
			for i := 0; i < named.NumMethods(); i++ {
				impls = append(impls, named.Method(i))
			}
		}
	}
	for _, p := range prog.Pkgs {
		match := false
		for _, pre := range prefixes {
			if p.Path == pre || strings.HasPrefix(p.Path, pre+"/") {
				match = true
			}
		}
		if !match {
			continue
		}
		info := p.Info
		add := func(dst *types.Var, src ast.Expr, owner string) {
			if dst == nil {
				return
			}
			dst = dst.Origin()
			g.into[dst] = append(g.into[dst], flowEdge{Src: src, Info: info, Owner: owner})
			if owner != "" {
				g.owner[dst] = owner
			}
		}
		for _, f := range p.Files {
			// A variable bound to a function literal (def := func(...))
			// calls that literal.
			lits := map[*types.Var]*types.Signature{}
			ast.Inspect(f, func(n ast.Node) bool {
				bind := func(id *ast.Ident, e ast.Expr) {
					lit, ok := ast.Unparen(e).(*ast.FuncLit)
					if !ok {
						return
					}
					v, _ := info.Defs[id].(*types.Var)
					if v == nil {
						v, _ = info.Uses[id].(*types.Var)
					}
					if sig, ok := info.Types[lit].Type.(*types.Signature); ok && v != nil {
						lits[v] = sig
					}
				}
				switch n := n.(type) {
				case *ast.AssignStmt:
					if len(n.Lhs) == len(n.Rhs) {
						for i, l := range n.Lhs {
							if id, ok := l.(*ast.Ident); ok {
								bind(id, n.Rhs[i])
							}
						}
					}
				case *ast.ValueSpec:
					if len(n.Names) == len(n.Values) {
						for i, id := range n.Names {
							bind(id, n.Values[i])
						}
					}
				}
				return true
			})
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if fn, ok := info.Defs[n.Name].(*types.Func); ok {
						g.results[fn] = fn.Type().(*types.Signature).Results()
						if n.Body != nil {
							ast.Inspect(n.Body, func(m ast.Node) bool {
								if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == g.results[fn].Len() {
									for i, e := range r.Results {
										add(g.results[fn].At(i), e, "")
									}
								}
								_, lit := m.(*ast.FuncLit)
								return !lit
							})
						}
					}
				case *ast.FuncLit:
					sig, _ := info.Types[n].Type.(*types.Signature)
					if sig == nil {
						return true
					}
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == sig.Results().Len() {
							for i, e := range r.Results {
								add(sig.Results().At(i), e, "")
							}
						}
						_, lit := m.(*ast.FuncLit)
						return !lit
					})
				case *ast.CallExpr:
					if tv, ok := info.Types[n.Fun]; ok && tv.IsType() && len(n.Args) == 1 {
						// A function literal converted to a named function
						// type: its results belong to that type.
						flowNameFuncLit(g, info, n.Args[0], tv.Type)
						return true
					}
					var sig *types.Signature
					if fn := flowCallee(info, n.Fun); fn != nil {
						sig = fn.Type().(*types.Signature)
						if sig.Recv() != nil && types.IsInterface(sig.Recv().Type()) {
							ifaceMethods = append(ifaceMethods, fn)
						}
					} else if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok {
						if v, ok := info.Uses[id].(*types.Var); ok {
							sig = lits[v]
						}
					}
					if sig == nil {
						return true
					}
					for i, a := range n.Args {
						j := i
						if sig.Variadic() && j >= sig.Params().Len()-1 {
							j = sig.Params().Len() - 1
						}
						if j < sig.Params().Len() {
							add(sig.Params().At(j), a, "")
							flowNameFuncLit(g, info, a, sig.Params().At(j).Type())
						}
					}
				case *ast.CompositeLit:
					t := info.Types[n].Type
					if t == nil {
						return true
					}
					owner := flowTypeName(t)
					st, ok := t.Underlying().(*types.Struct)
					if !ok {
						return true
					}
					for i, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok {
								if v, ok := info.Uses[id].(*types.Var); ok {
									add(v, kv.Value, owner)
								}
							}
						} else if i < st.NumFields() {
							add(st.Field(i), e, owner)
						}
					}
				case *ast.AssignStmt:
					if len(n.Lhs) == len(n.Rhs) {
						for i, l := range n.Lhs {
							v, owner := flowLHS(info, l)
							add(v, n.Rhs[i], owner)
						}
					}
				case *ast.ValueSpec:
					if len(n.Names) == len(n.Values) {
						for i, id := range n.Names {
							if v, ok := info.Defs[id].(*types.Var); ok {
								add(v, n.Values[i], "")
							}
						}
					}
				}
				return true
			})
		}
	}
	// A call of an interface method reaches each implementation's method
	// of that name in the module.
	seen := map[*types.Func]bool{}
	for _, m := range ifaceMethods {
		if seen[m] {
			continue
		}
		seen[m] = true
		iface, _ := m.Type().(*types.Signature).Recv().Type().Underlying().(*types.Interface)
		if iface == nil {
			continue
		}
		for _, impl := range impls {
			if impl.Name() != m.Name() {
				continue
			}
			recv := impl.Type().(*types.Signature).Recv().Type()
			base := recv
			if ptr, ok := recv.(*types.Pointer); ok {
				base = ptr.Elem()
			}
			if !types.Implements(base, iface) && !types.Implements(types.NewPointer(base), iface) {
				continue
			}
			ip, mp := impl.Type().(*types.Signature).Params(), m.Type().(*types.Signature).Params()
			for i := 0; i < ip.Len() && i < mp.Len(); i++ {
				g.into[ip.At(i)] = append(g.into[ip.At(i)], flowEdge{Src: flowVarRef(mp.At(i))})
			}
		}
	}
	return g
}

// flowNameFuncLit records, when e is a function literal used as a value of
// the named function type t, that the literal's results are t's: a sink can
// then name them ("sigs.k8s.io/cluster-api/util/conditions.ComputeReasonFunc").
func flowNameFuncLit(g *flowGraph, info *types.Info, e ast.Expr, t types.Type) {
	lit, ok := ast.Unparen(e).(*ast.FuncLit)
	if !ok {
		return
	}
	name := flowTypeName(t)
	sig, _ := info.Types[lit].Type.(*types.Signature)
	if name == "" || sig == nil {
		return
	}
	for i := 0; i < sig.Results().Len(); i++ {
		g.owner[sig.Results().At(i)] = name
	}
}

// flowVarRef is a synthetic identifier standing for v, the source of an
// edge from an interface method's parameter to an implementation's.
type flowVarRefExpr struct {
	ast.Ident
	v *types.Var
}

func flowVarRef(v *types.Var) ast.Expr { return &flowVarRefExpr{v: v} }

// flowCallee is the function or method a call's Fun names, or nil (a
// conversion, a builtin, a function value).
func flowCallee(info *types.Info, fun ast.Expr) *types.Func {
	if fn := flowCalleeOf(info, fun); fn != nil {
		return fn.Origin()
	}
	return nil
}

func flowCalleeOf(info *types.Info, fun ast.Expr) *types.Func {
	switch f := ast.Unparen(fun).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr:
		return flowCalleeOf(info, f.X)
	case *ast.IndexListExpr:
		return flowCalleeOf(info, f.X)
	}
	return nil
}

// flowLHS is the variable an assignment's left side writes, with the
// struct type owning it when it is a field.
func flowLHS(info *types.Info, l ast.Expr) (*types.Var, string) {
	switch l := ast.Unparen(l).(type) {
	case *ast.Ident:
		if v, ok := info.Defs[l].(*types.Var); ok {
			return v, ""
		}
		v, _ := info.Uses[l].(*types.Var)
		return v, ""
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[l]; ok && sel.Kind() == types.FieldVal {
			v, _ := sel.Obj().(*types.Var)
			return v, flowTypeName(sel.Recv())
		}
		v, _ := info.Uses[l.Sel].(*types.Var)
		return v, ""
	}
	return nil, ""
}

// flowTypeName is "path.Name" of a (pointer to a) named type, else "".
func flowTypeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil {
		return n.Obj().Pkg().Path() + "." + n.Obj().Name()
	}
	return ""
}

// flowReaching returns every string constant that reaches a variable sink
// accepts.
func (g *flowGraph) flowReaching(sink flowSink) map[string]bool {
	values := map[string]bool{}
	done := map[*types.Var]bool{}
	var work []*types.Var
	mark := func(v *types.Var) {
		if v != nil {
			v = v.Origin()
		}
		if v != nil && !done[v] {
			done[v] = true
			work = append(work, v)
		}
	}
	for v := range g.into {
		if sink(v, g.owner[v]) {
			mark(v)
		}
	}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for _, e := range g.into[v] {
			g.source(e.Info, e.Src, values, mark)
		}
	}
	return values
}

// source records what src, an expression moved into a sink, carries: its
// value when it is a string constant, else the variables it reads, which
// become sinks themselves.
func (g *flowGraph) source(info *types.Info, src ast.Expr, values map[string]bool, mark func(*types.Var)) {
	if r, ok := src.(*flowVarRefExpr); ok {
		mark(r.v)
		return
	}
	src = ast.Unparen(src)
	if tv, ok := info.Types[src]; ok && tv.Value != nil {
		if tv.Value.Kind() == constant.String {
			values[constant.StringVal(tv.Value)] = true
		}
		return
	}
	switch e := src.(type) {
	case *ast.Ident:
		v, _ := info.Uses[e].(*types.Var)
		mark(v)
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[e]; ok {
			if sel.Kind() == types.FieldVal {
				v, _ := sel.Obj().(*types.Var)
				mark(v)
			}
			return
		}
		v, _ := info.Uses[e.Sel].(*types.Var)
		mark(v)
	case *ast.CallExpr:
		if tv, ok := info.Types[e.Fun]; ok && tv.IsType() && len(e.Args) == 1 {
			g.source(info, e.Args[0], values, mark)
			return
		}
		if fn := flowCallee(info, e.Fun); fn != nil {
			if res := fn.Type().(*types.Signature).Results(); res.Len() > 0 {
				mark(res.At(0))
			}
		}
	case *ast.StarExpr:
		g.source(info, e.X, values, mark)
	case *ast.UnaryExpr:
		g.source(info, e.X, values, mark)
	}
}
