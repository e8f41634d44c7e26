package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// MaxFileBytes caps the size of one module file; a bigger file makes the
// module unparsable.
const MaxFileBytes = 8 << 20

// maxModuleDepth caps how deep nested local modules are followed.
const maxModuleDepth = 16

// source reads a module tree. Paths are slash-separated and relative to the
// root module's directory ("." is the root, "../shared" a sibling).
type source interface {
	// list returns the regular files and the directories of dir.
	list(dir string) (files, dirs []string, err error)
	// read returns a regular file's content.
	read(p string) ([]byte, error)
	// display is how a finding names the file at p.
	display(p string) string
}

// dirSource reads a module directory on disk.
type dirSource struct{ base string }

func (s dirSource) host(p string) string { return filepath.Join(s.base, filepath.FromSlash(p)) }

func (s dirSource) list(dir string) (files, dirs []string, err error) {
	entries, err := os.ReadDir(s.host(dir))
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		fi, err := os.Stat(s.host(path.Join(dir, e.Name())))
		if err != nil {
			continue
		}
		switch {
		case fi.Mode().IsRegular():
			files = append(files, e.Name())
		case fi.IsDir():
			dirs = append(dirs, e.Name())
		}
	}
	return files, dirs, nil
}

func (s dirSource) read(p string) ([]byte, error) {
	f, err := os.Open(s.host(p))
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	return b, nil
}

func (s dirSource) display(p string) string {
	if p = path.Clean(p); p == "." {
		return s.base
	}
	return p
}

// isModuleFile reports whether name is a configuration file Terraform or
// OpenTofu loads.
func isModuleFile(name string) bool {
	for _, ext := range []string{".tf", ".tf.json", ".tofu", ".tofu.json"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return true
		}
	}
	return false
}

func isTofuFile(name string) bool {
	return strings.HasSuffix(name, ".tofu") || strings.HasSuffix(name, ".tofu.json")
}

// twinOf returns the .tf or .tf.json file a .tofu or .tofu.json file
// shadows for OpenTofu, and "" for other names.
func twinOf(name string) string {
	switch {
	case strings.HasSuffix(name, ".tofu.json"):
		return strings.TrimSuffix(name, ".tofu.json") + ".tf.json"
	case strings.HasSuffix(name, ".tofu"):
		return strings.TrimSuffix(name, ".tofu") + ".tf"
	}
	return ""
}

// ParseError is a module that cannot be read or parsed: exit code
// ExitUnparsable.
type ParseError struct {
	// Problems lists every problem, one line each, with file and position.
	Problems []string
}

func (e *ParseError) Error() string {
	if len(e.Problems) == 1 {
		return "the module cannot be parsed: " + e.Problems[0]
	}
	return "the module cannot be parsed:\n  " + strings.Join(e.Problems, "\n  ")
}

func (e *ParseError) addDiags(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			e.Problems = append(e.Problems, oneLine(d.Error()))
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// file is one parsed configuration file.
type file struct {
	// name is the display name; ranges in body carry it as their Filename.
	name string
	json bool
	src  []byte
	body hcl.Body
	// content is the file's top-level blocks.
	content *hcl.BodyContent
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "ephemeral", LabelNames: []string{"type", "name"}},
	{Type: "module", LabelNames: []string{"name"}},
	{Type: "provider", LabelNames: []string{"name"}},
	{Type: "locals"},
}}

