package lint

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// This file holds pool/autoscaling-ignore-changes: which resource
// attributes take their value from var.replicas, and whether an
// ignore_changes entry covers one of them (reference: tfcapi-lint CLI,
// "Module checks").

// stepKind is the kind of one step of an attribute path.
type stepKind uint8

const (
	// stepName is an attribute, a nested block type or a string key.
	stepName stepKind = iota
	// stepIndex is a number index.
	stepIndex
	// stepAnyIndex is the index of a dynamic block's content: any.
	stepAnyIndex
)

// pathStep is one step of an attribute path.
type pathStep struct {
	kind  stepKind
	name  string
	index int64
	// optional marks the index of a nested block: an ignore path may
	// leave it out, as for a block that is not a list.
	optional bool
	// mayBeBlock marks a name whose value is written as an object, which
	// may be a nested block (JSON syntax, or a block in attribute syntax):
	// an ignore path may index it.
	mayBeBlock bool
}

// attrPath is the path of a value inside a resource:
// scaling_config[0].desired_size is name, index, name.
type attrPath []pathStep

func (p attrPath) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s.kind {
		case stepName:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		case stepIndex:
			fmt.Fprintf(&b, "[%d]", s.index)
		case stepAnyIndex:
			b.WriteString("[0]")
		}
	}
	return b.String()
}

func (p attrPath) with(s pathStep) attrPath {
	return append(slices.Clip(p), s)
}

// ignorePath converts an ignore_changes entry to an attribute path. A step
// that is neither a name nor a whole number ends the path there, so the
// entry covers at least what it names.
func ignorePath(t hcl.Traversal) attrPath {
	var p attrPath
	for _, s := range t {
		switch s := s.(type) {
		case hcl.TraverseAttr:
			p = append(p, pathStep{kind: stepName, name: s.Name})
		case hcl.TraverseIndex:
			k := s.Key
			if !k.IsKnown() || k.IsNull() {
				return p
			}
			switch k.Type() {
			case cty.String:
				p = append(p, pathStep{kind: stepName, name: k.AsString()})
			case cty.Number:
				bf := k.AsBigFloat()
				i, acc := bf.Int64()
				if !bf.IsInt() || acc != big.Exact {
					return p
				}
				p = append(p, pathStep{kind: stepIndex, index: i})
			default:
				return p
			}
		default:
			return p
		}
	}
	return p
}

// covers reports whether the ignore_changes path ig covers the attribute
// path at: ig names at or one of its parents (scaling_config covers
// scaling_config[0].desired_size). A nested block's index may be left out,
// a value written as an object may be indexed [0] as the one block it may
// be, a dynamic block's content matches any index, and a path that goes
// deeper than at's value can be followed is taken to cover it.
func covers(ig, at attrPath) bool {
	return coversFrom(ig, at, 0, 0)
}

func coversFrom(ig, at attrPath, i, j int) bool {
	if i == len(ig) || j == len(at) {
		return true
	}
	g, a := ig[i], at[j]
	if stepsMatch(g, a) {
		if coversFrom(ig, at, i+1, j+1) {
			return true
		}
		if a.mayBeBlock && i+1 < len(ig) && ig[i+1].kind == stepIndex && ig[i+1].index == 0 && coversFrom(ig, at, i+2, j+1) {
			return true
		}
	}
	return a.optional && g.kind != stepIndex && coversFrom(ig, at, i, j+1)
}

func stepsMatch(g, a pathStep) bool {
	switch g.kind {
	case stepName:
		return a.kind == stepName && a.name == g.name
	case stepIndex:
		return a.kind == stepAnyIndex || (a.kind == stepIndex && a.index == g.index)
	}
	return false
}

// taint says which capacity inputs a value derives from.
type taint uint8

const (
	taintReplicas taint = 1 << iota
	taintAutoscaling
)

// flow follows var.replicas and var.autoscaling from the root module
// through locals, the arguments of nested local modules and their outputs.
type flow struct {
	taint map[*module]map[string]taint
	// unresolved is set when var.replicas reaches the argument of a
	// module tfcapi-lint cannot read (not a local source).
	unresolved bool
}

// edge says that key of module to takes the taint of the keys refs of
// module from; an edge to a module that is not local has no to.
type edge struct {
	from *module
	refs []string
	to   *module
	key  string
}

