package inputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// File names of the rendered root, the data keys of the inputs Secrets.
const (
	MainFile   = "main.tf.json"
	TFVarsFile = "terraform.tfvars.json"
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
		e.Size, e.Limit, MainFile, TFVarsFile)
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
	tfvars, err := encodeFile(object(vars), role == contract.RoleMachinePool)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", TFVarsFile, err)
	}
	mainTF, err := encodeFile(mainDocument(role, names, req.Variables), false)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", MainFile, err)
	}
	return &Rendered{Role: role, MainTF: mainTF, TFVars: tfvars, Hash: hash}, nil
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
		{"terraform", object{{"backend", object{{"kubernetes", object{}}}}}},
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

// encodeFile writes v as indented JSON. With htmlEscape, '<', '>' and '&'
// inside every string become \u003c, \u003e and \u0026 — the machinepool
// role's documented encoding (Job Inputs §4); a reader decodes the same
// strings either way.
func encodeFile(v object, htmlEscape bool) ([]byte, error) {
	compact, err := appendJSON(nil, v)
	if err != nil {
		return nil, err
	}
	if htmlEscape {
		var esc bytes.Buffer
		esc.Grow(len(compact) + len(compact)/64)
		json.HTMLEscape(&esc, compact)
		compact = esc.Bytes()
	}
	var out bytes.Buffer
	out.Grow(len(compact) + len(compact)/8 + 64)
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// appendJSON writes compact JSON: ordered objects in order, a raw message's
// bytes as they are (compacted), everything else in canonical form (sorted
// map keys, literal '<', '>' and '&').
func appendJSON(dst []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case object:
		dst = append(dst, '{')
		for i, f := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = canonical.Append(dst, f.k); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendJSON(dst, f.v); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case json.RawMessage:
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, t); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	default:
		return canonical.Append(dst, v)
	}
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
