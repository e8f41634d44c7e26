package lint

import (
	"errors"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// This file holds input/user-variable-null-default: a user variable whose
// default is null but whose validation refuses null (reference:
// tfcapi-lint CLI, "Module checks").

// refusesNull reports whether one of the variable's validations certainly
// refuses null: evaluated with the variable null, a condition is false or
// null, or fails, while the same condition evaluates without error for an
// unknown non-null value of the variable's type. The evaluation context
// holds the variable alone and the functions validationFunctions provides,
// so a condition that also references another value, or calls another
// function, fails both ways and is not reported: it may accept null.
func (v *variable) refusesNull() bool {
	ty := cty.DynamicPseudoType
	if v.typeExpr != nil {
		if t, diags := variableType(v.typeExpr); !diags.HasErrors() {
			ty = t.WithoutOptionalAttributesDeep()
		}
	}
	for _, cond := range v.conditions {
		if conditionRefusesNull(v.name, ty, cond) {
			return true
		}
	}
	return false
}

func conditionRefusesNull(name string, ty cty.Type, cond hcl.Expression) (refuses bool) {
	if !references(cond, name) {
		return false // Terraform rejects it; it says nothing about null
	}
	// The functions and operators return errors, not panics; a panic
	// all the same means nothing is certain.
	defer func() {
		if recover() != nil {
			refuses = false
		}
	}()
	eval := func(val cty.Value) (cty.Value, hcl.Diagnostics) {
		return cond.Value(&hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{name: val})},
			Functions: validationFunctions(),
		})
	}
	some := cty.DynamicVal
	if ty != cty.DynamicPseudoType {
		some = cty.UnknownVal(ty).RefineNotNull()
	}
	if _, diags := eval(some); diags.HasErrors() {
		return false // the condition fails for reasons of its own
	}
	got, diags := eval(cty.NullVal(ty))
	if diags.HasErrors() {
		return true
	}
	got, _ = got.Unmark()
	if !got.IsKnown() {
		return false
	}
	if got.IsNull() {
		return true
	}
	b, err := convert.Convert(got, cty.Bool)
	return err == nil && b.IsKnown() && !b.IsNull() && b.False()
}

// references reports whether expr references var.name.
func references(expr hcl.Expression, name string) bool {
	for _, t := range expr.Variables() {
		if t.RootName() != "var" || len(t) < 2 {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok && a.Name == name {
			return true
		}
	}
	return false
}

// validationFunctions are the functions of OpenTofu and Terraform that a
// validation condition can call and that tfcapi-lint evaluates: those the
// runtimes take from cty's standard library unchanged, can and try, and
// the few it implements the way the runtimes do. A call of any other
// function makes the condition unknowable.
var validationFunctions = sync.OnceValue(func() map[string]function.Function {
	return map[string]function.Function{
		"abs":             stdlib.AbsoluteFunc,
		"alltrue":         allTrueFunc(true),
		"anytrue":         allTrueFunc(false),
		"can":             tryfunc.CanFunc,
		"ceil":            stdlib.CeilFunc,
		"chomp":           stdlib.ChompFunc,
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        coalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"endswith":        stringTestFunc(strings.HasSuffix),
		"flatten":         stdlib.FlattenFunc,
		"floor":           stdlib.FloorFunc,
		"format":          stdlib.FormatFunc,
		"join":            stdlib.JoinFunc,
		"jsondecode":      stdlib.JSONDecodeFunc,
		"jsonencode":      stdlib.JSONEncodeFunc,
		"keys":            stdlib.KeysFunc,
		"length":          lengthFunc,
		"lower":           stdlib.LowerFunc,
		"max":             stdlib.MaxFunc,
		"merge":           stdlib.MergeFunc,
		"min":             stdlib.MinFunc,
		"parseint":        stdlib.ParseIntFunc,
		"range":           stdlib.RangeFunc,
		"regex":           stdlib.RegexFunc,
		"regexall":        stdlib.RegexAllFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"signum":          stdlib.SignumFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"split":           stdlib.SplitFunc,
		"startswith":      stringTestFunc(strings.HasPrefix),
		"strcontains":     stringTestFunc(strings.Contains),
		"strrev":          stdlib.ReverseFunc,
		"substr":          stdlib.SubstrFunc,
		"title":           stdlib.TitleFunc,
		"tobool":          stdlib.MakeToFunc(cty.Bool),
		"tolist":          stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":           stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":        stdlib.MakeToFunc(cty.Number),
		"toset":           stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":        stdlib.MakeToFunc(cty.String),
		"trim":            stdlib.TrimFunc,
		"trimprefix":      stdlib.TrimPrefixFunc,
		"trimspace":       stdlib.TrimSpaceFunc,
		"trimsuffix":      stdlib.TrimSuffixFunc,
		"try":             tryfunc.TryFunc,
		"upper":           stdlib.UpperFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,
	}
})

// lengthFunc is length: the characters of a string, the elements of a
// collection, the attributes or elements of a structural value.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsObjectType() || ty.IsTupleType() {
			return cty.Number, nil
		}
		return cty.Number, errors.New("argument must be a string, a collection type, or a structural type")
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		ty := v.Type()
		switch {
		case ty == cty.DynamicPseudoType:
			return cty.UnknownVal(cty.Number), nil
		case ty.IsTupleType():
			return cty.NumberIntVal(int64(len(ty.TupleElementTypes()))), nil
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		case ty == cty.String:
			return stdlib.Strlen(v)
		}
		return v.Length(), nil
	},
})

// stringTestFunc is startswith, endswith or strcontains.
func stringTestFunc(test func(s, part string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "part", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(test(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// allTrueFunc is alltrue (all) or anytrue: a null element is false; for
// alltrue an unknown element before any false one makes the result unknown,
// for anytrue only when no element is true.
func allTrueFunc(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			unknown := false
			for it := args[0].ElementIterator(); it.Next(); {
				_, e := it.Element()
				switch {
				case !e.IsKnown() && all:
					return cty.UnknownVal(cty.Bool), nil
				case !e.IsKnown():
					unknown = true
				case all && (e.IsNull() || e.False()):
					return cty.False, nil
				case !all && !e.IsNull() && e.True():
					return cty.True, nil
				}
			}
			if unknown {
				return cty.UnknownVal(cty.Bool), nil
			}
			return cty.BoolVal(all), nil
		},
	})
}

// coalesceFunc is coalesce: the first argument that is neither null nor
// an empty string.
var coalesceFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowDynamicType: true, AllowNull: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		types := make([]cty.Type, len(args))
		for i, a := range args {
			types[i] = a.Type()
		}
		ty, _ := convert.UnifyUnsafe(types)
		if ty == cty.NilType {
			return cty.NilType, errors.New("all arguments must have the same type")
		}
		return ty, nil
	},
	Impl: func(args []cty.Value, ty cty.Type) (cty.Value, error) {
		for _, a := range args {
			a, err := convert.Convert(a, ty)
			if err != nil {
				return cty.NilVal, err
			}
			if !a.IsKnown() {
				return cty.UnknownVal(ty), nil
			}
			if a.IsNull() || (ty == cty.String && a.RawEquals(cty.StringVal(""))) {
				continue
			}
			return a, nil
		}
		return cty.NilVal, errors.New("no non-null, non-empty-string arguments")
	},
})
