package terraformmachine

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

func machineOutputs(addresses string) contract.RawOutputs {
	return contract.RawOutputs{
		contract.OutputProviderID:    json.RawMessage(`"noop:///ns/m"`),
		contract.OutputAddresses:     json.RawMessage(addresses),
		contract.OutputFailureDomain: json.RawMessage(`null`),
		contract.OutputInterruptible: json.RawMessage(`false`),
		contract.OutputHealth:        json.RawMessage(`{"state":"running","healthy":true}`),
	}
}

// TestStatusAddresses: Module Contract, "Null semantics": empty collections
// are meaningful and distinct from null; addresses = [] means provisioned
// with no addresses. status.addresses is written as [] for [] and left out
// for null, and both the JSON the client sends and the unstructured form
// the patch helper diffs keep that difference, so Cluster API (which copies
// a present status.addresses, [] included, and ignores an absent one) clears
// the Machine's addresses only for [].
func TestStatusAddresses(t *testing.T) {
	tests := []struct {
		name      string
		addresses string
		present   bool
		want      string
	}{
		{"null_semantics/empty_list_is_written_as_an_empty_list", `[]`, true, `[]`},
		{"null_semantics/null_is_absent", `null`, false, ``},
		{"null_semantics/a_list_is_written_in_canonical_order", `[{"type":"Hostname","address":"h"},{"type":"InternalIP","address":"10.0.0.1"}]`, true,
			`[{"type":"InternalIP","address":"10.0.0.1"},{"type":"Hostname","address":"h"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, v := contract.DecodeMachineOutputs(machineOutputs(tc.addresses), contract.MachineFacts{})
			if v.Status == contract.StatusFalse {
				t.Fatalf("verdict %s: %s", v.Reason, v.Message)
			}
			tm := &infrav1.TerraformMachine{}
			tm.Status.Addresses = statusAddresses(out.Addresses)

			b, err := json.Marshal(tm.Status)
			if err != nil {
				t.Fatal(err)
			}
			var status map[string]json.RawMessage
			if err := json.Unmarshal(b, &status); err != nil {
				t.Fatal(err)
			}
			got, present := status["addresses"]
			if present != tc.present || (present && string(got) != tc.want) {
				t.Errorf("JSON status %s: addresses present %v = %s, want present %v = %s", b, present, got, tc.present, tc.want)
			}

			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tm)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := u["status"].(map[string]any)
			ua, uPresent := st["addresses"]
			if uPresent != tc.present {
				t.Errorf("unstructured status %v: addresses present %v, want %v", st, uPresent, tc.present)
			}
			if l, ok := ua.([]any); tc.want == `[]` && (!ok || len(l) != 0) {
				t.Errorf("unstructured addresses = %#v, want an empty list", ua)
			}
		})
	}
}

// TestWriteOutputs: Contract - Machine Role, "addresses": a violation is
// OutputsValid=False/OutputsInvalid, and nothing is written; pending
// outputs write what is known.
func TestWriteOutputs(t *testing.T) {
	tests := []struct {
		name      string
		addresses string
		facts     contract.MachineFacts
		want      bool
	}{
		{"machine_role/valid_outputs_are_written", `[]`, contract.MachineFacts{}, true},
		{"machine_role/pending_outputs_write_what_is_known", `null`, contract.MachineFacts{}, true},
		{"machine_role/an_invalid_address_writes_nothing", `[{"type":"InternalIP","address":"10.0.0.1"},{"type":"PublicIP","address":"1.1.1.1"}]`, contract.MachineFacts{}, false},
		{"machine_role/a_missing_output_writes_nothing", `[]`, contract.MachineFacts{Undeclared: []string{contract.OutputInterruptible}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, v := contract.DecodeMachineOutputs(machineOutputs(tc.addresses), tc.facts)
			if got := writeOutputs(v); got != tc.want {
				t.Errorf("writeOutputs(%s) = %v, want %v", v.Reason, got, tc.want)
			}
		})
	}
}
