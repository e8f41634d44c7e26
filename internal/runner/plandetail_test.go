package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

const sentinel = "SENTINEL-7f3a"

func change(t *testing.T, body string) *tfjson.Change {
	t.Helper()
	var c tfjson.Change
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("change %s: %v", body, err)
	}
	return &c
}

// line renders an attribute change as "path: before -> after [flags]",
// with "-" for an absent value.
func line(a infrav1.PlanAttributeChange) string {
	v := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	s := a.Path + ": " + v(a.Before) + " -> " + v(a.After)
	if a.Sensitive {
		s += " [sensitive]"
	}
	if a.Unknown {
		s += " [unknown]"
	}
	if a.Truncated {
		s += " [truncated]"
	}
	return s
}

func TestAttributeChanges(t *testing.T) {
	big := strings.Repeat("é", 40)
	cases := []struct {
		name string
		body string
		want []string
	}{{
		name: "only changed attributes, unchanged ones left out",
		body: `{"actions":["update"],"before":{"name":"a","size":1,"keep":true},"after":{"name":"b","size":1,"keep":true}}`,
		want: []string{`name: "a" -> "b"`},
	}, {
		name: "a sensitive leaf is masked on both sides",
		body: `{"actions":["update"],"before":{"password":"` + sentinel + `-old","user":"x"},"after":{"password":"` + sentinel + `","user":"x"},
			"before_sensitive":{"password":true},"after_sensitive":{"password":true}}`,
		want: []string{`password: (sensitive value) -> (sensitive value) [sensitive]`},
	}, {
		name: "a sensitive leaf nested in an object and a list",
		body: `{"actions":["update"],"before":{"tags":{"team":"a","token":"` + sentinel + `1"},"rule":[{"port":1,"key":"` + sentinel + `2"}]},
			"after":{"tags":{"team":"b","token":"` + sentinel + `3"},"rule":[{"port":2,"key":"` + sentinel + `4"}]},
			"before_sensitive":{"tags":{"token":true},"rule":[{"key":true}]},"after_sensitive":{"tags":{"token":true},"rule":[{"key":true}]}}`,
		want: []string{
			`rule[0].key: (sensitive value) -> (sensitive value) [sensitive]`,
			`rule[0].port: 1 -> 2`,
			`tags.team: "a" -> "b"`,
			`tags.token: (sensitive value) -> (sensitive value) [sensitive]`,
		},
	}, {
		name: "a whole sensitive map is one masked value: its keys are not shown",
		body: `{"actions":["update"],"before":{"labels":{"` + sentinel + `-key":"v"}},"after":{"labels":{"` + sentinel + `-key":"w"}},
			"before_sensitive":{"labels":true},"after_sensitive":{"labels":true}}`,
		want: []string{`labels: (sensitive value) -> (sensitive value) [sensitive]`},
	}, {
		name: "an unchanged sensitive value is not listed",
		body: `{"actions":["update"],"before":{"p":"` + sentinel + `","n":1},"after":{"p":"` + sentinel + `","n":2},
			"before_sensitive":{"p":true},"after_sensitive":{"p":true}}`,
		want: []string{`n: 1 -> 2`},
	}, {
		name: "sensitive only after: the old value shows, the new is masked",
		body: `{"actions":["update"],"before":{"v":"plain"},"after":{"v":"` + sentinel + `"},"after_sensitive":{"v":true}}`,
		want: []string{`v: "plain" -> (sensitive value) [sensitive]`},
	}, {
		name: "values known only after apply",
		body: `{"actions":["create"],"before":null,"after":{"input":"x"},"after_unknown":{"id":true,"output":true}}`,
		want: []string{`id: - -> (known after apply) [unknown]`, `input: - -> "x"`, `output: - -> (known after apply) [unknown]`},
	}, {
		name: "an unknown replacing a known value keeps the before",
		body: `{"actions":["update"],"before":{"id":"i-1"},"after":{},"after_unknown":{"id":true}}`,
		want: []string{`id: "i-1" -> (known after apply) [unknown]`},
	}, {
		name: "a delete lists what goes, nulls left out",
		body: `{"actions":["delete"],"before":{"a":1,"b":null,"c":[1,2]},"after":null}`,
		want: []string{`a: 1 -> -`, `c[0]: 1 -> -`, `c[1]: 2 -> -`},
	}, {
		name: "keys that are not identifiers are quoted in brackets; an emptied map is a value",
		body: `{"actions":["update"],"before":{"labels":{"app.kubernetes.io/name":"a"},"empty":null},"after":{"labels":{"app.kubernetes.io/name":"b"},"empty":{}}}`,
		want: []string{`empty: - -> {}`, `labels["app.kubernetes.io/name"]: "a" -> "b"`},
	}, {
		name: "a long value is cut on a rune boundary and flagged",
		body: `{"actions":["update"],"before":{"v":"a"},"after":{"v":"` + big + `"}}`,
		want: []string{`v: "a" -> "` + strings.Repeat("é", 14) + `… [truncated]`},
	}, {
		name: "HTML characters are not escaped",
		body: `{"actions":["update"],"before":{"v":"<a>"},"after":{"v":"a&b"}}`,
		want: []string{`v: "<a>" -> "a&b"`},
	}}
	b := RecordBounds
	b.Value = 32
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := AttributeChanges(change(t, tc.body), b)
			var lines []string
			for _, a := range got {
				lines = append(lines, line(a))
			}
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
			raw, _ := json.Marshal(got)
			if strings.Contains(string(raw), sentinel) {
				t.Errorf("a sensitive value leaked: %s", raw)
			}
		})
	}
}

