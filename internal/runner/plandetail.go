package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/text"
)

// PlanBounds bound a plan's change list.
type PlanBounds struct {
	// Bytes is the budget of the whole list: addresses, paths and values.
	Bytes int
	// Resources caps the resource changes, Attributes the attributes of
	// one resource.
	Resources, Attributes int
	// Value caps one value, Path one attribute path.
	Value, Path int
}

// RecordBounds are the TerraformPlan record's bounds.
var RecordBounds = PlanBounds{
	Bytes:      infrav1.MaxPlanChangesBytes,
	Resources:  infrav1.MaxPlanChanges,
	Attributes: infrav1.MaxPlanAttributes,
	Value:      infrav1.MaxPlanValueBytes,
	Path:       infrav1.MaxPlanPathBytes,
}

// resourceCost is what a resource entry costs besides its address and
// attributes (actions, label, field names).
const resourceCost = 64

// PlanDetail builds the change list of a plan: per changed resource, in
// the order of AnalyzePlan, the attributes whose value changes with their
// before and after values. A value the plan marks sensitive (on either
// side, at any depth) reads "(sensitive value)", as the runtime prints it,
// and nothing below it is looked at, not even map keys; a value known only
// after apply reads "(known after apply)". Objects and lists are flattened
// into attribute paths (a.b, a["key with dots"], a[0]). What does not fit
// in b is counted in Omitted.
func PlanDetail(p *tfjson.Plan, a PlanAnalysis, b PlanBounds) *result.PlanDetail {
	d := &result.PlanDetail{Version: result.PlanDetailVersion, Hash: a.Hash}
	byAddr := map[string]*tfjson.ResourceChange{}
	if p != nil {
		for _, rc := range p.ResourceChanges {
			if c, ok := classify(rc); ok {
				byAddr[c.Address+"|"+fmt.Sprint(c.Actions)] = rc
			}
		}
	}
	omitted := infrav1.PlanOmitted{}
	budget := b.Bytes
	for i, c := range a.Changes {
		cost := resourceCost + len(c.Address)
		if len(d.Changes) >= b.Resources || cost > budget {
			omitted.Resources = int32(len(a.Changes) - i)
			break
		}
		budget -= cost
		rc := infrav1.PlanResourceChange{Address: c.Address, Actions: append([]string(nil), c.Actions...), Label: c.Label}
		var attrs []infrav1.PlanAttributeChange
		if src := byAddr[c.Address+"|"+fmt.Sprint(c.Actions)]; src != nil && src.Change != nil {
			attrs = AttributeChanges(src.Change, b)
		}
		for j, at := range attrs {
			cost := attrCost(at)
			if j >= b.Attributes || cost > budget {
				rc.OmittedAttributes = int32(len(attrs) - j)
				omitted.Attributes += rc.OmittedAttributes
				break
			}
			budget -= cost
			rc.Attributes = append(rc.Attributes, at)
		}
		d.Changes = append(d.Changes, rc)
	}
	if omitted.Resources > 0 || omitted.Attributes > 0 {
		d.Omitted = &omitted
	}
	return d
}

func attrCost(a infrav1.PlanAttributeChange) int {
	n := 32 + len(a.Path)
	if a.Before != nil {
		n += len(*a.Before)
	}
	if a.After != nil {
		n += len(*a.After)
	}
	return n
}

