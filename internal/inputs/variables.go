package inputs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// SourceKind is the kind of a variablesFrom source.
type SourceKind string

// Source kinds.
const (
	SourceConfigMap SourceKind = "ConfigMap"
	SourceSecret    SourceKind = "Secret"
)

// Format is how a source's values are read.
type Format string

// Formats of a variablesFrom source.
const (
	// FormatString passes each value as a string (the default).
	FormatString Format = "String"
	// FormatJSON parses each value as JSON.
	FormatJSON Format = "JSON"
)

// Source is one spec.variablesFrom entry with the data the caller already
// fetched. Build it with ConfigMapSource, SecretSource or MissingSource.
type Source struct {
	Kind     SourceKind
	Name     string
	Format   Format
	Optional bool
	// Found is false when the object does not exist or does not carry the
	// captf.io/variables=true label.
	Found bool
	// Data maps each key to its raw value (a ConfigMap's data and
	// binaryData together, a Secret's data).
	Data map[string][]byte
}

// ConfigMapSource returns a found ConfigMap source; its binaryData is read
// the same as its data.
func ConfigMapSource(name string, format Format, optional bool, data map[string]string, binaryData map[string][]byte) Source {
	d := make(map[string][]byte, len(data)+len(binaryData))
	for k, v := range data {
		d[k] = []byte(v)
	}
	maps.Copy(d, binaryData)
	return Source{Kind: SourceConfigMap, Name: name, Format: format, Optional: optional, Found: true, Data: d}
}

// SecretSource returns a found Secret source.
func SecretSource(name string, format Format, optional bool, data map[string][]byte) Source {
	return Source{Kind: SourceSecret, Name: name, Format: format, Optional: optional, Found: true, Data: data}
}

// MissingSource returns a source that does not exist or is not labeled
// captf.io/variables=true.
func MissingSource(kind SourceKind, name string, optional bool) Source {
	return Source{Kind: kind, Name: name, Optional: optional}
}

func (s Source) String() string { return fmt.Sprintf("%s %q", s.Kind, s.Name) }

// InlineSource names spec.variables in errors.
const InlineSource = "spec.variables"

// VariablesError reports a user variable that cannot be used. It names the
// source and the key, never the value.
type VariablesError struct {
	// Reason is VariablesSourceNotFound or VariablesInvalid
	// (DependenciesReady=False).
	Reason string
	// Source names where the variable comes from, for example
	// `ConfigMap "aws-sizing"` or "spec.variables".
	Source string
	// Key is the offending key, "" when the whole source is at fault.
	Key string
	// Problem says what is wrong.
	Problem string
}

func (e *VariablesError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("variables source %s %s", e.Source, e.Problem)
	}
	return fmt.Sprintf("variables source %s key %q: %s", e.Source, e.Key, e.Problem)
}

// Variables are the merged user variables of an object.
type Variables struct {
	// Values maps each variable to its value: a string, or a JSON value tree
	// (canonical.Parse) for inline and JSON-format values.
	Values map[string]any
	// Sensitive marks the variables whose winning value came from a Secret.
	Sensitive map[string]bool
}

// Len is the number of variables.
func (v Variables) Len() int { return len(v.Values) }

// Names returns the variable names, sorted.
func (v Variables) Names() []string {
	return slices.Sorted(maps.Keys(v.Values))
}

// SensitiveNames returns the sorted names of the sensitive variables.
func (v Variables) SensitiveNames() []string {
	names := []string{}
	for _, n := range v.Names() {
		if v.Sensitive[n] {
			names = append(names, n)
		}
	}
	return names
}

// check re-validates names and values, so Render never writes a root that
// ResolveVariables would have refused.
func (v Variables) check(role contract.Role) error {
	for _, n := range v.Names() {
		if err := contract.CheckVariableName(role, n); err != nil {
			return &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: "variables", Key: n, Problem: nameProblem(err)}
		}
		if _, err := canonical.Marshal(v.Values[n]); err != nil {
			return &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: "variables", Key: n, Problem: valueProblem(err)}
		}
	}
	return nil
}

func nameProblem(err error) string {
	var ne *contract.NameError
	if errors.As(err, &ne) {
		return "the name " + ne.Problem
	}
	return err.Error()
}

