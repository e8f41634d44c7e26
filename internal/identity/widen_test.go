package identity

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

// TestAllowedNamespacesWidening: Identities and Credentials, "choosing
// which namespaces it allows" (unset allows none; list and selector are
// ORed; selector {} allows all) decides which allowedNamespaces changes
// widen who receives the credentials, and so need get on the source
// Secret; narrowing is free.
func TestAllowedNamespacesWidening(t *testing.T) {
	list := func(ns ...string) *infrav1.AllowedNamespaces { return &infrav1.AllowedNamespaces{List: ns} }
	sel := func(ml map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: ml, MatchExpressions: exprs}
	}
	in := func(key string, vals ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: vals}
	}
	bySel := func(s *metav1.LabelSelector, ns ...string) *infrav1.AllowedNamespaces {
		return &infrav1.AllowedNamespaces{List: ns, Selector: s}
	}
	team := map[string]string{"team": "a"}
	cases := []struct {
		name     string
		old, new *infrav1.AllowedNamespaces
		want     []string // fields that widen, in order
	}{
		{"unchanged list does not widen", list("a", "b"), list("a", "b"), nil},
		{"reordered list does not widen", list("a", "b"), list("b", "a"), nil},
		{"removing a namespace narrows", list("a", "b"), list("a"), nil},
		{"unsetting allowedNamespaces narrows to none", list("a"), nil, nil},
		{"unset stays unset", nil, nil, nil},
		{"adding a namespace widens", list("a"), list("a", "b"), []string{"spec.allowedNamespaces.list"}},
		{"swapping a namespace for another widens", list("a"), list("b"), []string{"spec.allowedNamespaces.list"}},
		{"setting a list on an unset identity (allows none) widens", nil, list("a"), []string{"spec.allowedNamespaces.list"}},
		{"setting a selector on an unset identity widens", nil, bySel(sel(team)), []string{"spec.allowedNamespaces.selector"}},
		{"setting selector {} on an unset identity widens", nil, bySel(sel(nil)), []string{"spec.allowedNamespaces.selector"}},
		{"adding a selector beside a list widens", list("a"), bySel(sel(team), "a"), []string{"spec.allowedNamespaces.selector"}},
		{"adding a list entry beside a selector widens: labels can change", bySel(sel(team)), bySel(sel(team), "a"), []string{"spec.allowedNamespaces.list"}},
		{"removing the selector narrows", bySel(sel(team), "a"), list("a"), nil},
		{"replacing a selector by a list widens by the list", bySel(sel(team)), list("a"), []string{"spec.allowedNamespaces.list"}},
		{"changing a selector's value widens", bySel(sel(team)), bySel(sel(map[string]string{"team": "b"})), []string{"spec.allowedNamespaces.selector"}},
		{"dropping a selector requirement widens", bySel(sel(team, in("env", "prod"))), bySel(sel(team)), []string{"spec.allowedNamespaces.selector"}},
		{"adding a value to an In widens", bySel(sel(nil, in("env", "prod"))), bySel(sel(nil, in("env", "prod", "dev"))), []string{"spec.allowedNamespaces.selector"}},
		{"replacing a selector by {} (every namespace) widens", bySel(sel(team)), bySel(sel(nil)), []string{"spec.allowedNamespaces.selector"}},
		{"adding a selector requirement narrows", bySel(sel(team)), bySel(sel(team, in("env", "prod"))), nil},
		{"reordering In values does not widen", bySel(sel(nil, in("env", "prod", "dev"))), bySel(sel(nil, in("env", "dev", "prod"))), nil},
		{"the same requirement in another form cannot be proven narrower", bySel(sel(team)), bySel(sel(nil, in("team", "a"))), []string{"spec.allowedNamespaces.selector"}},
		{"from selector {} (every namespace) nothing widens", bySel(sel(nil)), bySel(sel(team), "a", "b"), nil},
		{"from selector {} to a list narrows", bySel(sel(nil)), list("a"), nil},
		{"a list entry and a selector added at once both widen", list("a"), bySel(sel(team), "a", "b"), []string{"spec.allowedNamespaces.list", "spec.allowedNamespaces.selector"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := AllowedNamespacesWidening(tt.old, tt.new)
			var fields []string
			for _, w := range got {
				fields = append(fields, w.Field.String())
				if w.Detail == "" {
					t.Errorf("%s: no detail", w.Field)
				}
			}
			if fmt.Sprint(fields) != fmt.Sprint(tt.want) {
				t.Fatalf("widening %v, want %v", got, tt.want)
			}
		})
	}
	if got := AllowedNamespacesWidening(list("a"), list("a", "b", "c")); len(got) != 1 || got[0].Detail != "adds namespace(s) b, c" {
		t.Fatalf("the detail names every added namespace: %v", got)
	}
}
