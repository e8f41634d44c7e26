package kit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

var harnessSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "mock_provider", LabelNames: []string{"name"}},
	{Type: "override_data"},
	{Type: "run", LabelNames: []string{"name"}},
}}

var runSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "command", Required: true}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}},
}

// parsedHarness is a harness read back: its mocked providers, overridden
// data sources and, per run, the variables as JSON.
type parsedHarness struct {
	mocks     []string
	overrides []string
	runs      []string
	vars      map[string]map[string]any
}

func parseHarness(t *testing.T, src []byte) parsedHarness {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL(src, "h.tftest.hcl")
	if diags.HasErrors() {
		t.Fatalf("the harness does not parse: %s\n%s", diags, src)
	}
	content, diags := f.Body.Content(harnessSchema)
	if diags.HasErrors() {
		t.Fatalf("the harness has unexpected content: %s", diags)
	}
	h := parsedHarness{vars: map[string]map[string]any{}}
	for _, b := range content.Blocks {
		switch b.Type {
		case "mock_provider":
			h.mocks = append(h.mocks, b.Labels[0])
		case "override_data":
			attrs, _ := b.Body.JustAttributes()
			tr, diags := hcl.AbsTraversalForExpr(attrs["target"].Expr)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			h.overrides = append(h.overrides, tr.RootName()+"."+tr[1].(hcl.TraverseAttr).Name+"."+tr[2].(hcl.TraverseAttr).Name)
		case "run":
			name := b.Labels[0]
			h.runs = append(h.runs, name)
			rc, diags := b.Body.Content(runSchema)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if kw := hcl.ExprAsKeyword(rc.Attributes["command"].Expr); kw != "apply" {
				t.Errorf("run %s: command = %s, want apply", name, kw)
			}
			if len(rc.Blocks) != 1 {
				t.Fatalf("run %s has %d variables blocks", name, len(rc.Blocks))
			}
			attrs, diags := rc.Blocks[0].Body.JustAttributes()
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			h.vars[name] = map[string]any{}
			for n, a := range attrs {
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() {
					t.Fatalf("run %s variable %s: %s", name, n, diags)
				}
				b, err := ctyjson.Marshal(v, v.Type())
				if err != nil {
					t.Fatal(err)
				}
				var x any
				if err := json.Unmarshal(b, &x); err != nil {
					t.Fatal(err)
				}
				h.vars[name][n] = x
			}
		}
	}
	return h
}