// valueProblem describes a value error without the value or any path into
// it (an object key inside a Secret's value could be sensitive too).
func valueProblem(err error) string {
	var ce *canonical.Error
	if errors.As(err, &ce) {
		switch ce.Problem {
		case canonical.ProblemNotInteger:
			return "the value contains a fractional or exponent number; the inputs hash accepts integers only"
		case "duplicate object key":
			return "the value is JSON with a duplicate object key"
		case "not valid UTF-8", "string is not valid UTF-8":
			return "the value is not valid UTF-8"
		}
		return "the value is not valid JSON"
	}
	return "the value cannot be used"
}

// ResolveVariables merges an object's user variables (Module Variables
// "Merge order and formats"): every found source in list order, a later one
// winning on a shared key, then the inline spec.variables (a JSON object, nil
// or empty for none) winning over all. A variable is sensitive when its
// winning value came from a Secret. Every required source must be found;
// every name must pass contract.CheckVariableName for the role; every value
// must be UTF-8, and valid JSON for a JSON-format source; numbers must be
// integers. The first failure is returned as a *VariablesError.
func ResolveVariables(role contract.Role, sources []Source, inline []byte) (Variables, error) {
	if len(sources) > contract.MaxVariableSources {
		return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: "spec.variablesFrom",
			Problem: fmt.Sprintf("has %d sources, at most %d are allowed", len(sources), contract.MaxVariableSources)}
	}
	for _, s := range sources {
		if !s.Found && !s.Optional {
			return Variables{}, &VariablesError{Reason: contract.ReasonVariablesSourceNotFound, Source: s.String(),
				Problem: "does not exist or is not labeled captf.io/variables=true"}
		}
	}
	vars := Variables{Values: map[string]any{}, Sensitive: map[string]bool{}}
	for _, s := range sources {
		if !s.Found {
			continue
		}
		format := s.Format
		if format == "" {
			format = FormatString
		}
		if format != FormatString && format != FormatJSON {
			return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: s.String(),
				Problem: "has format " + strconv.Quote(string(format)) + ", want String or JSON"}
		}
		for _, key := range slices.Sorted(maps.Keys(s.Data)) {
			invalid := func(problem string) error {
				return &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: s.String(), Key: key, Problem: problem}
			}
			if err := contract.CheckVariableName(role, key); err != nil {
				return Variables{}, invalid(nameProblem(err))
			}
			raw := s.Data[key]
			if !utf8.Valid(raw) {
				return Variables{}, invalid("the value is not valid UTF-8")
			}
			var val any = string(raw)
			if format == FormatJSON {
				parsed, err := canonical.Parse(raw)
				if err != nil {
					return Variables{}, invalid(valueProblem(err))
				}
				if _, err := canonical.Marshal(parsed); err != nil {
					return Variables{}, invalid(valueProblem(err))
				}
				val = parsed
			}
			vars.Values[key] = val
			vars.Sensitive[key] = s.Kind == SourceSecret
		}
	}
	if len(inline) > 0 {
		parsed, err := canonical.Parse(inline)
		if err != nil {
			var ce *canonical.Error
			if errors.As(err, &ce) && ce.Problem == "duplicate object key" {
				key := topKey(ce.Path[1:])
				problem := "the key is set more than once"
				if ce.Path != canonical.Child("$", key) {
					problem = valueProblem(err)
				}
				return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource, Key: key, Problem: problem}
			}
			return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource, Problem: "is not " + valueProblemNoun(err)}
		}
		obj, ok := parsed.(map[string]any)
		if !ok {
			return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource, Problem: "is not a JSON object"}
		}
		if len(obj) > contract.MaxInlineVariables {
			return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource,
				Problem: fmt.Sprintf("has %d keys, at most %d are allowed", len(obj), contract.MaxInlineVariables)}
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			if err := contract.CheckVariableName(role, key); err != nil {
				return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource, Key: key, Problem: nameProblem(err)}
			}
			if _, err := canonical.Marshal(obj[key]); err != nil {
				return Variables{}, &VariablesError{Reason: contract.ReasonVariablesInvalid, Source: InlineSource, Key: key, Problem: valueProblem(err)}
			}
			vars.Values[key] = obj[key]
			vars.Sensitive[key] = false
		}
	}
	return vars, nil
}

func valueProblemNoun(err error) string {
	var ce *canonical.Error
	if errors.As(err, &ce) && ce.Problem == "not valid UTF-8" {
		return "valid UTF-8"
	}
	return "a valid JSON object"
}
