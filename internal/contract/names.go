package contract

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ReservedPrefix starts every controller-injected input and every
// contract-defined local; no user variable may use it.
const ReservedPrefix = "captf_"

// MetaArguments are the module meta-arguments a user variable may not be
// named after, since it becomes a named argument of module "role".
func MetaArguments() []string {
	return []string{"source", "version", "providers", "count", "for_each", "depends_on", "lifecycle", "locals"}
}

// VariableNamePattern is the Terraform identifier a user variable name must
// match.
const VariableNamePattern = `^[a-zA-Z_][a-zA-Z0-9_-]*$`

var variableName = regexp.MustCompile(VariableNamePattern)

// Limits on user variables (Module Variables "Names and limits").
const (
	MaxInlineVariables = 256
	MaxVariableSources = 16
)

// NameError explains why a user variable name is refused. Names are keys,
// never values, so the error carries the name.
type NameError struct {
	Name    string
	Problem string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("variable name %q %s", e.Name, e.Problem)
}

// CheckVariableName returns a *NameError when name cannot be a user
// variable of a module of the role: it must be a Terraform identifier, must
// not start with captf_, must not be one of the role's contract inputs and
// must not be a module meta-argument. A contract input of another role is
// allowed (a cluster may set machine_name).
func CheckVariableName(role Role, name string) error {
	switch {
	case !variableName.MatchString(name):
		return &NameError{Name: name, Problem: "is not a Terraform identifier (" + VariableNamePattern + ")"}
	case strings.HasPrefix(name, ReservedPrefix):
		return &NameError{Name: name, Problem: "starts with the reserved prefix " + ReservedPrefix}
	case role.IsInput(name):
		return &NameError{Name: name, Problem: fmt.Sprintf("is a contract input of the %s role", role)}
	case slices.Contains(MetaArguments(), name):
		return &NameError{Name: name, Problem: "is a module meta-argument"}
	}
	return nil
}

// ReservedVariableNames lists the exact names (besides every captf_ name) a
// user variable of the role may not take: the role's contract inputs and the
// meta-arguments.
func ReservedVariableNames(role Role) []string {
	names := role.InputNames()
	names = append(names, MetaArguments()...)
	slices.Sort(names)
	return slices.Compact(names)
}