// newFlow computes, for every module, the taint of its variables, locals
// and nested module calls ("var.x", "local.x", "module.x"). The edges are
// read once; taints only grow, so the fixed point is reached.
func newFlow(root *module, all []*module) *flow {
	f := &flow{taint: map[*module]map[string]taint{}}
	f.set(root, "var."+contract.InputReplicas, taintReplicas)
	f.set(root, "var."+contract.InputAutoscaling, taintAutoscaling)
	var edges []edge
	for _, m := range all {
		for n, e := range m.locals {
			edges = append(edges, edge{from: m, refs: refKeys(e, nil), to: m, key: "local." + n})
		}
		for _, c := range m.calls {
			each := "each:" + c.name // not a name HCL can write
			edges = append(edges, edge{from: m, refs: refKeys(c.forEach, nil), to: m, key: each})
			for arg, e := range c.args {
				edges = append(edges, edge{from: m, refs: refKeys(e, map[string]string{"each": each}), to: c.child, key: "var." + arg})
			}
			if c.child == nil {
				continue
			}
			for _, o := range c.child.outputs {
				edges = append(edges, edge{from: c.child, refs: refKeys(o.value, nil), to: m, key: "module." + c.name})
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			var t taint
			for _, r := range e.refs {
				t |= f.taint[e.from][r]
			}
			if e.to == nil {
				f.unresolved = f.unresolved || t&taintReplicas != 0
				continue
			}
			changed = f.set(e.to, e.key, t) || changed
		}
	}
	return f
}

// refKeys lists the keys an expression's references name: var.x, local.x
// and module.x, and for the other roots the key scope maps them to.
func refKeys(expr hcl.Expression, scope map[string]string) []string {
	if expr == nil {
		return nil
	}
	var out []string
	for _, tr := range expr.Variables() {
		if k := refKey(tr); k != "" {
			out = append(out, k)
		} else if k, ok := scope[tr.RootName()]; ok {
			out = append(out, k)
		}
	}
	return out
}

// refKey is the key of a reference to a variable, a local or a module
// call, and "" for other references.
func refKey(tr hcl.Traversal) string {
	switch root := tr.RootName(); root {
	case "var", "local", "module":
		if len(tr) >= 2 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				return root + "." + a.Name
			}
		}
	}
	return ""
}

// set adds t to the taint of key in m and reports whether it grew.
func (f *flow) set(m *module, key string, t taint) bool {
	if t == 0 {
		return false
	}
	tm := f.taint[m]
	if tm == nil {
		tm = map[string]taint{}
		f.taint[m] = tm
	}
	if tm[key]|t == tm[key] {
		return false
	}
	tm[key] |= t
	return true
}

// of is the taint of an expression of m; scope holds the taint of the
// iteration symbols in reach (each, a dynamic block's iterator).
func (f *flow) of(m *module, expr hcl.Expression, scope map[string]taint) taint {
	if expr == nil {
		return 0
	}
	var t taint
	tm := f.taint[m]
	for _, tr := range expr.Variables() {
		if k := refKey(tr); k != "" {
			t |= tm[k]
		} else {
			t |= scope[tr.RootName()]
		}
	}
	return t
}

// capacityAttr is a resource attribute whose value derives from a
// capacity input.
type capacityAttr struct {
	m     *module
	res   *resource
	path  attrPath
	taint taint
	// expr is the attribute's value expression (for an object key that is
	// not a constant, the whole object's).
	expr hcl.Expression
}

// attrs lists the attribute paths of the managed resources of every module
// whose value derives from var.replicas.
func (f *flow) attrs(all []*module) []capacityAttr {
	var out []capacityAttr
	for _, m := range all {
		for _, r := range m.resources {
			if r.mode != "resource" {
				continue
			}
			w := attrWalker{f: f, m: m, emit: func(p attrPath, t taint, e hcl.Expression) {
				if t&taintReplicas != 0 {
					out = append(out, capacityAttr{m: m, res: r, path: p, taint: t, expr: e})
				}
			}}
			scope := map[string]taint{"each": f.of(m, r.forEach, nil)}
			if body, ok := r.body.(*hclsyntax.Body); ok {
				w.body(body, nil, scope, true)
			} else {
				w.jsonBody(r.body, scope)
			}
		}
	}
	return out
}

// resourceMeta are the arguments and blocks of a resource that are not
// its attributes.
var resourceMeta = []string{"count", "for_each", "provider", "depends_on", "lifecycle", "provisioner", "connection"}

