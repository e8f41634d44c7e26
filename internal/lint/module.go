package lint

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// ModuleOptions are the options of module lint.
type ModuleOptions struct {
	// Role is the contract role the module implements.
	Role contract.Role
	// Contract is the contract version (only v1alpha1 exists).
	Contract string
	// AllowWarnings lists the check IDs whose warnings become info.
	AllowWarnings []string
}

// LintModule lints the module in dir. A module that cannot be read or
// parsed is a *ParseError; a bad option is a *UsageError.
func LintModule(dir string, o ModuleOptions) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	r := &Report{}
	fs := &findings{}
	if _, err := lintModuleSource(dirSource{base: dir}, o.Role, r, fs); err != nil {
		return nil, err
	}
	r.Findings = fs.list
	r.finish(allowSet(o.AllowWarnings))
	return r, nil
}

func (o ModuleOptions) check() error {
	if o.Role == "" {
		return usageErrorf("--role is required: cluster, machine or machinepool")
	}
	if _, err := contract.ParseRole(string(o.Role)); err != nil {
		return usageErrorf("--role: %v", err)
	}
	if o.Contract != contract.Version {
		return usageErrorf("--contract %q is not supported: this tfcapi-lint lints %s", o.Contract, contract.Version)
	}
	return nil
}

func allowSet(ids []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// lintModuleSource loads the module of src, runs the module checks of the
// role and appends their findings (and the file set) to r.
func lintModuleSource(src source, role contract.Role, r *Report, fs *findings) ([]*module, error) {
	root, all, err := loadModule(src)
	if err != nil {
		return nil, err
	}
	r.FileSet = "terraform"
	for _, m := range all {
		if m.tofu {
			r.FileSet = "opentofu"
		}
	}
	mc := &moduleChecks{role: role, root: root, all: all, fs: fs}
	mc.run()
	return all, nil
}

type moduleChecks struct {
	role contract.Role
	root *module
	all  []*module
	fs   *findings
}

func (c *moduleChecks) add(id string, sev Severity, rng *hcl.Range, format string, args ...any) {
	ch, ok := checkByID(id)
	if !ok || !ch.appliesTo(c.role) {
		return
	}
	file, line := "", 0
	if rng != nil {
		file, line = rng.Filename, rng.Start.Line
	}
	c.fs.add(id, sev, file, line, format, args...)
}

func (c *moduleChecks) run() {
	c.inputs()
	c.outputs()
	c.blocks()
	c.version()
	c.autoscaling()
	c.shadows()
}

// variable returns the first declaration of name in the root module.
func (m *module) variable(name string) *variable {
	for _, v := range m.variables {
		if v.name == name {
			return v
		}
	}
	return nil
}

func (m *module) output(name string) *output {
	for _, o := range m.outputs {
		if o.name == name {
			return o
		}
	}
	return nil
}

func (c *moduleChecks) inputs() {
	for _, in := range c.role.Inputs() {
		v := c.root.variable(in.Name)
		if v == nil {
			if in.Name == contract.InputTags {
				c.add(CheckInputTagsDeclared, SeverityError, nil,
					"variable %q is not declared: declare it as map(string) and apply it to every cloud resource the module creates", in.Name)
			} else if in.Required {
				c.add(CheckInputRequired, SeverityError, nil,
					"contract input %q of the %s role is not declared: declare variable %q with type %s", in.Name, c.role, in.Name, in.Type)
			}
			continue
		}
		c.inputType(in, v)
		if v.def != nil && !in.Nullable {
			c.add(CheckInputDefault, SeverityWarning, &v.rng,
				"variable %q has a default, but the controller always sets it to a non-null value: remove the default", in.Name)
		}
		if in.Sensitive && !isTrue(v.sensitive) {
			c.add(CheckInputSensitive, SeverityWarning, &v.rng,
				"variable %q is not declared with sensitive = true", in.Name)
		}
	}
	for _, v := range c.root.variables {
		if c.role.IsInput(v.name) {
			continue
		}
		if strings.HasPrefix(v.name, contract.ReservedPrefix) {
			if c.role == contract.RoleCluster && v.name == contract.InputClusterOutputs {
				if v.def == nil {
					c.add(CheckInputReserved, SeverityError, &v.rng,
						"variable %q is not passed to the cluster role, and a declaration without a default fails validate: add default = null or remove it", v.name)
				}
				continue
			}
			c.add(CheckInputReserved, SeverityError, &v.rng,
				"variable %q uses the reserved prefix %s but is not a contract input of the %s role: rename it", v.name, contract.ReservedPrefix, c.role)
			continue
		}
		// One finding at most: a variable without a default, or one whose
		// null default its own validation refuses.
		switch {
		case v.def == nil:
			c.add(CheckInputUserVariableDefault, SeverityWarning, &v.rng,
				"user variable %q has no default: every object that does not set it fails plan", v.name)
		case isLiteralNull(v.def.Expr) && v.refusesNull():
			c.add(CheckInputUserVariableNullDefault, SeverityWarning, &v.rng,
				"user variable %q has default = null, but its validation refuses null: it looks optional, yet every object that does not set it fails plan", v.name)
		}
	}
	if v := c.root.variable(contract.InputTags); v != nil && !c.root.uses(contract.InputTags) {
		c.add(CheckInputTagsUnused, SeverityWarning, &v.rng,
			"variable %q is never referenced, neither directly nor through a nested local module: apply it to the cloud resources the module creates", contract.InputTags)
	}
}

// isTrue reports whether expr is the constant true.
func isTrue(expr hcl.Expression) bool {
	if expr == nil {
		return false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() {
		return false
	}
	v, err := convert.Convert(v, cty.Bool)
	return err == nil && v.True()
}

// uses reports whether the module references var.name outside module calls,
// or passes it to a module call that is not local, or to a local module
// that uses the variable it receives it as.
func (m *module) uses(name string) bool {
	return m.usesVisited(name, map[*module]bool{})
}

func (m *module) usesVisited(name string, seen map[*module]bool) bool {
	if seen[m] {
		return false
	}
	seen[m] = true
	if m.refs[name] {
		return true
	}
	for _, c := range m.calls {
		for arg, expr := range c.args {
			refs := map[string]bool{}
			addVarRefs(expr.Variables(), refs)
			if !refs[name] {
				continue
			}
			if c.child == nil || c.child.usesVisited(arg, seen) {
				return true
			}
		}
	}
	return false
}

// parseContractType parses one of internal/contract's type constraints.
func parseContractType(s string) (cty.Type, error) {
	expr, diags := hclsyntax.ParseExpression([]byte(s), "contract", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilType, diags
	}
	ty, _, diags := typeexpr.TypeConstraintWithDefaults(expr)
	if diags.HasErrors() {
		return cty.NilType, diags
	}
	return ty, nil
}

// variableType reads a variable's type constraint the way Terraform does,
// the bare list and map keywords included.
func variableType(expr hcl.Expression) (cty.Type, hcl.Diagnostics) {
	switch hcl.ExprAsKeyword(expr) {
	case "list":
		return cty.List(cty.DynamicPseudoType), nil
	case "map":
		return cty.Map(cty.DynamicPseudoType), nil
	}
	ty, _, diags := typeexpr.TypeConstraintWithDefaults(expr)
	return ty, diags
}

func (c *moduleChecks) inputType(in contract.Input, v *variable) {
	if v.typeExpr == nil {
		c.add(CheckInputType, SeverityError, &v.rng,
			"variable %q has no type: declare type = %s", in.Name, in.Type)
		return
	}
	got, diags := variableType(v.typeExpr)
	if diags.HasErrors() {
		c.add(CheckInputType, SeverityError, &v.rng,
			"variable %q: the type cannot be read (%s): declare type = %s", in.Name, firstDiag(diags), in.Type)
		return
	}
	want, err := parseContractType(in.Type)
	if err != nil {
		// internal/contract's own types always parse (tested).
		return
	}
	if !want.HasDynamicTypes() && !want.Equals(got) && convert.GetConversion(want, got) == nil {
		c.add(CheckInputType, SeverityError, &v.rng,
			"variable %q has type %s, which does not accept the %s the controller generates: declare type = %s",
			in.Name, typeexpr.TypeString(got), typeexpr.TypeString(want), in.Type)
		return
	}
	if in.Nullable && v.nullable != nil {
		if nv, d := v.nullable.Value(nil); !d.HasErrors() && nv.IsKnown() && !nv.IsNull() && nv.Type() == cty.Bool && nv.False() {
			c.add(CheckInputType, SeverityError, &v.rng,
				"variable %q is declared nullable = false, but the controller may set it to null: remove nullable = false", in.Name)
		}
	}
}

func firstDiag(diags hcl.Diagnostics) string {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if d.Detail != "" {
				return oneLine(d.Summary + ": " + d.Detail)
			}
			return oneLine(d.Summary)
		}
	}
	return "unknown error"
}

