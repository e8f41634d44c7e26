package inputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// ModuleSource is where the generated root (at /captf/work/root) finds the
// image's module (/captf/module).
const ModuleSource = "../../module"

// ModuleName is the name of the generated root's module call.
const ModuleName = "role"

// MaxBytes caps main.tf.json and terraform.tfvars.json together (Job
// Inputs §9).
const MaxBytes = 1_000_000

// Request is everything Render needs.
type Request struct {
	// Image is spec.source.image as written (tag or digest), never the
	// resolved digest.
	Image string
	// Inputs are the role's contract inputs.
	Inputs RoleInputs
	// Variables are the merged user variables (ResolveVariables); the zero
	// value means none.
	Variables Variables
}

// Rendered is a rendered root and its inputs hash.
type Rendered struct {
	// Role is the contract role rendered.
	Role contract.Role
	// MainTF is main.tf.json.
	MainTF []byte
	// TFVars is terraform.tfvars.json.
	TFVars []byte
	// Hash is the inputs hash, "h2:<sha256 hex>".
	Hash string
}

// Size is the byte size of the two files together, the figure the
// captf_inputs_bytes gauge reports and the cap applies to.
func (r *Rendered) Size() int { return len(r.MainTF) + len(r.TFVars) }

// TooLargeError reports a rendered root over MaxBytes
// (ApplyJobSucceeded=False/InputsTooLarge).
type TooLargeError struct {
	Size  int
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("rendered inputs are %d bytes, over the %d-byte limit on %s and %s together: shrink bootstrap data, cluster exports or user variables",
		e.Size, e.Limit, contract.MainFile, contract.TFVarsFile)
}

// Reason is the ApplyJobSucceeded reason for the error.
func (e *TooLargeError) Reason() string { return contract.ReasonInputsTooLarge }

// CheckSize returns a *TooLargeError when the rendered root exceeds
// MaxBytes.
func (r *Rendered) CheckSize() error {
	if n := r.Size(); n > MaxBytes {
		return &TooLargeError{Size: n, Limit: MaxBytes}
	}
	return nil
}

// UnhashableError reports a rendered input with no canonical form, for
// example a fractional number in captf_cluster_outputs.
type UnhashableError struct {
	// Input is the top-level input or user variable holding the value.
	Input string
	// Path locates the value inside the hashed document.
	Path string
	// Problem says what is wrong, never the value.
	Problem string
}

func (e *UnhashableError) Error() string {
	return fmt.Sprintf("input %s cannot be hashed: %s: %s", e.Input, e.Path, e.Problem)
}

// ClusterOutputs reports whether the offending value is the cluster's
// exports carried in captf_cluster_outputs (WaitingForClusterExports).
func (e *UnhashableError) ClusterOutputs() bool { return e.Input == contract.InputClusterOutputs }

// Render renders main.tf.json and terraform.tfvars.json for the request and
// computes its inputs hash. It does not apply the size cap: check it with
// CheckSize, after reporting Size.
func Render(req Request) (*Rendered, error) {
	if req.Inputs == nil {
		return nil, errors.New("render: no role inputs")
	}
	if req.Image == "" {
		return nil, errors.New("render: spec.source.image is empty")
	}
	role := req.Inputs.Role()
	if err := req.Variables.check(role); err != nil {
		return nil, err
	}
	fields := req.Inputs.values()
	names := req.Variables.Names()

	hash, err := computeHash(role, req.Image, fields, req.Inputs.hashExcluded(), req.Variables)
	if err != nil {
		return nil, err
	}

	vars := slices.Clone(fields)
	for _, n := range names {
		vars = append(vars, field{n, req.Variables.Values[n]})
	}
	hint := 0
	for _, f := range fields {
		if str, ok := f.v.(string); ok {
			hint += len(str)
		}
	}
	tfvars, err := encodeFile(object(vars), role == contract.RoleMachinePool, hint)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", contract.TFVarsFile, err)
	}
	mainTF, err := encodeFile(mainDocument(role, names, req.Variables), false, 4096)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", contract.MainFile, err)
	}
	return &Rendered{Role: role, MainTF: mainTF, TFVars: tfvars, Hash: hash}, nil
}

// BackendOnlyRoot returns the main.tf.json of a restore Job's root: the
// partial kubernetes backend stub alone, calling no module and declaring no
// variable (Runtime Environment).
func BackendOnlyRoot() []byte {
	b, err := encodeFile(object{backendStub()}, false, 64)
	if err != nil {
		panic(err) // a constant document always encodes
	}
	return b
}

func backendStub() field {
	return field{"terraform", object{{"backend", object{{"kubernetes", object{}}}}}}
}

