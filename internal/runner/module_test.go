package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

// TestDeclaredOutputs: the runner learns which outputs a module declares
// from every configuration file the runtime loads (Runtime Environment,
// "Working directory and the generated root"), in both syntaxes.
func TestDeclaredOutputs(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    []string
		wantErr bool
	}{
		{
			name: "native_syntax_outputs_across_files",
			files: map[string]string{
				"main.tf":    `output "provider_id" { value = "x" }` + "\n" + `output "health" { value = null }`,
				"outputs.tf": `output "addresses" { value = [] }`,
			},
			want: []string{"addresses", "health", "provider_id"},
		},
		{
			name: "json_syntax_object_and_array_forms",
			files: map[string]string{
				"a.tf.json": `{"output": {"replicas": {"value": 1}}}`,
				"b.tf.json": `{"output": [{"instances": {"value": []}}]}`,
			},
			want: []string{"instances", "replicas"},
		},
		{
			name: "tofu_files_count_and_shadow_their_tf_twin",
			files: map[string]string{
				"main.tf":   `output "only_in_tf" { value = 1 }`,
				"main.tofu": `output "health" { value = null }`,
				"extra.tf":  `output "exports" { value = {} }`,
			},
			want: []string{"exports", "health"},
		},
		{
			name: "hidden_backup_and_other_files_are_not_configuration",
			files: map[string]string{
				"main.tf":      `output "health" { value = null }`,
				".hidden.tf":   `output "a" { value = 1 }`,
				"main.tf~":     `output "b" { value = 1 }`,
				"README.md":    `output "c" { value = 1 }`,
				"sub/inner.tf": `output "d" { value = 1 }`,
			},
			want: []string{"health"},
		},
		{
			name:  "no_outputs_at_all",
			files: map[string]string{"main.tf": `variable "captf_tags" { type = map(string) }`},
			want:  []string{},
		},
		{
			name:    "unparsable_file_leaves_the_outputs_unchecked",
			files:   map[string]string{"main.tf": `output "health" {`},
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				write(t, filepath.Join(dir, name), content, 0o644)
			}
			got, err := DeclaredOutputs(dir)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("DeclaredOutputs = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("declared = %v, want %v", names, tc.want)
			}
		})
	}
}

// renderedMain renders the generated root of a role as the manager does.
func renderedMain(t *testing.T, role contract.Role) []byte {
	t.Helper()
	var in inputs.RoleInputs
	common := inputs.Common{Cluster: inputs.ObjectRef{Name: "c", Namespace: "ns"}, Object: inputs.ObjectRef{Name: "o", Namespace: "ns"}}
	switch role {
	case contract.RoleCluster:
		in = &inputs.ClusterInputs{Common: common}
	case contract.RoleMachine:
		in = &inputs.MachineInputs{Common: common, MachineName: "m", BootstrapFormat: "cloud-config"}
	default:
		in = &inputs.MachinePoolInputs{Common: common, MachinePoolName: "p", BootstrapFormat: "cloud-config"}
	}
	r, err := inputs.Render(inputs.Request{Image: "registry.example/m:v1", Inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	return r.MainTF
}

// TestPruneRootOutputs: the generated root re-exports only the contract
// outputs the module declares, and the others are reported (Module
// Contract, "Null semantics": an absent output is OutputsMissing, not a
// failed run).
func TestPruneRootOutputs(t *testing.T) {
	all := func(r contract.Role) map[string]bool {
		m := map[string]bool{}
		for _, n := range r.OutputNames() {
			m[n] = true
		}
		return m
	}
	without := func(r contract.Role, names ...string) map[string]bool {
		m := all(r)
		for _, n := range names {
			delete(m, n)
		}
		return m
	}
	tests := []struct {
		name     string
		role     contract.Role
		declared map[string]bool
		want     []string
	}{
		{"module_declaring_every_contract_output_keeps_the_root_as_rendered", contract.RoleMachine, all(contract.RoleMachine), nil},
		{"extra_module_outputs_change_nothing", contract.RoleCluster, func() map[string]bool { m := all(contract.RoleCluster); m["extra"] = true; return m }(), nil},
		{"machine_without_interruptible", contract.RoleMachine, without(contract.RoleMachine, contract.OutputInterruptible), []string{"interruptible"}},
		{"cluster_without_exports_and_health", contract.RoleCluster, without(contract.RoleCluster, contract.OutputExports, contract.OutputHealth), []string{"exports", "health"}},
		{"pool_declaring_nothing", contract.RoleMachinePool, map[string]bool{}, []string{"health", "instances", "provider_id", "provider_id_list", "replicas"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rendered := renderedMain(t, tc.role)
			write(t, filepath.Join(root, MainFile), string(rendered), 0o600)
			got, err := PruneRootOutputs(root, tc.declared)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("undeclared = %v, want %v", got, tc.want)
			}
			b, err := os.ReadFile(filepath.Join(root, MainFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 && string(b) != string(rendered) {
				t.Errorf("the root was rewritten although nothing is undeclared")
			}
			var doc struct {
				Terraform json.RawMessage            `json:"terraform"`
				Variable  map[string]json.RawMessage `json:"variable"`
				Module    map[string]json.RawMessage `json:"module"`
				Output    map[string]struct {
					Value     string `json:"value"`
					Sensitive bool   `json:"sensitive"`
				} `json:"output"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("the pruned root is not valid JSON: %v", err)
			}
			if doc.Terraform == nil || len(doc.Variable) == 0 || doc.Module[inputs.ModuleName] == nil {
				t.Errorf("the pruned root lost its backend, variables or module call")
			}
			for _, n := range tc.role.OutputNames() {
				o, kept := doc.Output[n]
				if kept == slices.Contains(tc.want, n) {
					t.Errorf("root output %s kept = %v, want %v", n, kept, !kept)
				}
				if kept && (o.Value != "${module.role."+n+"}" || !o.Sensitive) {
					t.Errorf("root output %s = %+v, want the sensitive re-export of module.role.%s", n, o, n)
				}
			}
		})
	}
}
