package main

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// apiPackage is what docsgen reads from an API package.
type apiPackage struct {
	Group   string
	Version string
	// Types maps every named type of the package to its description.
	Types map[string]*typeInfo
}

// typeInfo is one named type.
type typeInfo struct {
	Name    string
	Doc     string
	Markers []marker
	// Struct is set for struct types; Underlying for the others.
	Struct     bool
	Underlying string
	Fields     []*fieldInfo
	// Values are the package's constants of this type, in source order.
	Values []constValue
}

// fieldInfo is one struct field as written in the source.
type fieldInfo struct {
	GoName   string
	JSONName string
	Inline   bool
	Embedded bool
	// Type is the field's type, rendered for a reader.
	Type typeRef
	Doc  string
	// Markers are the field's own markers.
	Markers []marker
	// OmitEmpty is true when the JSON tag has omitempty or omitzero.
	OmitEmpty bool
}

// typeRef is a field type: how to show it, and the local or external named
// type it refers to once pointers, slices and map values are stripped.
type typeRef struct {
	// Prefix is "[]", "map[string]" and the like, in order.
	Prefix string
	// Local is the name of a type of this package, if the element is one.
	Local string
	// External is "import/path.Name" for a type of another package.
	ExternalPath string
	ExternalName string
	// Builtin is a predeclared type name such as string or int32.
	Builtin string
}

type constValue struct {
	Name  string
	Value string
	Doc   string
}

// loadPackage parses every non-test Go file of dir (generated deepcopy files
// included: they declare no types).
func loadPackage(dir string) (*apiPackage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading API package %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, n), err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in API package %s", dir)
	}
	// go/doc sorts files by name itself; keep our own order stable too.
	sort.Slice(files, func(i, j int) bool {
		return fset.Position(files[i].Pos()).Filename < fset.Position(files[j].Pos()).Filename
	})
	dp, err := doc.NewFromFiles(fset, files, "api", doc.AllDecls|doc.PreserveAST)
	if err != nil {
		return nil, fmt.Errorf("reading docs of %s: %w", dir, err)
	}

	pkg := &apiPackage{Version: dp.Name, Types: map[string]*typeInfo{}}
	_, pkgMarkers, err := splitComment(strings.Split(dp.Doc, "\n"))
	if err != nil {
		return nil, fmt.Errorf("package comment of %s: %w", dir, err)
	}
	for _, m := range pkgMarkers {
		if m.Name == "groupName" {
			pkg.Group = m.Value
		}
	}
	if pkg.Group == "" {
		return nil, fmt.Errorf("package %s has no +groupName marker in its package comment", dir)
	}

	// Where each type is declared, so its file's imports and the marker
	// comments above its declaration can be read.
	type site struct {
		file *ast.File
		decl *ast.GenDecl
		spec *ast.TypeSpec
	}
	sites := map[string]site{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				sites[ts.Name.Name] = site{file: f, decl: g, spec: ts}
			}
		}
	}

	for _, dt := range dp.Types {
		st, ok := sites[dt.Name]
		if !ok {
			return nil, fmt.Errorf("type %s: declaration not found", dt.Name)
		}
		// Only exported data types can be part of the API's schema; an
		// interface or function type is Go plumbing.
		switch st.spec.Type.(type) {
		case *ast.InterfaceType, *ast.FuncType, *ast.ChanType:
			continue
		}
		if !token.IsExported(dt.Name) {
			continue
		}
		prose, markers, err := splitComment(strings.Split(dt.Doc, "\n"))
		if err != nil {
			return nil, fmt.Errorf("type %s: %w", dt.Name, err)
		}
		above, err := floatingMarkers(fset, st.file, st.decl)
		if err != nil {
			return nil, fmt.Errorf("type %s: %w", dt.Name, err)
		}
		t := &typeInfo{Name: dt.Name, Doc: prose, Markers: append(above, markers...)}
		imports := importsOf(st.file)
		switch x := st.spec.Type.(type) {
		case *ast.StructType:
			t.Struct = true
			for _, f := range x.Fields.List {
				fi, err := readField(f, imports)
				if err != nil {
					return nil, fmt.Errorf("type %s: %w", dt.Name, err)
				}
				t.Fields = append(t.Fields, fi...)
			}
		default:
			ref, err := readType(st.spec.Type, imports)
			if err != nil {
				return nil, fmt.Errorf("type %s: %w", dt.Name, err)
			}
			t.Underlying = ref.Prefix + ref.Builtin + ref.Local + ref.ExternalName
		}
		pkg.Types[t.Name] = t
	}

	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok {
					continue
				}
				t, ok := pkg.Types[id.Name]
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						return nil, fmt.Errorf("constant %s: no value", n.Name)
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, fmt.Errorf("constant %s: %w", n.Name, err)
					}
					var docText string
					if vs.Doc != nil {
						docText, _, _ = splitComment(strings.Split(vs.Doc.Text(), "\n"))
					}
					t.Values = append(t.Values, constValue{Name: n.Name, Value: v, Doc: docText})
				}
			}
		}
	}
	return pkg, nil
}