// parseFile parses one file's bytes, in JSON syntax when name ends in
// .json, and reads its top-level blocks. It is the parser front end: any
// bytes give diagnostics, never a panic.
func parseFile(name string, src []byte) (*file, hcl.Diagnostics) {
	f := &file{name: name, src: src, json: strings.HasSuffix(name, ".json")}
	var hf *hcl.File
	var diags hcl.Diagnostics
	if f.json {
		hf, diags = hcljson.Parse(src, name)
	} else {
		hf, diags = hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	f.body = hf.Body
	content, _, cdiags := hf.Body.PartialContent(fileSchema)
	if cdiags.HasErrors() {
		return nil, append(diags, cdiags...)
	}
	f.content = content
	return f, diags
}

// module is one loaded module: the root or a nested local module.
type module struct {
	// dir is the module's directory in the source ("." for the root).
	dir string
	// files are the files OpenTofu (or, without .tofu files, Terraform)
	// loads, sorted by name.
	files []*file
	// shadows pairs each .tofu file with the .tf twin it shadows.
	shadows []shadow
	tofu    bool

	variables         []*variable
	outputs           []*output
	resources         []*resource
	calls             []*call
	providers         []hcl.Range
	backends          []hcl.Range
	clouds            []hcl.Range
	requiredVersions  []requiredVersion
	requiredProviders map[string]string
	// locals maps each local value's name to its expression.
	locals map[string]hcl.Expression
	// refs holds the var.NAME names referenced anywhere but in the
	// arguments of a module call and in variable blocks.
	refs map[string]bool
}

type shadow struct{ tofu, tf *file }

type variable struct {
	name      string
	rng       hcl.Range
	typeExpr  hcl.Expression
	def       *hcl.Attribute
	sensitive hcl.Expression
	nullable  hcl.Expression
	// conditions are the conditions of the variable's validation blocks.
	conditions []hcl.Expression
}

type output struct {
	name  string
	rng   hcl.Range
	value hcl.Expression
	file  *file
}

type resource struct {
	mode, typ, name string
	rng             hcl.Range
	// providerName is the provider's local name.
	providerName string
	// ignoreAll is lifecycle { ignore_changes = all }; ignored holds the
	// full attribute path of each ignore_changes entry, index steps
	// included (scaling_config[0].desired_size).
	ignoreAll bool
	ignored   []attrPath
	// body is the resource block's body, forEach its for_each
	// expression (nil without one).
	body    hcl.Body
	forEach hcl.Expression
}

type call struct {
	name   string
	rng    hcl.Range
	source string
	// args are the called module's variables; forEach is the call's
	// for_each expression (nil without one).
	args    map[string]hcl.Expression
	forEach hcl.Expression
	// child is the loaded module of a local source, nil otherwise.
	child *module
}

type requiredVersion struct {
	constraint string
	rng        hcl.Range
}

// loader loads a root module and its nested local modules.
type loader struct {
	src     source
	err     ParseError
	visited map[string]*module
	all     []*module
}

// loadModule loads the root module of src and every nested local module it
// calls. A module that cannot be read or parsed is a *ParseError.
func loadModule(src source) (*module, []*module, error) {
	l := &loader{src: src, visited: map[string]*module{}}
	root := l.load(".", 0)
	if len(l.err.Problems) > 0 {
		return nil, nil, &l.err
	}
	return root, l.all, nil
}

func (l *loader) load(dir string, depth int) *module {
	if m, ok := l.visited[dir]; ok {
		return m
	}
	m := &module{dir: dir, requiredProviders: map[string]string{}, locals: map[string]hcl.Expression{}, refs: map[string]bool{}}
	l.visited[dir] = m
	l.all = append(l.all, m)
	names, _, err := l.src.list(dir)
	if err != nil {
		l.err.Problems = append(l.err.Problems, fmt.Sprintf("%s: %s", l.src.display(dir), errText(err)))
		return m
	}
	sort.Strings(names)
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	parsed := map[string]*file{}
	for _, n := range names {
		if !isModuleFile(n) {
			continue
		}
		p := path.Join(dir, n)
		b, err := l.src.read(p)
		if err != nil {
			l.err.Problems = append(l.err.Problems, fmt.Sprintf("%s: %s", l.src.display(p), errText(err)))
			continue
		}
		f, diags := parseFile(l.src.display(p), b)
		if diags.HasErrors() {
			l.err.addDiags(diags)
			continue
		}
		parsed[n] = f
	}
	for _, n := range names {
		f := parsed[n]
		if f == nil {
			continue
		}
		if isTofuFile(n) {
			m.tofu = true
			if tw := parsed[twinOf(n)]; tw != nil {
				m.shadows = append(m.shadows, shadow{tofu: f, tf: tw})
			}
		} else if present[strings.TrimSuffix(strings.TrimSuffix(n, ".json"), ".tf")+tofuExt(n)] {
			continue // shadowed for OpenTofu
		}
		m.files = append(m.files, f)
	}
	for _, f := range m.files {
		l.readFile(m, f)
	}
	for _, c := range m.calls {
		if !isLocalSource(c.source) {
			continue
		}
		if depth >= maxModuleDepth {
			l.err.Problems = append(l.err.Problems, fmt.Sprintf("%s: module %q: local modules nest deeper than %d levels", rangeText(c.rng), c.name, maxModuleDepth))
			continue
		}
		child := path.Join(dir, c.source)
		if _, ok := l.visited[child]; !ok {
			if _, _, err := l.src.list(child); err != nil {
				l.err.Problems = append(l.err.Problems, fmt.Sprintf("%s: module %q: local source %q cannot be read: %s", rangeText(c.rng), c.name, c.source, errText(err)))
				continue
			}
		}
		c.child = l.load(child, depth+1)
	}
	return m
}

func tofuExt(name string) string {
	if strings.HasSuffix(name, ".json") {
		return ".tofu.json"
	}
	return ".tofu"
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func rangeText(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}

// isLocalSource reports whether a module source is a local path, which
// init never fetches.
func isLocalSource(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

var (
	terraformSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "required_version"}},
		Blocks: []hcl.BlockHeaderSchema{
			{Type: "backend", LabelNames: []string{"type"}},
			{Type: "cloud"},
			{Type: "required_providers"},
		},
	}
	variableSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "sensitive"}, {Name: "nullable"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
	}
	validationSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "condition"}}}
	outputSchema     = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "value"}}}
	resourceSchema   = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "provider"}, {Name: "for_each"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "lifecycle"}},
	}
	lifecycleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "ignore_changes"}}}
	moduleSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "source"}}}
)

