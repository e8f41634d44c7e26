package identity

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// Widening is one way an allowedNamespaces change may let more namespaces
// receive an identity's credentials.
type Widening struct {
	// Field is the field that widens.
	Field *field.Path
	// Detail says what the change adds, without any credential.
	Detail string
}

func (w Widening) String() string { return w.Field.String() + ": " + w.Detail }

// AllowedNamespacesWidening lists how moving an identity's
// spec.allowedNamespaces from old to updated may widen the set of
// namespaces its credentials are mirrored into (empty: the change only
// keeps or narrows it). Pure. The rule (Identities and Credentials: unset
// allows none, list and selector are ORed, selector {} allows all):
//
//   - old sets selector {} (every namespace): nothing can widen it;
//   - a namespace in updated's list that old's list does not hold widens
//     (from unset, every entry is an addition), whatever old's selector
//     would say of it, since a namespace's labels can change;
//   - a selector where old had none widens;
//   - a changed selector widens unless it keeps every requirement of old's
//     and only adds more: a namespace matches a selector when it meets all
//     of its requirements, so more requirements can only match fewer. Any
//     other change (a value added to an In, a requirement dropped or
//     rewritten in another form) cannot be proven narrower and counts as
//     widening;
//   - removing list entries, removing the selector, or unsetting
//     allowedNamespaces only narrows.
func AllowedNamespacesWidening(old, updated *infrav1.AllowedNamespaces) []Widening {
	if updated == nil {
		return nil
	}
	if old == nil {
		old = &infrav1.AllowedNamespaces{}
	}
	if s := old.Selector; s != nil && len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return nil
	}
	path := field.NewPath("spec", "allowedNamespaces")
	var out []Widening
	var added []string
	for _, ns := range updated.List {
		if !slices.Contains(old.List, ns) && !slices.Contains(added, ns) {
			added = append(added, ns)
		}
	}
	if len(added) > 0 {
		out = append(out, Widening{Field: path.Child("list"),
			Detail: fmt.Sprintf("adds namespace(s) %s", strings.Join(added, ", "))})
	}
	switch {
	case updated.Selector == nil:
	case old.Selector == nil:
		out = append(out, Widening{Field: path.Child("selector"), Detail: "adds a selector"})
	case !selectorNarrows(old.Selector, updated.Selector):
		out = append(out, Widening{Field: path.Child("selector"),
			Detail: "changes the selector in a way that may match more namespaces (only adding requirements is known to narrow it)"})
	}
	return out
}

// selectorNarrows reports whether updated keeps every requirement of old
// (so matches no namespace old does not). A selector that cannot be parsed
// proves nothing.
func selectorNarrows(old, updated *metav1.LabelSelector) bool {
	o, err := metav1.LabelSelectorAsSelector(old)
	if err != nil {
		return false
	}
	u, err := metav1.LabelSelectorAsSelector(updated)
	if err != nil {
		return false
	}
	oreqs, _ := o.Requirements()
	ureqs, _ := u.Requirements()
	have := make(map[string]bool, len(ureqs))
	for _, r := range ureqs {
		have[requirementKey(r)] = true
	}
	for _, r := range oreqs {
		if !have[requirementKey(r)] {
			return false
		}
	}
	return true
}

// requirementKey is a requirement as key, operator and sorted values.
func requirementKey(r labels.Requirement) string {
	vals := r.Values().UnsortedList()
	slices.Sort(vals)
	return r.Key() + "\x00" + string(r.Operator()) + "\x00" + strings.Join(vals, "\x00")
}
