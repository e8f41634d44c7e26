package inputs

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Job Inputs §2, "A trimmed real example" of the cluster role.
const bookClusterTFVars = `{
  "captf_contract": "v1alpha1",
  "captf_cluster": { "name": "prod", "namespace": "team-a" },
  "captf_object": { "kind": "TerraformCluster", "name": "prod", "namespace": "team-a" },
  "captf_tags": {
    "captf.io/cluster": "prod",
    "captf.io/kind": "TerraformCluster",
    "captf.io/managed-by": "captf",
    "captf.io/name": "prod",
    "captf.io/namespace": "team-a",
    "captf.io/template": ""
  },
  "control_plane_endpoint": { "host": "api.prod.example.com", "port": 6443 },
  "kubernetes_version": "v1.36.2",
  "control_plane_initialized": true,
  "cluster_network": {
    "pods": ["192.168.0.0/16"],
    "services": ["10.96.0.0/12"],
    "service_domain": "cluster.local",
    "api_server_port": 6443
  }
}`

// Job Inputs §3, "A trimmed real example" of the machine role. The book
// trims bootstrap_data with "..."; bookBootstrap is the payload whose
// base64 is the part shown.
const bookMachineTFVars = `{
  "captf_contract": "v1alpha1",
  "captf_object": { "kind": "TerraformMachine", "name": "prod-md-0-abcde", "namespace": "team-a" },
  "captf_cluster_outputs": { "network_id": "net-1", "note": "a<b & c>d" },
  "machine_name": "prod-md-0-abcde-xyz12",
  "bootstrap_data": "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6",
  "bootstrap_format": "cloud-config",
  "failure_domain": null,
  "kubernetes_version": "v1.36.2",
  "control_plane": false
}`

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	return m
}

func mustRender(t testing.TB, req Request) *Rendered {
	t.Helper()
	r, err := Render(req)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return r
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run go test -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inputs RoleInputs
	}{
		{"cluster", bookCluster()},
		{"machine", bookMachine()},
		{"machinepool", bookPool()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, Request{Image: bookImage, Inputs: tc.inputs})
			golden(t, tc.name+"/"+contract.MainFile, r.MainTF)
			golden(t, tc.name+"/"+contract.TFVarsFile, r.TFVars)
			golden(t, tc.name+"/hash", []byte(r.Hash+"\n"))
		})
	}
}

func TestBackendOnlyRoot_DeclaresOnlyThePartialBackend(t *testing.T) {
	want := "{\n  \"terraform\": {\n    \"backend\": {\n      \"kubernetes\": {}\n    }\n  }\n}\n"
	if got := string(BackendOnlyRoot()); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBookExample_ClusterRoleInputsMatchJobInputsSection2(t *testing.T) {
	r := mustRender(t, Request{Image: bookImage, Inputs: bookCluster()})
	got, want := decodeJSON(t, r.TFVars), decodeJSON(t, []byte(bookClusterTFVars))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cluster tfvars differ from the book's example:\ngot  %v\nwant %v", got, want)
	}
}

func TestBookExample_ClusterRoleHasNoClusterOutputsAtAll(t *testing.T) {
	r := mustRender(t, Request{Image: bookImage, Inputs: bookCluster()})
	if bytes.Contains(r.TFVars, []byte(contract.InputClusterOutputs)) || bytes.Contains(r.MainTF, []byte(contract.InputClusterOutputs)) {
		t.Errorf("the cluster role declares or sets %s; it has no such input at all, not even null", contract.InputClusterOutputs)
	}
}

func TestBookExample_MachineRoleInputsMatchJobInputsSection3(t *testing.T) {
	r := mustRender(t, Request{Image: bookImage, Inputs: bookMachine()})
	got, want := decodeJSON(t, r.TFVars), decodeJSON(t, []byte(bookMachineTFVars))
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %v, the book shows %v", k, got[k], w)
		}
	}
	// The example is trimmed: what it leaves out is exactly captf_cluster
	// and captf_tags.
	var extra []string
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if !reflect.DeepEqual(extra, []string{contract.InputCluster, contract.InputTags}) {
		t.Errorf("keys beyond the trimmed example: %v", extra)
	}
}

func TestBookExample_MachineKeepsExportsBytesButPoolHTMLEscapes(t *testing.T) {
	m := mustRender(t, Request{Image: bookImage, Inputs: bookMachine()})
	p := mustRender(t, Request{Image: bookImage, Inputs: bookPool()})

	// Job Inputs §3: the machine role keeps '<', '&' and '>' as they are.
	if !bytes.Contains(m.TFVars, []byte(`"note": "a<b & c>d"`)) {
		t.Errorf("machine tfvars do not keep the exports bytes:\n%s", m.TFVars)
	}
	// Job Inputs §4: the pool role's renderer HTML-escapes them.
	if !bytes.Contains(p.TFVars, []byte(`"note": "a\u003cb \u0026 c\u003ed"`)) {
		t.Errorf("pool tfvars do not HTML-escape the exports value:\n%s", p.TFVars)
	}
	if bytes.ContainsAny(p.TFVars, "<>&") {
		t.Errorf("pool tfvars carry a literal '<', '>' or '&'")
	}
	// Both decode to the same string, so a module never sees a difference.
	mv := decodeJSON(t, m.TFVars)[contract.InputClusterOutputs]
	pv := decodeJSON(t, p.TFVars)[contract.InputClusterOutputs]
	if !reflect.DeepEqual(mv, pv) {
		t.Errorf("machine and pool decode captf_cluster_outputs differently: %v vs %v", mv, pv)
	}
	if got := pv.(map[string]any)["note"]; got != "a<b & c>d" {
		t.Errorf("pool note decodes to %q", got)
	}
}

