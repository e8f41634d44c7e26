package lint

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// schemaValidator checks a JSON value against a JSON Schema draft-04
// document, with the keywords the SARIF 2.1.0 schema uses: $ref (local),
// type, properties, additionalProperties, required, items, minItems,
// uniqueItems, minimum, maximum, pattern, format (uri, uri-reference,
// date-time), enum, anyOf and oneOf.
type schemaValidator struct {
	root map[string]any
}

func (v *schemaValidator) validate(s map[string]any, x any, at string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if !ok {
			return []string{at + ": unsupported $ref " + ref}
		}
		def, ok := v.root["definitions"].(map[string]any)[name].(map[string]any)
		if !ok {
			return []string{at + ": unknown $ref " + ref}
		}
		return v.validate(def, x, at)
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	if t, ok := s["type"]; ok {
		var types []string
		switch tt := t.(type) {
		case string:
			types = []string{tt}
		case []any:
			for _, e := range tt {
				types = append(types, e.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return jsonIs(x, t) }) {
			fail("is not of type %v", types)
			return errs
		}
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(c any) bool { return reflect.DeepEqual(c, x) }) {
		fail("is not one of %v", e)
	}
	switch xv := x.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := xv[r]; !ok {
				fail("lacks required property %q", r)
			}
		}
		for k, val := range xv {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, v.validate(ps, val, at+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("has unexpected property %q", k)
				}
			case map[string]any:
				errs = append(errs, v.validate(ap, val, at+"."+k)...)
			}
		}
	case []any:
		if m, ok := s["minItems"].(float64); ok && float64(len(xv)) < m {
			fail("has fewer than %v items", m)
		}
		if u, _ := s["uniqueItems"].(bool); u {
			for i := range xv {
				for j := range i {
					if reflect.DeepEqual(xv[i], xv[j]) {
						fail("items %d and %d are equal", j, i)
					}
				}
			}
		}
		if is, ok := s["items"].(map[string]any); ok {
			for i, e := range xv {
				errs = append(errs, v.validate(is, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case float64:
		if m, ok := s["minimum"].(float64); ok && xv < m {
			fail("is below %v", m)
		}
		if m, ok := s["maximum"].(float64); ok && xv > m {
			fail("is above %v", m)
		}
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(xv) {
			fail("does not match %s", p)
		}
		switch s["format"] {
		case "uri":
			if u, err := url.Parse(xv); err != nil || !u.IsAbs() {
				fail("is not an absolute URI")
			}
		case "uri-reference":
			if _, err := url.Parse(xv); err != nil {
				fail("is not a URI reference")
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339, xv); err != nil {
				fail("is not a date-time")
			}
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		if !slices.ContainsFunc(anyOf, func(sub any) bool { return len(v.validate(sub.(map[string]any), x, at)) == 0 }) {
			fail("matches none of anyOf")
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		n := 0
		for _, sub := range one {
			if len(v.validate(sub.(map[string]any), x, at)) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of oneOf, want 1", n)
		}
	}
	return errs
}

func asStrings(x any) []string {
	var out []string
	l, _ := x.([]any)
	for _, e := range l {
		out = append(out, e.(string))
	}
	return out
}

func jsonIs(x any, t string) bool {
	switch t {
	case "object":
		_, ok := x.(map[string]any)
		return ok
	case "array":
		_, ok := x.([]any)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "boolean":
		_, ok := x.(bool)
		return ok
	case "null":
		return x == nil
	case "number":
		_, ok := x.(float64)
		return ok
	case "integer":
		f, ok := x.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}

func sarifSchema(t *testing.T) *schemaValidator {
	t.Helper()
	b, err := os.ReadFile("testdata/sarif-2.1.0-rtm.5.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return &schemaValidator{root: root}
}

func (v *schemaValidator) check(t *testing.T, what, doc string) map[string]any {
	t.Helper()
	var x map[string]any
	if err := json.Unmarshal([]byte(doc), &x); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", what, err, doc)
	}
	for _, e := range v.validate(v.root, x, "$") {
		t.Errorf("%s: %s", what, e)
	}
	return x
}

// TestSARIFValidatesAgainstTheSchema: the SARIF log of every module corpus
// case and of an image validates against the SARIF 2.1.0 schema, has one
// rule per check ID with its help text, and one result per finding.
func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	v := sarifSchema(t)
	// The validator itself rejects a broken log.
	if errs := v.validate(v.root, map[string]any{"version": "2.0.0", "runs": []any{}}, "$"); len(errs) == 0 {
		t.Fatal("the schema validator accepts a log with a wrong version")
	}
	for _, c := range readCorpus(t) {
		dir := c.materialize(t)
		code, out, stderr := run("module", dir, "--role", string(c.role), "--format", "sarif")
		if code != c.wantExit(false) {
			t.Errorf("%s: exit %d\n%s", c.name, code, stderr)
		}
		log := v.check(t, c.name, out)
		run0 := log["runs"].([]any)[0].(map[string]any)
		rules := run0["tool"].(map[string]any)["driver"].(map[string]any)["rules"].([]any)
		if len(rules) != len(Checks()) {
			t.Fatalf("%d rules, want one per check (%d)", len(rules), len(Checks()))
		}
		results := run0["results"].([]any)
		if len(results) != len(c.want) {
			t.Errorf("%s: %d results, want %d", c.name, len(results), len(c.want))
		}
		for i, r := range results {
			res := r.(map[string]any)
			idx := int(res["ruleIndex"].(float64))
			if rules[idx].(map[string]any)["id"] != res["ruleId"] || res["ruleId"] != c.want[i].ID {
				t.Errorf("%s: result %d rule %v/%d, want %s", c.name, i, res["ruleId"], idx, c.want[i].ID)
			}
			if rules[idx].(map[string]any)["help"].(map[string]any)["text"] == "" {
				t.Errorf("rule %s has no help text", res["ruleId"])
			}
			if c.want[i].File != "" {
				loc := res["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
				if loc["artifactLocation"].(map[string]any)["uri"] != c.want[i].File {
					t.Errorf("%s: location %v, want %s", c.name, loc, c.want[i].File)
				}
			}
		}
	}
	spec := baseImageSpec(t, "machine", "amd64")
	spec.User = ""
	code, out, _ := run("image", writeLayout(t, buildImage(t, spec)), "--role", "machine", "--format", "sarif", "--strict")
	if code != ExitFindings {
		t.Errorf("image: exit %d", code)
	}
	v.check(t, "image", out)
}