type attrWalker struct {
	f    *flow
	m    *module
	emit func(attrPath, taint, hcl.Expression)
}

// body walks a native syntax body: attributes by name, the k-th nested
// block of a type as TYPE[k], a dynamic block's content as LABEL[any].
func (w attrWalker) body(b *hclsyntax.Body, prefix attrPath, scope map[string]taint, top bool) {
	for name, a := range b.Attributes {
		if top && slices.Contains(resourceMeta, name) {
			continue
		}
		w.expr(a.Expr, prefix.with(pathStep{kind: stepName, name: name}), scope)
	}
	seen := map[string]int64{}
	for _, nb := range b.Blocks {
		if top && slices.Contains(resourceMeta, nb.Type) {
			continue
		}
		if nb.Type == "dynamic" && len(nb.Labels) == 1 {
			w.dynamic(nb, prefix, scope)
			continue
		}
		p := prefix.with(pathStep{kind: stepName, name: nb.Type}).with(pathStep{kind: stepIndex, index: seen[nb.Type], optional: true})
		seen[nb.Type]++
		w.body(nb.Body, p, scope, false)
	}
}

// dynamic walks a dynamic block's content. Its iterator derives from what
// its for_each does.
func (w attrWalker) dynamic(b *hclsyntax.Block, prefix attrPath, scope map[string]taint) {
	label := b.Labels[0]
	iterator := label
	if a := b.Body.Attributes["iterator"]; a != nil {
		if k := hcl.ExprAsKeyword(a.Expr); k != "" {
			iterator = k
		}
	}
	inner := map[string]taint{}
	for k, v := range scope {
		inner[k] = v
	}
	if a := b.Body.Attributes["for_each"]; a != nil {
		inner[iterator] = w.f.of(w.m, a.Expr, scope)
	}
	p := prefix.with(pathStep{kind: stepName, name: label}).with(pathStep{kind: stepAnyIndex, optional: true})
	for _, cb := range b.Body.Blocks {
		if cb.Type == "content" {
			w.body(cb.Body, p, inner, false)
		}
	}
}

// jsonBody walks a JSON syntax resource body. JSON does not tell a nested
// block from an object attribute, so both are followed as values.
func (w attrWalker) jsonBody(b hcl.Body, scope map[string]taint) {
	attrs, _ := b.JustAttributes()
	for name, a := range attrs {
		if slices.Contains(resourceMeta, name) || name == "//" {
			continue
		}
		p := attrPath{{kind: stepName, name: name}}
		if name != "dynamic" {
			w.expr(a.Expr, p, scope)
			continue
		}
		// "dynamic": {"LABEL": {"for_each": ..., "content": {...}}}
		labels, d := hcl.ExprMap(a.Expr)
		if d.HasErrors() {
			w.expr(a.Expr, p, scope)
			continue
		}
		for _, kv := range labels {
			label, ok := objectKey(kv.Key)
			if !ok {
				continue
			}
			items, d := hcl.ExprMap(kv.Value)
			if d.HasErrors() {
				continue
			}
			for _, it := range items {
				if k, ok := objectKey(it.Key); ok && k == "content" {
					lp := attrPath{{kind: stepName, name: label}, {kind: stepAnyIndex, optional: true}}
					w.expr(it.Value, lp, scope)
				}
			}
		}
	}
}

// expr follows object and tuple constructors (JSON objects and arrays)
// down to the values that derive from a capacity input. The name of a
// value written as an object may be indexed: it may be a block.
func (w attrWalker) expr(e hcl.Expression, p attrPath, scope map[string]taint) {
	t := w.f.of(w.m, e, scope)
	if t == 0 {
		return
	}
	if items, d := hcl.ExprMap(e); !d.HasErrors() {
		if n := len(p); n > 0 && p[n-1].kind == stepName {
			p = slices.Clone(p)
			p[n-1].mayBeBlock = true
		}
		for _, kv := range items {
			k, ok := objectKey(kv.Key)
			if !ok {
				w.emit(p, t, e)
				continue
			}
			w.expr(kv.Value, p.with(pathStep{kind: stepName, name: k}), scope)
		}
		return
	}
	if elems, d := hcl.ExprList(e); !d.HasErrors() {
		for i, el := range elems {
			w.expr(el, p.with(pathStep{kind: stepIndex, index: int64(i)}), scope)
		}
		return
	}
	w.emit(p, t, e)
}