// mainDocument builds the generated root: the partial kubernetes backend,
// one variable per contract input and user variable, the module call
// forwarding each by name, and every contract output re-exported sensitive.
func mainDocument(role contract.Role, userNames []string, vars Variables) object {
	var variables, args object
	args = append(args, field{"source", ModuleSource})
	for _, in := range role.Inputs() {
		decl := object{{"type", in.Type}}
		if in.Nullable {
			decl = append(decl, field{"default", nil})
		}
		if in.Sensitive {
			decl = append(decl, field{"sensitive", true})
		}
		variables = append(variables, field{in.Name, decl})
		args = append(args, field{in.Name, "${var." + in.Name + "}"})
	}
	for _, n := range userNames {
		decl := object{}
		if vars.Sensitive[n] {
			decl = append(decl, field{"sensitive", true})
		}
		variables = append(variables, field{n, decl})
		args = append(args, field{n, "${var." + n + "}"})
	}
	var outputs object
	for _, o := range role.Outputs() {
		outputs = append(outputs, field{o.Name, object{
			{"value", "${module." + ModuleName + "." + o.Name + "}"},
			{"sensitive", true},
		}})
	}
	return object{
		backendStub(),
		{"variable", variables},
		{"module", object{{ModuleName, args}}},
		{"output", outputs},
	}
}

// field is one member of an ordered JSON object.
type field struct {
	k string
	v any
}

// object is a JSON object whose members keep their order when written.
type object []field

// encodeFile writes v as JSON indented by two spaces, one member or element
// per line. With htmlEscape, '<', '>' and '&' inside every string become
// \u003c, \u003e and \u0026 — the machinepool role's documented encoding
// (Job Inputs §4); a reader decodes the same strings either way.
func encodeFile(v object, htmlEscape bool, sizeHint int) ([]byte, error) {
	out, err := appendPretty(make([]byte, 0, sizeHint+sizeHint/16+1024), v, 0)
	if err != nil {
		return nil, err
	}
	out = append(out, '\n')
	if htmlEscape {
		var esc bytes.Buffer
		esc.Grow(len(out) + len(out)/32)
		json.HTMLEscape(&esc, out)
		out = esc.Bytes()
	}
	return out, nil
}

func appendIndent(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// appendPretty writes indented JSON: ordered objects in order, maps with
// sorted keys, a raw message re-indented with its bytes otherwise kept,
// scalars in canonical form ('<', '>' and '&' literal).
func appendPretty(dst []byte, v any, depth int) ([]byte, error) {
	var err error
	member := func(i int, key string, val any) {
		if err != nil {
			return
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendIndent(dst, depth+1)
		if dst, err = canonical.Append(dst, key); err != nil {
			return
		}
		dst = append(dst, ':', ' ')
		dst, err = appendPretty(dst, val, depth+1)
	}
	element := func(i int, val any) {
		if err != nil {
			return
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendIndent(dst, depth+1)
		dst, err = appendPretty(dst, val, depth+1)
	}
	switch t := v.(type) {
	case object:
		if len(t) == 0 {
			return append(dst, '{', '}'), nil
		}
		dst = append(dst, '{')
		for i, f := range t {
			member(i, f.k, f.v)
		}
	case map[string]any:
		if len(t) == 0 {
			return append(dst, '{', '}'), nil
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			member(i, k, t[k])
		}
	case map[string]string:
		if len(t) == 0 {
			return append(dst, '{', '}'), nil
		}
		dst = append(dst, '{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			member(i, k, t[k])
		}
	case []any:
		if len(t) == 0 {
			return append(dst, '[', ']'), nil
		}
		dst = append(dst, '[')
		for i, e := range t {
			element(i, e)
		}
	case []string:
		if len(t) == 0 {
			return append(dst, '[', ']'), nil
		}
		dst = append(dst, '[')
		for i, e := range t {
			element(i, e)
		}
	case json.RawMessage:
		buf := bytes.NewBuffer(dst)
		prefix := strings.Repeat("  ", depth)
		if err := json.Indent(buf, bytes.TrimSpace(t), prefix, "  "); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	default:
		return canonical.Append(dst, v)
	}
	if err != nil {
		return nil, err
	}
	dst = appendIndent(dst, depth)
	if _, isObj := v.([]any); isObj {
		return append(dst, ']'), nil
	}
	if _, isList := v.([]string); isList {
		return append(dst, ']'), nil
	}
	return append(dst, '}'), nil
}

// tree converts rendered values into plain value trees for hashing.
func tree(v any) any {
	if o, ok := v.(object); ok {
		m := make(map[string]any, len(o))
		for _, f := range o {
			m[f.k] = tree(f.v)
		}
		return m
	}
	return v
}