func (c *moduleChecks) outputs() {
	for _, name := range c.role.OutputNames() {
		if c.root.output(name) == nil {
			c.add(CheckOutputRequired, SeverityError, nil,
				"contract output %q of the %s role is not declared: declare it (its value may be null until known)", name, c.role)
		}
	}
	for _, o := range c.root.outputs {
		if strings.HasPrefix(o.name, contract.ReservedPrefix) {
			c.add(CheckOutputReserved, SeverityWarning, &o.rng,
				"output %q uses the prefix %s, reserved for future contract outputs: rename it", o.name, contract.ReservedPrefix)
		}
	}
	if o := c.root.output(contract.OutputHealth); o != nil {
		c.health(o)
	}
	if c.role == contract.RoleCluster {
		if o := c.root.output(contract.OutputControlPlaneEndpoint); o != nil && isLiteralNull(o.value) {
			c.add(CheckOutputEndpointNeverSet, SeverityWarning, &o.rng,
				"output %q is a literal null: without a user or control-plane endpoint the cluster never gets one; output the endpoint the module creates, or var.control_plane_endpoint when it is set", o.name)
		}
	}
	if c.role == contract.RoleMachinePool {
		c.providerIDList()
	}
}

// constant returns the value of an expression that references nothing.
func constant(expr hcl.Expression) (cty.Value, bool) {
	if expr == nil {
		return cty.NilVal, false
	}
	if len(expr.Variables()) > 0 {
		return cty.NilVal, false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

func isLiteralNull(expr hcl.Expression) bool {
	if expr == nil {
		return false
	}
	v, ok := constant(expr)
	return ok && v.IsNull()
}

// health checks the literal parts of the health output's expression with
// the controller's own decoder: a constant value entirely, an object
// constructor key by key (members that are not constant get a valid
// stand-in).
func (c *moduleChecks) health(o *output) {
	if o.value == nil {
		return
	}
	var obj cty.Value
	if v, ok := constant(o.value); ok {
		if v.IsNull() {
			c.add(CheckOutputHealth, SeverityError, &o.rng,
				"output %q is a literal null: the object never leaves pending; output { state, healthy, message, reasons }", o.name)
			return
		}
		obj = v
	} else {
		items, diags := hcl.ExprMap(o.value)
		if diags.HasErrors() {
			return // not an object constructor: nothing to see statically
		}
		stand := map[string]cty.Value{
			"state": cty.StringVal(contract.HealthRunning), "healthy": cty.True,
			"message": cty.StringVal(""), "reasons": cty.ListValEmpty(cty.String),
		}
		attrs := map[string]cty.Value{}
		for _, kv := range items {
			k, ok := objectKey(kv.Key)
			if !ok {
				return
			}
			if v, ok := constant(kv.Value); ok {
				attrs[k] = v
			} else if s, ok := stand[k]; ok {
				attrs[k] = s
			} else {
				attrs[k] = cty.NullVal(cty.DynamicPseudoType)
			}
		}
		obj = cty.ObjectVal(attrs)
	}
	raw, err := ctyjson.SimpleJSONValue{Value: obj}.MarshalJSON()
	if err != nil {
		return
	}
	_, problems := contract.DecodeHealth(raw)
	if len(problems) > 0 {
		parts := make([]string, 0, len(problems))
		for _, p := range problems {
			parts = append(parts, p.String())
		}
		c.add(CheckOutputHealth, SeverityError, &o.rng,
			"output %q has the wrong shape: %s", o.name, strings.Join(parts, "; "))
	}
}

// objectKey returns the name of an object constructor key.
func objectKey(expr hcl.Expression) (string, bool) {
	if k := hcl.ExprAsKeyword(expr); k != "" {
		return k, true
	}
	if v, ok := constant(expr); ok && v.Type() == cty.String && !v.IsNull() {
		return v.AsString(), true
	}
	return "", false
}

func (c *moduleChecks) providerIDList() {
	o := c.root.output(contract.OutputProviderIDList)
	if o == nil {
		c.add(CheckOutputProviderIDListShape, SeverityError, nil,
			"output %q is not declared: declare it as a list of provider IDs", contract.OutputProviderIDList)
		return
	}
	if o.value == nil {
		return
	}
	if v, ok := constant(o.value); ok {
		ty := v.Type()
		if v.IsNull() || !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
			c.add(CheckOutputProviderIDListShape, SeverityError, &o.rng,
				"output %q is not a list: output the provider IDs of every member of the group", o.name)
		}
		return // a literal list has a fixed order
	}
	if o.file.json {
		return // JSON syntax is not scanned for sort() or distinct()
	}
	if _, ok := o.value.(*hclsyntax.ObjectConsExpr); ok {
		c.add(CheckOutputProviderIDListShape, SeverityError, &o.rng,
			"output %q is an object, not a list: output the provider IDs of every member of the group", o.name)
		return
	}
	if !sortedOrDistinct(o.value) {
		c.add(CheckOutputProviderIDListShape, SeverityWarning, &o.rng,
			"output %q is not wrapped in sort() or distinct(): an unsorted list reorders between refreshes, which is a plan diff; write value = sort(...)", o.name)
	}
}

// sortedOrDistinct reports whether the output's own expression is a call of
// sort or distinct (parentheses allowed).
func sortedOrDistinct(expr hcl.Expression) bool {
	for {
		p, ok := expr.(*hclsyntax.ParenthesesExpr)
		if !ok {
			break
		}
		expr = p.Expression
	}
	call, ok := expr.(*hclsyntax.FunctionCallExpr)
	return ok && (call.Name == "sort" || call.Name == "distinct")
}

// blocks reports backend, cloud and provider blocks in the root and every
// nested local module.
func (c *moduleChecks) blocks() {
	for _, m := range c.all {
		for _, r := range m.backends {
			c.add(CheckModuleBackend, SeverityError, &r,
				"the module declares a backend block: remove it, CAPTF's generated root configures the kubernetes backend")
		}
		for _, r := range m.clouds {
			c.add(CheckModuleCloud, SeverityError, &r,
				"the module declares a cloud block: remove it, state lives in the kubernetes backend")
		}
		for _, r := range m.providers {
			c.add(CheckModuleProviderConfig, SeverityWarning, &r,
				"the module configures a provider itself: prefer settings from the identity's environment, or allow the warning")
		}
	}
}

// version reports a root module without required_version. A module that
// sets one gets no finding, so a clean module prints an empty list (book:
// tfcapi-lint "Lint a module").
func (c *moduleChecks) version() {
	if len(c.root.requiredVersions) == 0 {
		c.add(CheckModuleVersion, SeverityInfo, nil,
			"the module sets no required_version: set terraform { required_version = \">= 1.5\" } so an image built with a too old runtime fails early")
		return
	}
	for _, rv := range c.root.requiredVersions {
		if rv.constraint == "" {
			c.add(CheckModuleVersion, SeverityInfo, &rv.rng, "required_version is not a constant string")
		}
	}
}

// declarations lists the blocks a file declares, as "variable.x",
// "resource.t.n", "local.x"...
func declarations(f *file) []string {
	var out []string
	for _, b := range f.content.Blocks {
		switch b.Type {
		case "terraform":
			continue
		case "locals":
			attrs, _ := b.Body.JustAttributes()
			for n := range attrs {
				out = append(out, "local."+n)
			}
			continue
		}
		out = append(out, strings.Join(append([]string{b.Type}, b.Labels...), "."))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func (c *moduleChecks) shadows() {
	for _, m := range c.all {
		for _, s := range m.shadows {
			a, b := declarations(s.tofu), declarations(s.tf)
			onlyTofu, onlyTF := difference(a, b), difference(b, a)
			if len(onlyTofu) == 0 && len(onlyTF) == 0 {
				continue
			}
			var parts []string
			if len(onlyTofu) > 0 {
				parts = append(parts, fmt.Sprintf("only in %s: %s", s.tofu.name, strings.Join(onlyTofu, ", ")))
			}
			if len(onlyTF) > 0 {
				parts = append(parts, fmt.Sprintf("only in %s: %s", s.tf.name, strings.Join(onlyTF, ", ")))
			}
			rng := hcl.Range{Filename: s.tofu.name, Start: hcl.Pos{Line: 0}}
			c.add(CheckModuleTofuShadow, SeverityWarning, &rng,
				"%s shadows %s for OpenTofu but declares different blocks (%s): Terraform and OpenTofu see different modules",
				s.tofu.name, s.tf.name, strings.Join(parts, "; "))
		}
	}
}

func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