// autoscalingEval evaluates root module expressions as they are while the
// pool autoscales: var.autoscaling.enabled is true, everything else
// unknown but for the locals that follow from it.
type autoscalingEval struct {
	vars   map[string]cty.Value
	locals map[string]cty.Value
}

// maxLocalRounds caps the rounds of local evaluation: a local that needs
// more stays unknown.
const maxLocalRounds = 4

func newAutoscalingEval(root *module) *autoscalingEval {
	e := &autoscalingEval{vars: map[string]cty.Value{}, locals: map[string]cty.Value{}}
	for _, v := range root.variables {
		e.vars[v.name] = cty.DynamicVal
	}
	e.vars[contract.InputReplicas] = cty.UnknownVal(cty.Number)
	e.vars[contract.InputAutoscaling] = cty.ObjectVal(map[string]cty.Value{
		"enabled": cty.True, "min": cty.UnknownVal(cty.Number), "max": cty.UnknownVal(cty.Number),
	})
	for n := range root.locals {
		e.locals[n] = cty.DynamicVal
	}
	for range maxLocalRounds {
		next := map[string]cty.Value{}
		for n, x := range root.locals {
			next[n] = e.value(x)
		}
		e.locals = next
	}
	return e
}

// value evaluates expr; an error makes it unknown.
func (e *autoscalingEval) value(expr hcl.Expression) (v cty.Value) {
	defer func() {
		if recover() != nil {
			v = cty.DynamicVal
		}
	}()
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(e.vars), "local": cty.ObjectVal(e.locals)},
		Functions: validationFunctions(),
	}
	for _, t := range expr.Variables() {
		if r := t.RootName(); r != "var" && r != "local" {
			ctx.Variables[r] = cty.DynamicVal
		}
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.DynamicVal
	}
	return v
}

// null reports whether expr is certainly null while the pool autoscales
// (desired_capacity = var.autoscaling.enabled ? null : var.replicas).
func (e *autoscalingEval) null(expr hcl.Expression) bool {
	if expr == nil {
		return false
	}
	v, _ := e.value(expr).Unmark()
	return v.IsKnown() && v.IsNull()
}

// maxNamed caps the attributes a pool/autoscaling-ignore-changes message
// names.
const maxNamed = 5

// autoscaling reports a machinepool module that uses var.autoscaling but
// ignores changes to none of the attributes it sets from var.replicas.
// The attributes set from var.replicas alone are the desired capacity;
// those that also read var.autoscaling (a bound pinned to var.replicas
// when autoscaling is off) count only when there is no such attribute.
func (c *moduleChecks) autoscaling() {
	if c.role != contract.RoleMachinePool || !c.root.uses(contract.InputAutoscaling) {
		return
	}
	f := newFlow(c.root, c.all)
	if f.unresolved {
		return // var.replicas reaches a module tfcapi-lint cannot read
	}
	all := f.attrs(c.all)
	var desired []capacityAttr
	for _, a := range all {
		if a.taint&taintAutoscaling == 0 {
			desired = append(desired, a)
		}
	}
	if len(desired) == 0 {
		desired = all
	}
	if len(desired) == 0 {
		return // no attribute is set from var.replicas: nothing can drift
	}
	var names []string
	var whileAutoscaling *autoscalingEval
	for _, a := range desired {
		if a.res.ignoreAll {
			return
		}
		for _, ig := range a.res.ignored {
			if covers(ig, a.path) {
				return
			}
		}
		if a.m == c.root {
			if whileAutoscaling == nil {
				whileAutoscaling = newAutoscalingEval(c.root)
			}
			if whileAutoscaling.null(a.expr) {
				return // the module sets no desired capacity while autoscaling
			}
		}
		names = append(names, fmt.Sprintf("%s of %s.%s at %s", a.path, a.res.typ, a.res.name, rangeText(a.res.rng)))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > maxNamed {
		names = append(names[:maxNamed], fmt.Sprintf("%d more", len(names)-maxNamed))
	}
	v := c.root.variable(contract.InputAutoscaling)
	var rng *hcl.Range
	if v != nil {
		rng = &v.rng
	}
	c.add(CheckPoolAutoscalingIgnoreChanges, SeverityWarning, rng,
		"the module uses var.autoscaling, but no resource ignores changes to the desired capacity it sets from var.replicas (%s): add that attribute to the resource's lifecycle { ignore_changes = [...] } so a cloud-side scale is not reported as drift",
		strings.Join(names, "; "))
}
