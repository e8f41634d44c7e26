package terraformmachinepool

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

func ptr32(v int32) *int32 { return &v }

// TestPlanWriteBack: Contract - MachinePool Role, "Write-back
// (autoscaling.enabled)" and the autoscaling input: CAPTF claims
// cluster.x-k8s.io/replicas-managed-by when it is absent or "false" (Cluster
// API counts any other value as set), leaves a foreign truthy value alone,
// writes the raw observed replicas while it holds the claim, and with
// autoscaling off removes only its own claim.
func TestPlanWriteBack(t *testing.T) {
	const key = infrav1.ReplicasManagedByAnnotation
	tests := []struct {
		name    string
		ann     map[string]string
		enabled bool
		status  *int32
		spec    *int32
		want    writeBack
	}{
		{"write_back/absent_is_claimed_and_replicas_written", nil, true, ptr32(4), ptr32(3), writeBack{claim: true, replicas: ptr32(4)}},
		{"write_back/false_counts_as_absent_and_is_claimed", map[string]string{key: "false"}, true, ptr32(4), ptr32(3), writeBack{claim: true, replicas: ptr32(4)}},
		{"write_back/false_is_claimed_even_before_replicas_are_known", map[string]string{key: "false"}, true, nil, ptr32(3), writeBack{claim: true}},
		{"write_back/empty_value_is_truthy_for_cluster_api_and_foreign", map[string]string{key: ""}, true, ptr32(4), ptr32(3), writeBack{}},
		{"write_back/a_foreign_truthy_value_is_left_alone", map[string]string{key: "cluster-autoscaler"}, true, ptr32(4), ptr32(3), writeBack{}},
		{"write_back/own_claim_writes_the_raw_observed_value", map[string]string{key: infrav1.ReplicasManagedByCAPTF}, true, ptr32(9), nil, writeBack{replicas: ptr32(9)}},
		{"write_back/own_claim_with_equal_replicas_changes_nothing", map[string]string{key: infrav1.ReplicasManagedByCAPTF}, true, ptr32(3), ptr32(3), writeBack{}},
		{"write_back/disabled_releases_only_its_own_claim", map[string]string{key: infrav1.ReplicasManagedByCAPTF}, false, ptr32(4), ptr32(3), writeBack{release: true}},
		{"write_back/disabled_leaves_false_alone", map[string]string{key: "false"}, false, ptr32(4), ptr32(3), writeBack{}},
		{"write_back/disabled_leaves_a_foreign_value_alone", map[string]string{key: "other"}, false, ptr32(4), ptr32(3), writeBack{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := planWriteBack(tc.ann, tc.enabled, tc.status, tc.spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("planWriteBack = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAutoscalingCondition: Machine Pools, "Choose fixed replicas or
// autoscaling": AutoscalingActive is True/ReplicasManagedByModule only with
// both annotations valid and replicas-managed-by absent, "false" or CAPTF's;
// a foreign truthy value is ReplicasManagedExternally (no write-back); an
// invalid pair or none keeps the parse's reason.
func TestAutoscalingCondition(t *testing.T) {
	const key = infrav1.ReplicasManagedByAnnotation
	on := map[string]string{inputs.AutoscalerMinSizeAnnotation: "2", inputs.AutoscalerMaxSizeAnnotation: "5"}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{k: v}
		for bk, bv := range base {
			m[bk] = bv
		}
		return m
	}
	tests := []struct {
		name   string
		ann    map[string]string
		status metav1.ConditionStatus
		reason string
	}{
		{"autoscaling/valid_unclaimed_is_active", on, metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason},
		{"autoscaling/valid_with_false_is_active", with(on, key, "false"), metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason},
		{"autoscaling/valid_with_own_claim_is_active", with(on, key, infrav1.ReplicasManagedByCAPTF), metav1.ConditionTrue, infrav1.ReplicasManagedByModuleReason},
		{"autoscaling/valid_with_a_foreign_claim_is_external", with(on, key, "cluster-autoscaler"), metav1.ConditionFalse, infrav1.ReplicasManagedExternallyReason},
		{"autoscaling/valid_with_an_empty_claim_is_external", with(on, key, ""), metav1.ConditionFalse, infrav1.ReplicasManagedExternallyReason},
		{"autoscaling/no_annotation_is_disabled", nil, metav1.ConditionFalse, infrav1.AutoscalingDisabledReason},
		{"autoscaling/min_above_max_is_invalid", map[string]string{inputs.AutoscalerMinSizeAnnotation: "5", inputs.AutoscalerMaxSizeAnnotation: "2"},
			metav1.ConditionFalse, infrav1.AutoscalingAnnotationsInvalidReason},
		{"autoscaling/invalid_with_a_foreign_claim_stays_invalid", map[string]string{inputs.AutoscalerMinSizeAnnotation: "x", inputs.AutoscalerMaxSizeAnnotation: "2", key: "other"},
			metav1.ConditionFalse, infrav1.AutoscalingAnnotationsInvalidReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := autoscalingFinding(inputs.ParseAutoscaling(tc.ann), tc.ann)
			status, reason, message := metav1.ConditionFalse, c.Reason, c.Message
			if c.Active {
				status = metav1.ConditionTrue
			}
			if status != tc.status || reason != tc.reason {
				t.Errorf("got %s/%s (%s), want %s/%s", status, reason, message, tc.status, tc.reason)
			}
			if status == metav1.ConditionFalse && reason != infrav1.AutoscalingDisabledReason && message == "" {
				t.Error("a False condition other than AutoscalingDisabled needs a message")
			}
		})
	}
}

// stateSecret is a cluster's state Secret as OpenTofu's kubernetes backend
// writes it, with the given root outputs.
func stateSecret(t *testing.T, namespace, suffix string, outputs map[string]any) *corev1.Secret {
	t.Helper()
	outs := map[string]any{}
	for k, v := range outputs {
		outs[k] = map[string]any{"value": v, "type": "dynamic"}
	}
	doc, err := json.Marshal(map[string]any{"version": 4, "terraform_version": "1.12.6", "serial": 3,
		"lineage": "0e5c1f6a-1111-2222-3333-444455556666", "outputs": outs, "resources": []any{}, "check_results": nil})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(doc)
	zw.Close()
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: state.SecretName(suffix), Namespace: namespace, Labels: map[string]string{
			state.BackendStateLabel: "true", state.BackendSuffixLabel: suffix, state.BackendWorkspaceLabel: "default",
			state.BackendManagedByLabel: "terraform", infrav1.ManagedLabel: "true",
		}, Annotations: map[string]string{"encoding": "gzip"}},
		Data: map[string][]byte{state.DataKey: z.Bytes()},
	}
}

// TestClusterFailureDomains: Contract - MachinePool Role,
// "cluster_failure_domains": the names are read from the cluster's own
// state, off its failure_domains output, at render time, not from
// TerraformCluster.status.failureDomains.
func TestClusterFailureDomains(t *testing.T) {
	const ns = "team-a"
	suffix, err := state.Suffix(ns, "TerraformCluster", "prod")
	if err != nil {
		t.Fatal(err)
	}
	tc := func(ann map[string]string) *infrav1.TerraformCluster {
		c := &infrav1.TerraformCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: ns, Annotations: ann}}
		// What status says is stale: a moved cluster's status is empty, an
		// edited one may differ. It must never be read.
		c.Status.FailureDomains = []clusterv1.FailureDomain{{Name: "from-status"}}
		return c
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cluster  *infrav1.TerraformCluster
		outputs  map[string]any
		noState  bool
		want     []string
		wantWait bool
	}{
		{name: "machinepool_role/names_come_from_the_cluster_state_in_module_order", cluster: tc(nil),
			outputs: map[string]any{contract.OutputFailureDomains: []any{map[string]any{"name": "b"}, map[string]any{"name": "a", "control_plane": false}}},
			want:    []string{"b", "a"}},
		{name: "machinepool_role/null_failure_domains_are_empty", cluster: tc(nil), outputs: map[string]any{contract.OutputFailureDomains: nil}, want: []string{}},
		{name: "machinepool_role/an_output_absent_from_state_is_empty", cluster: tc(nil), outputs: map[string]any{}, want: []string{}},
		{name: "machinepool_role/an_invalid_output_waits", cluster: tc(nil),
			outputs:  map[string]any{contract.OutputFailureDomains: []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}},
			wantWait: true},
		{name: "machinepool_role/no_cluster_state_waits", cluster: tc(nil), noState: true, wantWait: true},
		{name: "machinepool_role/externally_managed_cluster_has_no_state_and_gives_none",
			cluster: tc(map[string]string{clusterv1.ManagedByAnnotation: "someone"}), noState: true, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			if !tt.noState {
				b = b.WithObjects(stateSecret(t, ns, suffix, tt.outputs))
			}
			got, wait := clusterFailureDomains(context.Background(), b.Build(), tt.cluster)
			if (wait != nil) != tt.wantWait {
				t.Fatalf("wait = %+v, want a wait: %v", wait, tt.wantWait)
			}
			if wait != nil {
				if wait.Reason != infrav1.WaitingForClusterExportsReason {
					t.Errorf("wait reason %s", wait.Reason)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cluster_failure_domains = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestInstanceAddresses: Module Contract, "Null semantics": an instance's
// addresses = [] is written as an empty list, null as absent.
func TestInstanceAddresses(t *testing.T) {
	raw := contract.RawOutputs{
		contract.OutputProviderID:     json.RawMessage(`null`),
		contract.OutputProviderIDList: json.RawMessage(`["a","b"]`),
		contract.OutputReplicas:       json.RawMessage(`2`),
		contract.OutputInstances:      json.RawMessage(`[{"provider_id":"a","addresses":[]},{"provider_id":"b"}]`),
		contract.OutputHealth:         json.RawMessage(`{"state":"running","healthy":true}`),
	}
	out, v := contract.DecodeMachinePoolOutputs(raw, contract.MachinePoolFacts{})
	if !v.Valid() {
		t.Fatalf("verdict %s: %s", v.Reason, v.Message)
	}
	tests := []struct {
		name    string
		index   int
		present bool
	}{
		{"null_semantics/empty_instance_addresses_are_an_empty_list", 0, true},
		{"null_semantics/null_instance_addresses_are_absent", 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := infrav1.Instance{ProviderID: out.Instances[tc.index].ProviderID, Addresses: instanceAddresses(out.Instances[tc.index].Addresses)}
			b, err := json.Marshal(inst)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte(`"addresses":[]`)); got != tc.present {
				t.Errorf("instance %s: addresses [] present %v, want %v", b, got, tc.present)
			}
		})
	}
}