// TestHarnessFeedsTheInputsAsCAPTFRendersThem: each run block's variables
// are exactly the scenario's terraform.tfvars.json from inputs.Render (Job
// Inputs), user variables included; every provider is mocked and every
// terraform_remote_state overridden.
func TestHarnessFeedsTheInputsAsCAPTFRendersThem(t *testing.T) {
	vars, err := inputs.ResolveVariables(contract.RoleMachine, nil, []byte(`{"instance_type":"small","disk_gb":20,"note":"${not_a_template}"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		role contract.Role
		o    HarnessOptions
	}{
		{"cluster", contract.RoleCluster, HarnessOptions{}},
		{"machine with user variables, providers and remote states", contract.RoleMachine,
			HarnessOptions{Variables: vars, Providers: []string{"aws", "random"}, RemoteStates: []string{"network"}}},
		{"machine with the cluster's exports", contract.RoleMachine, HarnessOptions{ClusterOutputs: json.RawMessage(`{"vpc":"vpc-1","zones":["a","b"],"n":3}`)}},
		{"machinepool", contract.RoleMachinePool, HarnessOptions{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := Harness(tt.role, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			h := parseHarness(t, src)
			if !slices.Equal(h.mocks, tt.o.Providers) {
				t.Errorf("mock_provider blocks %v, want %v", h.mocks, tt.o.Providers)
			}
			var wantOverrides []string
			for _, r := range tt.o.RemoteStates {
				wantOverrides = append(wantOverrides, "data.terraform_remote_state."+r)
			}
			if !slices.Equal(h.overrides, wantOverrides) {
				t.Errorf("override_data targets %v, want %v", h.overrides, wantOverrides)
			}
			scenarios := Scenarios(tt.role, tt.o.ClusterOutputs)
			if len(h.runs) != len(scenarios) {
				t.Fatalf("%d runs, want one per scenario (%d)", len(h.runs), len(scenarios))
			}
			for i, s := range scenarios {
				if h.runs[i] != s.Run {
					t.Errorf("run %d is %s, want %s", i, h.runs[i], s.Run)
				}
				r, err := inputs.Render(inputs.Request{Image: harnessImage, Inputs: s.Inputs, Variables: tt.o.Variables})
				if err != nil {
					t.Fatal(err)
				}
				var want map[string]any
				if err := json.Unmarshal(r.TFVars, &want); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(h.vars[s.Run], want) {
					got, _ := json.Marshal(h.vars[s.Run])
					t.Errorf("run %s variables:\n got %s\nwant %s", s.Run, got, r.TFVars)
				}
			}
		})
	}
}

// TestScenariosCoverTheRoles: the scenarios the brief of each role names
// exist, with the inputs that make them what they are.
func TestScenariosCoverTheRoles(t *testing.T) {
	tfvars := func(t *testing.T, s Scenario) map[string]any {
		r, err := inputs.Render(inputs.Request{Image: harnessImage, Inputs: s.Inputs})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(r.TFVars, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		role     contract.Role
		scenario string
		input    string
		want     any
	}{
		{contract.RoleCluster, "cluster with a module-created endpoint", contract.InputControlPlaneEndpoint, nil},
		{contract.RoleCluster, "cluster with an externally managed control-plane endpoint", contract.InputControlPlaneEndpoint, map[string]any{"host": "api.demo.example.com", "port": float64(6443)}},
		{contract.RoleMachine, "machine with bootstrap data", contract.InputControlPlane, false},
		{contract.RoleMachine, "control-plane machine with bootstrap data", contract.InputControlPlane, true},
		{contract.RoleMachine, "control-plane machine with bootstrap data", contract.InputFailureDomain, sampleFailureDomain},
		{contract.RoleMachinePool, "pool with autoscaling off", contract.InputAutoscaling, map[string]any{"enabled": false, "min": float64(0), "max": float64(0)}},
		{contract.RoleMachinePool, "pool with autoscaling on", contract.InputAutoscaling, map[string]any{"enabled": true, "min": float64(1), "max": float64(5)}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario+"/"+tt.input, func(t *testing.T) {
			i := slices.IndexFunc(Scenarios(tt.role, nil), func(s Scenario) bool { return s.Name == tt.scenario })
			if i < 0 {
				t.Fatalf("the %s role has no scenario %q", tt.role, tt.scenario)
			}
			got := tfvars(t, Scenarios(tt.role, nil)[i])[tt.input]
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s = %v, want %v", tt.input, got, tt.want)
			}
		})
	}
	for _, role := range []contract.Role{contract.RoleMachine, contract.RoleMachinePool} {
		for _, s := range Scenarios(role, nil) {
			if got := tfvars(t, s)[contract.InputBootstrapData]; got != "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6CiAgLSBlY2hvIGNhcHRmLWNvbnRyYWN0LXRlc3QK" {
				t.Errorf("%s: bootstrap_data is %v, want the base64 of SampleBootstrapData", s.Name, got)
			}
		}
	}
}

// openTofuStream is the shape of OpenTofu 1.12's tofu test -json -verbose
// stream (internal/command/views/test.go: the state as jsonstate prints it,
// outputs under values) for a passing run, a failing run, a skipped run and
// a file-level error; run "old" prints its state as Terraform 1.7+ does
// (jsonformat, outputs at the top).
const openTofuStream = `{"@level":"info","@message":"OpenTofu 1.12.6","@module":"tofu.ui","type":"version"}
not json at all
{"@level":"info","@message":"  \"ok\"... pass","@testfile":"t.tftest.hcl","@testrun":"ok","test_run":{"path":"t.tftest.hcl","run":"ok","status":"pass"},"type":"test_run"}
{"@level":"info","@message":"-verbose flag enabled, printing state","@testfile":"t.tftest.hcl","@testrun":"ok","test_state":{"format_version":"1.0","values":{"outputs":{"provider_id":{"sensitive":true,"value":"p:///1","type":"string"},"replicas":{"sensitive":false,"value":3,"type":"number"}},"root_module":{}}},"type":"test_state"}
{"@level":"info","@message":"-verbose flag enabled, printing state","@testfile":"t.tftest.hcl","@testrun":"old","test_state":{"state_format_version":"1.0","outputs":{"health":{"value":{"state":"running","healthy":true}}}},"type":"test_state"}
{"@level":"error","@message":"Error: boom","@testfile":"t.tftest.hcl","@testrun":"bad","diagnostic":{"severity":"error","summary":"boom","detail":"it\n  broke"},"type":"diagnostic"}
{"@level":"info","@message":"-verbose flag enabled, printing state","@testfile":"t.tftest.hcl","@testrun":"bad","test_state":{"outputs":{"provider_id":{"value":"half-done"}}},"type":"test_state"}
{"@level":"info","@message":"  \"bad\"... fail","@testfile":"t.tftest.hcl","@testrun":"bad","test_run":{"path":"t.tftest.hcl","run":"bad","status":"error"},"type":"test_run"}
{"@level":"info","@message":"  \"later\"... skip","@testfile":"t.tftest.hcl","@testrun":"later","test_run":{"path":"t.tftest.hcl","run":"later","status":"skip"},"type":"test_run"}
{"@level":"error","@message":"Error: file","@testfile":"t.tftest.hcl","diagnostic":{"severity":"error","summary":"file-level"},"type":"diagnostic"}
{"@level":"warn","@message":"Warning: w","@testrun":"ok","diagnostic":{"severity":"warning","summary":"ignored"},"type":"diagnostic"}
`

func TestParseStream(t *testing.T) {
	runs, err := parseStream([]byte(openTofuStream))
	if err != nil {
		t.Fatal(err)
	}
	ok := runs["ok"]
	if ok == nil || ok.status != "pass" || ok.state == nil || string(ok.outputs["provider_id"]) != `"p:///1"` || string(ok.outputs["replicas"]) != "3" || len(ok.diags) != 0 {
		t.Errorf("run ok: %+v", ok)
	}
	if old := runs["old"]; old == nil || !strings.Contains(string(old.outputs["health"]), "running") {
		t.Errorf("run old (Terraform's shape, outputs at the top): %+v", old)
	}
	if bad := runs["bad"]; bad == nil || bad.state != nil || !slices.Equal(bad.diags, []string{"boom: it broke"}) {
		t.Errorf("run bad: %+v", bad)
	}
	if later := runs["later"]; later == nil || later.status != "skip" {
		t.Errorf("run later: %+v", later)
	}
	if f := runs[""]; f == nil || !slices.Equal(f.diags, []string{"file-level"}) {
		t.Errorf("file-level diagnostics: %+v", f)
	}
	if _, err := parseStream([]byte("Error: no such command\n")); err == nil {
		t.Error("a stream with no run parsed")
	}
	if _, err := parseStream([]byte(`{"type":"test_state","@testrun":"x","test_state":"not an object"}`)); err == nil {
		t.Error("an unreadable state parsed")
	}
}

// TestVerdictFailures: the manager's verdict becomes one failure per
// output, named, with the condition reason; never a value.
func TestVerdictFailures(t *testing.T) {
	raw := contract.RawOutputs{
		contract.OutputProviderID: json.RawMessage(`"secret-looking-value-` + strings.Repeat("x", 600) + `"`),
		contract.OutputAddresses:  json.RawMessage(`[{"type":"Nope","address":"10.0.0.1"}]`),
	}
	fs := checkMachine(nil)(raw, []string{contract.OutputInterruptible})
	var got []string
	for _, f := range fs {
		got = append(got, f.Output)
		if strings.Contains(f.Message, "secret-looking-value") {
			t.Errorf("failure prints the value: %s", f)
		}
	}
	want := []string{contract.OutputInterruptible, contract.OutputProviderID, contract.OutputAddresses, contract.OutputHealth}
	if !slices.Equal(got, want) {
		t.Errorf("failures name %v, want %v (%v)", got, want, fs)
	}
	for _, tt := range []struct{ path, want string }{
		{"addresses[2].type", "addresses"}, {"health.state", "health"}, {"replicas", "replicas"},
	} {
		if got := outputOf(tt.path); got != tt.want {
			t.Errorf("outputOf(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if s := (Failure{Scenario: "a", Output: "b", Message: "c"}).String(); s != `scenario "a": output "b": c` {
		t.Errorf("Failure.String() = %s", s)
	}
	if !bytes.Contains([]byte(redact("x I2Nz y", [][]byte{[]byte("I2Nz")})), []byte("(sensitive)")) {
		t.Error("redact leaves the secret")
	}
}

// BenchmarkHarness generates a machine harness: two scenarios rendered by
// inputs.Render and written as HCL.
func BenchmarkHarness(b *testing.B) {
	o := HarnessOptions{Providers: []string{"aws"}, RemoteStates: []string{"network"}}
	for b.Loop() {
		if _, err := Harness(contract.RoleMachine, o); err != nil {
			b.Fatal(err)
		}
	}
}
