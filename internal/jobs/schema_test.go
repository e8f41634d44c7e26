package jobs

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// statusValidators validates values against the TerraformCluster CRD's
// OpenAPI schema for status.plan and status.lastRun: the same bounds the
// API server applies to a status patch.
func statusValidators(tb testing.TB) (plan, lastRun validation.SchemaValidator) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "infrastructure.cluster.x-k8s.io_terraformclusters.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		tb.Fatal(err)
	}
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	v := func(name string) validation.SchemaValidator {
		p, ok := status.Properties[name]
		if !ok {
			tb.Fatalf("the CRD has no status.%s", name)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&p, &internal, nil); err != nil {
			tb.Fatal(err)
		}
		sv, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			tb.Fatal(err)
		}
		return sv
	}
	return v("plan"), v("lastRun")
}

// schemaErrors validates obj (as its JSON) with sv.
func schemaErrors(tb testing.TB, sv validation.SchemaValidator, obj any) []error {
	tb.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	return sv.Validate(v).Errors
}

// decodeToStatus is the path of a plan Job's termination message into a
// TerraformCluster's status: DecodeResult, then status.plan and
// status.lastRun as the flow writes them.
func decodeToStatus(msg string) (*infrav1.PlanPreview, infrav1.LastRun, Result) {
	r := DecodeResult("captf-c-prod-plan-a1-0123456789", infrav1.OperationPlan, msg)
	created := metav1.Unix(1700000000, 0)
	return r.PlanPreview("captf-c-prod-plan-a1-0123456789", "h2:"+strings.Repeat("0", 64), created), r.LastRun, r
}

// TestResultStatusSchema: whatever a pod reports, status.plan and
// status.lastRun stay within the CRD's bounds (Security Model: results
// from pods are untrusted), and what was clamped is said.
func TestResultStatusSchema(t *testing.T) {
	planV, lastRunV := statusValidators(t)
	resources := []string{"module.a." + strings.Repeat("x", 700), ""}
	for range 70 {
		resources = append(resources, "module.b.r (create)")
	}
	tests := []struct {
		name    string
		plan    *result.Plan
		dropped bool
		clamped string
	}{
		{"negative counts become 0", &result.Plan{Hash: "p1:a", Add: -1, Change: -2, Destroy: math.MinInt64}, false, "plan add -1 clamped to 0"},
		{"counts over int32 are clamped", &result.Plan{Hash: "p1:a", Add: 1 << 40}, false, "clamped to 2147483647"},
		{"a 700-character address is cut, empties dropped, the list capped", &result.Plan{Hash: "p1:a", Resources: resources}, false, "cut to 600 bytes"},
		{"an empty hash drops the plan", &result.Plan{Add: 1}, true, "the plan was dropped"},
		{"a hash over 128 bytes drops the plan", &result.Plan{Hash: strings.Repeat("h", 129)}, true, "the plan was dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &result.Document{Version: result.Version, Op: infrav1.OperationPlan, Plan: tt.plan}
			raw, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			pl, lr, r := decodeToStatus(string(raw))
			if !r.Readable {
				t.Fatalf("unreadable: %s", r.Problem)
			}
			if (pl == nil) != tt.dropped {
				t.Fatalf("plan %+v, dropped want %v", pl, tt.dropped)
			}
			if pl != nil {
				if errs := schemaErrors(t, planV, pl); len(errs) > 0 {
					t.Fatalf("status.plan is refused: %v", errs)
				}
			}
			if errs := schemaErrors(t, lastRunV, lr); len(errs) > 0 {
				t.Fatalf("status.lastRun is refused: %v", errs)
			}
			if !strings.Contains(strings.Join(r.Clamped, "; "), tt.clamped) {
				t.Errorf("clamped notes %q do not say %q", r.Clamped, tt.clamped)
			}
		})
	}
}

// FuzzResultStatusSchema feeds arbitrary termination messages through
// DecodeResult into status.plan and status.lastRun and validates them
// against the CRD's OpenAPI schema (pure: the API server's own schema
// validator, without an API server): no panic, and every accepted document
// gives a status the API server would take.
func FuzzResultStatusSchema(f *testing.F) {
	planV, lastRunV := statusValidators(f)
	seed := &result.Document{Version: result.Version, Op: infrav1.OperationPlan,
		Steps: []result.Step{{Name: "plan", Exit: 0, Seconds: 1}},
		Plan:  &result.Plan{Hash: "p1:abc", Add: -1, Change: 3, Resources: []string{strings.Repeat("r", 650), ""}}}
	b, _ := json.Marshal(seed)
	f.Add(string(b))
	f.Add(`{"version":1,"op":"plan","plan":{"hash":"p1:x","add":99999999999,"change":0,"destroy":-3,"resources":["a","",""]}}`)
	f.Add(`{"version":1,"op":"plan","steps":[{"name":"","exit":-99999999999,"seconds":-1}],"error":{"kind":"step","step":"","tail":"\xff"}}`)
	f.Add(`{"version":1,"op":"plan"} trailing`)
	f.Fuzz(func(t *testing.T, msg string) {
		pl, lr, r := decodeToStatus(msg)
		if !r.Readable {
			return
		}
		if pl != nil {
			if errs := schemaErrors(t, planV, pl); len(errs) > 0 {
				t.Fatalf("status.plan is refused: %v", errs)
			}
		}
		if errs := schemaErrors(t, lastRunV, lr); len(errs) > 0 {
			t.Fatalf("status.lastRun is refused: %v", errs)
		}
	})
}