// moduleMetaArguments are the arguments of a module block that are not
// the called module's variables.
var moduleMetaArguments = []string{"source", "version", "providers", "count", "for_each", "depends_on"}

// readFile records the declarations of one file in m. Problems inside a
// block that Terraform would reject are parse problems.
func (l *loader) readFile(m *module, f *file) {
	for _, b := range f.content.Blocks {
		switch b.Type {
		case "terraform":
			l.readTerraform(m, b)
		case "variable":
			c, _, diags := b.Body.PartialContent(variableSchema)
			l.err.addDiags(diags)
			v := &variable{name: b.Labels[0], rng: b.DefRange, def: c.Attributes["default"]}
			if a := c.Attributes["type"]; a != nil {
				v.typeExpr = a.Expr
			}
			if a := c.Attributes["sensitive"]; a != nil {
				v.sensitive = a.Expr
			}
			if a := c.Attributes["nullable"]; a != nil {
				v.nullable = a.Expr
			}
			for _, vb := range c.Blocks {
				vc, _, _ := vb.Body.PartialContent(validationSchema)
				if a := vc.Attributes["condition"]; a != nil {
					v.conditions = append(v.conditions, a.Expr)
				}
			}
			m.variables = append(m.variables, v)
		case "output":
			c, _, diags := b.Body.PartialContent(outputSchema)
			l.err.addDiags(diags)
			o := &output{name: b.Labels[0], rng: b.DefRange, file: f}
			if a := c.Attributes["value"]; a != nil {
				o.value = a.Expr
			}
			m.outputs = append(m.outputs, o)
		case "resource", "data", "ephemeral":
			m.resources = append(m.resources, l.readResource(b))
		case "locals":
			// A block inside locals is invalid; the attributes are still
			// returned.
			attrs, _ := b.Body.JustAttributes()
			for n, a := range attrs {
				m.locals[n] = a.Expr
			}
		case "module":
			c, remain, diags := b.Body.PartialContent(moduleSchema)
			l.err.addDiags(diags)
			mc := &call{name: b.Labels[0], rng: b.DefRange, args: map[string]hcl.Expression{}}
			if a := c.Attributes["source"]; a != nil {
				if v, d := a.Expr.Value(nil); !d.HasErrors() && v.Type().FriendlyName() == "string" && v.IsKnown() && !v.IsNull() {
					mc.source = v.AsString()
				}
			}
			// Blocks in a module call (none are valid but lifecycle-like
			// typos) only make JustAttributes complain; the attributes
			// are still returned.
			attrs, _ := remain.JustAttributes()
			for n, a := range attrs {
				if !slices.Contains(moduleMetaArguments, n) {
					mc.args[n] = a.Expr
				}
			}
			if a := attrs["for_each"]; a != nil {
				mc.forEach = a.Expr
			}
			m.calls = append(m.calls, mc)
		case "provider":
			m.providers = append(m.providers, b.DefRange)
		}
	}
	l.collectRefs(m, f)
}