func TestBookExample_MainDeclaresEveryInputAndReexportsEveryOutputSensitive(t *testing.T) {
	for _, in := range []RoleInputs{bookCluster(), bookMachine(), bookPool()} {
		role := in.Role()
		t.Run(string(role), func(t *testing.T) {
			r := mustRender(t, Request{Image: bookImage, Inputs: in, Variables: Variables{
				Values:    map[string]any{"instance_type": "m6i.xlarge", "db_password": "s3cret"},
				Sensitive: map[string]bool{"db_password": true},
			}})
			doc := decodeJSON(t, r.MainTF)
			backend := doc["terraform"].(map[string]any)["backend"].(map[string]any)
			if !reflect.DeepEqual(backend, map[string]any{"kubernetes": map[string]any{}}) {
				t.Errorf("backend = %v, want the partial kubernetes stub", backend)
			}
			vars := doc["variable"].(map[string]any)
			call := doc["module"].(map[string]any)[ModuleName].(map[string]any)
			if call["source"] != ModuleSource {
				t.Errorf("module source = %v", call["source"])
			}
			tfvars := decodeJSON(t, r.TFVars)
			for _, input := range role.Inputs() {
				decl, ok := vars[input.Name].(map[string]any)
				if !ok {
					t.Errorf("no root variable %s", input.Name)
					continue
				}
				if _, hasDefault := decl["default"]; hasDefault != input.Nullable || hasDefault && decl["default"] != nil {
					t.Errorf("%s: nullable inputs (only) get \"default\": null; got %v", input.Name, decl)
				}
				if (decl["sensitive"] == true) != (input.Name == contract.InputBootstrapData) {
					t.Errorf("%s: sensitive = %v; only bootstrap_data is", input.Name, decl["sensitive"])
				}
				if call[input.Name] != "${var."+input.Name+"}" {
					t.Errorf("module argument %s = %v, want forwarded by name", input.Name, call[input.Name])
				}
				if _, ok := tfvars[input.Name]; !ok {
					t.Errorf("tfvars lack %s", input.Name)
				}
			}
			if d := vars["instance_type"].(map[string]any); len(d) != 0 {
				t.Errorf("a ConfigMap/inline user variable is declared without a type and not sensitive, got %v", d)
			}
			if d := vars["db_password"].(map[string]any); !reflect.DeepEqual(d, map[string]any{"sensitive": true}) {
				t.Errorf("a Secret-sourced user variable is declared sensitive only, got %v", d)
			}
			if call["db_password"] != "${var.db_password}" || tfvars["instance_type"] != "m6i.xlarge" {
				t.Errorf("user variables are not forwarded and valued")
			}
			if len(vars) != len(role.Inputs())+2 || len(call) != len(role.Inputs())+3 {
				t.Errorf("root declares %d variables and passes %d arguments: nothing else may be passed", len(vars), len(call))
			}
			outs := doc["output"].(map[string]any)
			if len(outs) != len(role.Outputs()) {
				t.Errorf("root re-exports %d outputs, want %d", len(outs), len(role.Outputs()))
			}
			for _, o := range role.Outputs() {
				want := map[string]any{"value": "${module.role." + o.Name + "}", "sensitive": true}
				if !reflect.DeepEqual(outs[o.Name], want) {
					t.Errorf("output %s = %v, want %v", o.Name, outs[o.Name], want)
				}
			}
		})
	}
}

func TestHashFilesEqualsRenderHash(t *testing.T) {
	vars := Variables{
		Values:    map[string]any{"size": "large", "ids": []any{json.Number("1"), "b"}},
		Sensitive: map[string]bool{"ids": true},
	}
	auto := bookPool()
	auto.Autoscaling = Autoscaling{Enabled: true, Min: 1, Max: 5}
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"cluster", Request{Image: bookImage, Inputs: bookCluster()}},
		{"machine", Request{Image: bookImage, Inputs: bookMachine(), Variables: vars}},
		{"machinepool", Request{Image: bookImage, Inputs: bookPool(), Variables: vars}},
		{"machinepool autoscaling", Request{Image: bookImage, Inputs: auto}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, tc.req)
			h, err := HashFiles(r.Role, tc.req.Image, r.MainTF, r.TFVars)
			if err != nil {
				t.Fatal(err)
			}
			if h != r.Hash {
				t.Errorf("HashFiles = %s, Render = %s", h, r.Hash)
			}
			if !strings.HasPrefix(h, "h2:") || len(h) != len("h2:")+64 {
				t.Errorf("hash %q is not h2:<sha256 hex>", h)
			}
		})
	}
}