// floatingMarkers returns the markers of the comment groups that sit between
// the previous declaration and decl's own doc comment, the place kubebuilder
// expects type-level markers such as +kubebuilder:object:root.
func floatingMarkers(fset *token.FileSet, f *ast.File, decl *ast.GenDecl) ([]marker, error) {
	start := decl.Pos()
	if decl.Doc != nil {
		start = decl.Doc.Pos()
	}
	after := f.Name.End()
	for _, d := range f.Decls {
		if d.End() < start && d.End() > after {
			after = d.End()
		}
	}
	var out []marker
	for _, cg := range f.Comments {
		if cg.Pos() <= after || cg.End() >= start || cg == decl.Doc {
			continue
		}
		var lines []string
		for _, l := range strings.Split(cg.Text(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "+") {
				lines = append(lines, l)
			}
		}
		_, ms, err := splitComment(lines)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fset.Position(cg.Pos()), err)
		}
		out = append(out, ms...)
	}
	return out, nil
}

func importsOf(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := path.Base(p)
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = p
	}
	return m
}

func readField(f *ast.Field, imports map[string]string) ([]*fieldInfo, error) {
	ref, err := readType(f.Type, imports)
	if err != nil {
		return nil, err
	}
	var tag reflect.StructTag
	if f.Tag != nil {
		s, err := strconv.Unquote(f.Tag.Value)
		if err != nil {
			return nil, fmt.Errorf("bad struct tag %s: %w", f.Tag.Value, err)
		}
		tag = reflect.StructTag(s)
	}
	var prose string
	var markers []marker
	if f.Doc != nil {
		prose, markers, err = splitComment(strings.Split(f.Doc.Text(), "\n"))
		if err != nil {
			return nil, err
		}
	}
	jsonTag, hasJSON := tag.Lookup("json")
	jsonName, opts, _ := strings.Cut(jsonTag, ",")
	if jsonName == "-" {
		return nil, nil
	}
	names := f.Names
	embedded := len(names) == 0
	if embedded {
		name := ref.Local + ref.ExternalName
		names = []*ast.Ident{ast.NewIdent(name)}
	}
	var out []*fieldInfo
	for _, n := range names {
		fi := &fieldInfo{
			GoName:   n.Name,
			JSONName: jsonName,
			Embedded: embedded,
			Type:     ref,
			Doc:      prose,
			Markers:  markers,
		}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "inline":
				fi.Inline = true
			case "omitempty", "omitzero":
				fi.OmitEmpty = true
			}
		}
		if !hasJSON && !embedded {
			return nil, fmt.Errorf("field %s has no json tag", n.Name)
		}
		if embedded && !fi.Inline && jsonName == "" {
			fi.Inline = true // encoding/json inlines an untagged embedded struct
		}
		if !fi.Inline && fi.JSONName == "" {
			return nil, fmt.Errorf("field %s has an empty json name", n.Name)
		}
		out = append(out, fi)
	}
	return out, nil
}

func readType(e ast.Expr, imports map[string]string) (typeRef, error) {
	var r typeRef
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
			continue
		case *ast.ArrayType:
			r.Prefix += "[]"
			e = x.Elt
			continue
		case *ast.MapType:
			k, err := readType(x.Key, imports)
			if err != nil {
				return r, err
			}
			r.Prefix += "map[" + k.Prefix + k.Builtin + k.Local + k.ExternalName + "]"
			e = x.Value
			continue
		case *ast.Ident:
			if isBuiltin(x.Name) {
				r.Builtin = x.Name
			} else {
				r.Local = x.Name
			}
			return r, nil
		case *ast.SelectorExpr:
			pkgIdent, ok := x.X.(*ast.Ident)
			if !ok {
				return r, fmt.Errorf("unsupported type expression %T", x.X)
			}
			p, ok := imports[pkgIdent.Name]
			if !ok {
				return r, fmt.Errorf("type %s.%s: package %s not imported", pkgIdent.Name, x.Sel.Name, pkgIdent.Name)
			}
			r.ExternalPath, r.ExternalName = p, x.Sel.Name
			return r, nil
		default:
			return r, fmt.Errorf("unsupported type expression %T", e)
		}
	}
}

func isBuiltin(name string) bool {
	switch name {
	case "string", "bool", "byte", "rune", "int", "int8", "int16", "int32", "int64",
		"uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "any":
		return true
	}
	return false
}