func (l *loader) readTerraform(m *module, b *hcl.Block) {
	c, _, diags := b.Body.PartialContent(terraformSchema)
	l.err.addDiags(diags)
	if a := c.Attributes["required_version"]; a != nil {
		rv := requiredVersion{rng: a.Range}
		if v, d := a.Expr.Value(nil); !d.HasErrors() && v.Type().FriendlyName() == "string" && v.IsKnown() && !v.IsNull() {
			rv.constraint = v.AsString()
		}
		m.requiredVersions = append(m.requiredVersions, rv)
	}
	for _, nb := range c.Blocks {
		switch nb.Type {
		case "backend":
			m.backends = append(m.backends, nb.DefRange)
		case "cloud":
			m.clouds = append(m.clouds, nb.DefRange)
		case "required_providers":
			attrs, _ := nb.Body.JustAttributes()
			for name, a := range attrs {
				v, d := a.Expr.Value(nil)
				if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
					continue
				}
				switch {
				case v.Type().IsObjectType() && v.Type().HasAttribute("source"):
					if s := v.GetAttr("source"); !s.IsNull() && s.Type().FriendlyName() == "string" {
						m.requiredProviders[name] = s.AsString()
					}
				case v.Type().IsObjectType() || v.Type().IsMapType():
					m.requiredProviders[name] = ""
				default:
					// The pre-0.13 form, a version string: the source is
					// the default one.
					m.requiredProviders[name] = ""
				}
			}
		}
	}
}

func (l *loader) readResource(b *hcl.Block) *resource {
	r := &resource{mode: b.Type, typ: b.Labels[0], name: b.Labels[1], rng: b.DefRange, body: b.Body}
	r.providerName, _, _ = strings.Cut(r.typ, "_")
	c, _, _ := b.Body.PartialContent(resourceSchema)
	if a := c.Attributes["provider"]; a != nil {
		if t, d := hcl.AbsTraversalForExpr(a.Expr); !d.HasErrors() && len(t) > 0 {
			r.providerName = t.RootName()
		}
	}
	if a := c.Attributes["for_each"]; a != nil {
		r.forEach = a.Expr
	}
	for _, lb := range c.Blocks {
		lc, _, _ := lb.Body.PartialContent(lifecycleSchema)
		a := lc.Attributes["ignore_changes"]
		if a == nil {
			continue
		}
		if hcl.ExprAsKeyword(a.Expr) == "all" {
			r.ignoreAll = true
			continue
		}
		items, d := hcl.ExprList(a.Expr)
		if d.HasErrors() {
			continue
		}
		for _, it := range items {
			if hcl.ExprAsKeyword(it) == "all" {
				r.ignoreAll = true
				continue
			}
			t, d := hcl.RelTraversalForExpr(it)
			if d.HasErrors() || len(t) == 0 {
				continue
			}
			if p := ignorePath(t); len(p) > 0 {
				r.ignored = append(r.ignored, p)
			}
		}
	}
	return r
}

// collectRefs records the input variables the file references outside
// the arguments of module calls and outside variable blocks. A variable
// block can reference variables only in its validations (condition and
// error_message), and a validation accepts or refuses a value without
// using it.
func (l *loader) collectRefs(m *module, f *file) {
	if f.json {
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(f.src))
		if dec.Decode(&doc) != nil {
			return
		}
		for k, v := range doc {
			if k == "module" || k == "variable" {
				continue
			}
			jsonRefs(v, m.refs)
		}
		return
	}
	body, ok := f.body.(*hclsyntax.Body)
	if !ok {
		return
	}
	for _, a := range body.Attributes {
		addVarRefs(a.Expr.Variables(), m.refs)
	}
	for _, b := range body.Blocks {
		if b.Type == "module" || b.Type == "variable" {
			continue
		}
		_ = hclsyntax.VisitAll(b, func(n hclsyntax.Node) hcl.Diagnostics {
			if e, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
				addVarRefs([]hcl.Traversal{e.Traversal}, m.refs)
			}
			return nil
		})
	}
}

func addVarRefs(ts []hcl.Traversal, into map[string]bool) {
	for _, t := range ts {
		if len(t) < 2 || t.RootName() != "var" {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok {
			into[a.Name] = true
		}
	}
}

// jsonRefs walks a decoded JSON value and records the variables that the
// templates in its strings reference.
func jsonRefs(v any, into map[string]bool) {
	switch t := v.(type) {
	case string:
		if !strings.Contains(t, "${") && !strings.Contains(t, "%{") {
			return
		}
		expr, diags := hclsyntax.ParseTemplate([]byte(t), "", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		addVarRefs(expr.Variables(), into)
	case []any:
		for _, e := range t {
			jsonRefs(e, into)
		}
	case map[string]any:
		for _, e := range t {
			jsonRefs(e, into)
		}
	}
}