// AttributeChanges lists the attributes of one resource change whose value
// changes, sorted by path, values capped at b.Value bytes and paths at
// b.Path.
func AttributeChanges(ch *tfjson.Change, b PlanBounds) []infrav1.PlanAttributeChange {
	w := walker{bounds: b}
	w.walk("", ch.Before, ch.After, ch.AfterUnknown, ch.BeforeSensitive, ch.AfterSensitive)
	sort.SliceStable(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out
}

type walker struct {
	bounds PlanBounds
	out    []infrav1.PlanAttributeChange
}

func (w *walker) walk(path string, before, after, unknown, bsens, asens any) {
	if isTrue(bsens) || isTrue(asens) {
		// A sensitive value: masked whole. Whether it changes is all
		// that is said, as the runtime does.
		if isTrue(unknown) || !reflect.DeepEqual(before, after) {
			at := infrav1.PlanAttributeChange{Path: w.path(path), Sensitive: true}
			if before != nil {
				at.Before = masked(isTrue(bsens), before, w.bounds.Value, &at.Truncated)
			}
			switch {
			case isTrue(unknown):
				at.After, at.Unknown = ptrTo(infrav1.UnknownValue), true
			case after != nil:
				at.After = masked(isTrue(asens), after, w.bounds.Value, &at.Truncated)
			}
			w.out = append(w.out, at)
		}
		return
	}
	if isTrue(unknown) {
		at := infrav1.PlanAttributeChange{Path: w.path(path), After: ptrTo(infrav1.UnknownValue), Unknown: true}
		if before != nil {
			at.Before = render(before, w.bounds.Value, &at.Truncated)
		}
		w.out = append(w.out, at)
		return
	}
	bm, bIsMap := before.(map[string]any)
	am, aIsMap := after.(map[string]any)
	bl, bIsList := before.([]any)
	al, aIsList := after.([]any)
	switch {
	case (bIsMap || before == nil) && (aIsMap || after == nil) && (bIsMap || aIsMap) && (len(bm) > 0 || len(am) > 0):
		keys := map[string]bool{}
		for k := range bm {
			keys[k] = true
		}
		for k := range am {
			keys[k] = true
		}
		// unknown may name a key neither side has a value for.
		if um, ok := unknown.(map[string]any); ok {
			for k, v := range um {
				if isTrue(v) {
					keys[k] = true
				}
			}
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			w.walk(joinKey(path, k), bm[k], am[k], key(unknown, k), key(bsens, k), key(asens, k))
		}
		return
	case (bIsList || before == nil) && (aIsList || after == nil) && (bIsList || aIsList) && (len(bl) > 0 || len(al) > 0):
		n := max(len(bl), len(al))
		if ul, ok := unknown.([]any); ok {
			n = max(n, len(ul))
		}
		for i := 0; i < n; i++ {
			w.walk(path+"["+strconv.Itoa(i)+"]", index(bl, i), index(al, i), index(listOf(unknown), i), index(listOf(bsens), i), index(listOf(asens), i))
		}
		return
	}
	if reflect.DeepEqual(before, after) {
		return
	}
	at := infrav1.PlanAttributeChange{Path: w.path(path)}
	if before != nil {
		at.Before = render(before, w.bounds.Value, &at.Truncated)
	}
	if after != nil {
		at.After = render(after, w.bounds.Value, &at.Truncated)
	}
	w.out = append(w.out, at)
}

func (w *walker) path(p string) string {
	if p == "" {
		// A change of the whole resource value (a resource with no
		// attributes, or one that is not an object).
		p = "(value)"
	}
	if len(p) > w.bounds.Path {
		p = text.Truncate(p, w.bounds.Path-len("…")) + "…"
	}
	return p
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func joinKey(path, k string) string {
	if identifier.MatchString(k) {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	b, _ := json.Marshal(k)
	return path + "[" + string(b) + "]"
}

func isTrue(v any) bool {
	b, ok := v.(bool)
	return ok && b
}

// key descends a sensitivity or unknown structure: true stays true for
// everything below it.
func key(v any, k string) any {
	if isTrue(v) {
		return true
	}
	if m, ok := v.(map[string]any); ok {
		return m[k]
	}
	return nil
}

func listOf(v any) []any {
	if isTrue(v) {
		return nil
	}
	l, _ := v.([]any)
	return l
}

func index(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

func masked(sensitive bool, v any, limit int, truncated *bool) *string {
	if sensitive {
		return ptrTo(infrav1.SensitiveValue)
	}
	return render(v, limit, truncated)
}

// render is v as compact JSON, cut to limit bytes (on a rune boundary,
// ending in "…") when longer.
func render(v any, limit int, truncated *bool) *string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ptrTo("(unreadable value)")
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	if len(s) > limit {
		s = text.Truncate(s, limit-len("…")) + "…"
		*truncated = true
	}
	return &s
}

func ptrTo(s string) *string { return &s }