func detailPlan(t *testing.T, n, attrs int) (*tfjson.Plan, PlanAnalysis) {
	t.Helper()
	var changes []string
	for i := range n {
		before, after := map[string]any{}, map[string]any{}
		for j := range attrs {
			before[fmt.Sprintf("a%03d", j)] = "old"
			after[fmt.Sprintf("a%03d", j)] = "new"
		}
		bb, _ := json.Marshal(before)
		ab, _ := json.Marshal(after)
		changes = append(changes, fmt.Sprintf(`{"address":"terraform_data.r%03d","mode":"managed","type":"terraform_data","name":"r","change":{"actions":["update"],"before":%s,"after":%s}}`, i, bb, ab))
	}
	p, err := ParsePlan(planJSON(changes, ""))
	if err != nil {
		t.Fatal(err)
	}
	return p, AnalyzePlan(p)
}

func TestPlanDetailBounds(t *testing.T) {
	t.Run("within bounds nothing is omitted and the hash is the plan's", func(t *testing.T) {
		p, a := detailPlan(t, 3, 2)
		d := PlanDetail(p, a, RecordBounds)
		if d.Omitted != nil || len(d.Changes) != 3 || len(d.Changes[0].Attributes) != 2 || d.Hash != a.Hash {
			t.Fatalf("detail %+v", d)
		}
		if d.Changes[1].Address != "terraform_data.r001" || d.Changes[1].Label != "update" || d.Changes[1].Actions[0] != "update" {
			t.Errorf("second change %+v", d.Changes[1])
		}
	})
	t.Run("the resource cap omits the rest and says how many", func(t *testing.T) {
		p, a := detailPlan(t, 5, 1)
		b := RecordBounds
		b.Resources = 2
		d := PlanDetail(p, a, b)
		if len(d.Changes) != 2 || d.Omitted == nil || d.Omitted.Resources != 3 || d.Omitted.Attributes != 0 {
			t.Fatalf("changes %d, omitted %+v", len(d.Changes), d.Omitted)
		}
	})
	t.Run("the attribute cap omits per resource", func(t *testing.T) {
		p, a := detailPlan(t, 2, 5)
		b := RecordBounds
		b.Attributes = 3
		d := PlanDetail(p, a, b)
		if d.Changes[0].OmittedAttributes != 2 || d.Changes[1].OmittedAttributes != 2 || d.Omitted == nil || d.Omitted.Attributes != 4 {
			t.Fatalf("omitted %+v, per resource %d %d", d.Omitted, d.Changes[0].OmittedAttributes, d.Changes[1].OmittedAttributes)
		}
	})
	t.Run("the byte budget is never exceeded", func(t *testing.T) {
		p, a := detailPlan(t, 200, 50)
		b := RecordBounds
		b.Bytes = 10000 // runs out inside the fifth resource
		d := PlanDetail(p, a, b)
		spent := 0
		for _, c := range d.Changes {
			spent += resourceCost + len(c.Address)
			for _, at := range c.Attributes {
				spent += attrCost(at)
			}
		}
		if spent > b.Bytes || len(d.Changes) != 5 || d.Omitted == nil || d.Omitted.Resources != 195 || d.Omitted.Attributes == 0 ||
			d.Changes[4].OmittedAttributes != d.Omitted.Attributes {
			t.Fatalf("spent %d of %d, %d changes, omitted %+v", spent, b.Bytes, len(d.Changes), d.Omitted)
		}
		enc, err := result.EncodePlanDetail(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := result.DecodePlanDetail(enc)
		if err != nil || len(back.Changes) != len(d.Changes) || *back.Omitted != *d.Omitted {
			t.Fatalf("round trip: %v", err)
		}
		full := PlanDetail(p, a, RecordBounds)
		fullEnc, _ := result.EncodePlanDetail(full)
		t.Logf("within the record's budget: %d of 200 resources of 50 attributes; the Secret holds %d bytes", len(full.Changes), len(fullEnc))
	})
}

// memSecrets is a Secret store of one namespace in memory.
type memSecrets map[string]*corev1.Secret

func (m memSecrets) Get(_ context.Context, name string) (*corev1.Secret, error) {
	if s, ok := m[name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (m memSecrets) Create(_ context.Context, s *corev1.Secret) error {
	if _, ok := m[s.Name]; ok {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, s.Name)
	}
	m[s.Name] = s.DeepCopy()
	return nil
}

func (m memSecrets) Update(_ context.Context, s *corev1.Secret) error {
	m[s.Name] = s.DeepCopy()
	return nil
}

func TestStorePlanDetail(t *testing.T) {
	owners := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "u1"}}
	m := memSecrets{"captf-run-j": {ObjectMeta: metav1.ObjectMeta{Name: "captf-run-j", Namespace: "ns", OwnerReferences: owners}}}
	d := &result.PlanDetail{Version: result.PlanDetailVersion, Hash: "p1:x"}
	for range 2 { // a retried pod writes it again
		if err := storePlanDetail(context.Background(), m, "j", d); err != nil {
			t.Fatal(err)
		}
	}
	s := m["captf-plan-j"]
	if s == nil || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "u1" || s.Namespace != "ns" {
		t.Fatalf("plan Secret %+v", s)
	}
	if back, err := result.DecodePlanDetail(s.Data[result.PlanDetailKey]); err != nil || back.Hash != "p1:x" {
		t.Fatalf("decode: %v", err)
	}
	if err := storePlanDetail(context.Background(), memSecrets{}, "j", d); err == nil {
		t.Error("no per-run Secret, yet a plan Secret was written without an owner")
	}
}
