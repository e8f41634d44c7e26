package inputs

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

func ep(host string, port int32) *contract.Endpoint {
	return &contract.Endpoint{Host: host, Port: port}
}

func TestControlPlaneEndpointInput(t *testing.T) {
	for _, tc := range []struct {
		name        string
		source      string
		cluster, tc *contract.Endpoint
		want        *contract.Endpoint
	}{
		{"cluster_field_wins_when_valid", "", ep("a", 6443), ep("b", 6443), ep("a", 6443)},
		{"falls_back_to_a_valid_terraformcluster_endpoint_while_the_cluster_field_is_not_valid", "", ep("a", 0), ep("b", 443), ep("b", 443)},
		{"null_when_neither_is_valid", "", ep("", 6443), ep("b", 0), nil},
		{"null_when_neither_is_set", "", nil, nil, nil},
		{"user_source_uses_the_cluster_field", EndpointSourceUser, ep("a", 6443), nil, ep("a", 6443)},
		{"an_endpoint_set_later_by_a_control_plane_provider_is_rendered", "", ep("cp.example", 443), nil, ep("cp.example", 443)},
		{"always_null_when_endpoint_source_is_module_even_after_capi_copies_it", EndpointSourceModule, ep("lb", 6443), ep("lb", 6443), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ControlPlaneEndpointInput(tc.source, tc.cluster, tc.tc)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEndpointSourceBeforeApply(t *testing.T) {
	for _, tc := range []struct {
		name        string
		current     string
		first       bool
		cluster, tc *contract.Endpoint
		want        string
	}{
		{"user_is_written_before_the_first_apply_when_the_cluster_field_is_valid", "", true, ep("a", 1), nil, EndpointSourceUser},
		{"user_is_written_before_the_first_apply_when_the_terraformcluster_field_is_valid", "", true, nil, ep("a", 1), EndpointSourceUser},
		{"absent_when_no_endpoint_before_the_first_apply", "", true, nil, ep("a", 0), ""},
		{"not_written_after_the_first_apply", "", false, ep("a", 1), nil, ""},
		{"once_written_it_never_changes", EndpointSourceModule, true, ep("a", 1), nil, EndpointSourceModule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EndpointSourceBeforeApply(tc.current, tc.first, tc.cluster, tc.tc); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShouldWriteEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		out, spec *contract.Endpoint
		inputNull bool
		want      bool
	}{
		{"written_when_output_valid_field_empty_and_input_was_null", ep("lb", 6443), nil, true, true},
		{"not_written_when_the_field_is_set", ep("lb", 6443), ep("x", 1), true, false},
		{"not_written_when_the_rendered_input_was_not_null", ep("lb", 6443), nil, false, false},
		{"not_written_when_the_output_is_null", nil, nil, true, false},
		{"not_written_when_half_set", ep("lb", 0), nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contract.ShouldWriteEndpoint(tc.out, tc.spec, tc.inputNull); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestControlPlaneInitialized_Latch(t *testing.T) {
	tru, fal := true, false
	for _, tc := range []struct {
		name    string
		cluster *bool
		last    bool
		want    bool
	}{
		{"nil_maps_to_false", nil, false, false},
		{"true_when_the_cluster_field_is_true", &tru, false, true},
		{"never_rendered_false_after_an_apply_with_true", &fal, true, true},
		{"stays_true_after_clusterctl_move_with_no_cluster_status", nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ControlPlaneInitialized(tc.cluster, tc.last); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	r := mustRender(t, Request{Image: bookImage, Inputs: bookCluster()})
	last, err := LastControlPlaneInitialized(r.TFVars)
	if err != nil || !last {
		t.Errorf("LastControlPlaneInitialized(durable) = %v, %v; want true", last, err)
	}
	if last, err := LastControlPlaneInitialized(nil); err != nil || last {
		t.Errorf("no durable Secret reads as false, got %v, %v", last, err)
	}
	if _, err := LastControlPlaneInitialized([]byte("[")); err == nil {
		t.Error("a corrupt durable tfvars must be an error")
	}
}

func TestClusterNetworkShape(t *testing.T) {
	if NewClusterNetwork(nil, nil, "", 0) != nil {
		t.Error("cluster_network is null when the Cluster sets none of its fields")
	}
	c := bookCluster()
	c.ClusterNetwork = NewClusterNetwork([]string{"10.0.0.0/8"}, nil, "", 0)
	r := mustRender(t, Request{Image: bookImage, Inputs: c})
	got := decodeJSON(t, r.TFVars)[contract.InputClusterNetwork]
	want := map[string]any{"pods": []any{"10.0.0.0/8"}, "services": []any{}, "service_domain": nil, "api_server_port": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("missing attributes render as null or []: got %v, want %v", got, want)
	}
	c.ClusterNetwork = nil
	r = mustRender(t, Request{Image: bookImage, Inputs: c})
	if v, ok := decodeJSON(t, r.TFVars)[contract.InputClusterNetwork]; !ok || v != nil {
		t.Errorf("an unset cluster_network renders null, got %v (present %v)", v, ok)
	}
}

func TestBootstrapDataIsAlwaysBase64OfTheRawBytes(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("#cloud-config\nruncmd: [kubeadm join]\n"))
	_ = w.Close()
	for _, payload := range [][]byte{gz.Bytes(), []byte("plain"), {}} {
		m := bookMachine()
		m.BootstrapData = payload
		r := mustRender(t, Request{Image: bookImage, Inputs: m})
		got := decodeJSON(t, r.TFVars)[contract.InputBootstrapData].(string)
		raw, err := base64.StdEncoding.DecodeString(got)
		if err != nil || !bytes.Equal(raw, payload) {
			t.Errorf("bootstrap_data %q does not decode (standard, padded) to the raw bytes", got)
		}
	}
}

func TestBootstrapFormatDefaultsToCloudConfig(t *testing.T) {
	if got := BootstrapFormat(nil); got != "cloud-config" {
		t.Errorf("absent format = %q", got)
	}
	if got := BootstrapFormat([]byte("ignition")); got != "ignition" {
		t.Errorf("format = %q", got)
	}
	m := bookMachine()
	m.BootstrapFormat = ""
	r := mustRender(t, Request{Image: bookImage, Inputs: m})
	if got := decodeJSON(t, r.TFVars)[contract.InputBootstrapFormat]; got != "cloud-config" {
		t.Errorf("rendered bootstrap_format = %v", got)
	}
}

func TestParseAutoscaling(t *testing.T) {
	ann := func(minV, maxV string) map[string]string {
		m := map[string]string{}
		if minV != "-" {
			m[AutoscalerMinSizeAnnotation] = minV
		}
		if maxV != "-" {
			m[AutoscalerMaxSizeAnnotation] = maxV
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		min, max string
		want     Autoscaling
		reason   string
	}{
		{"enabled_when_both_present_and_min_le_max", "3", "10", Autoscaling{true, 3, 10}, contract.ReasonReplicasManagedByModule},
		{"min_equal_max_is_enabled", "0", "0", Autoscaling{true, 0, 0}, contract.ReasonReplicasManagedByModule},
		{"no_annotations_is_disabled", "-", "-", Autoscaling{}, contract.ReasonAutoscalingDisabled},
		{"an_incomplete_pair_is_invalid", "3", "-", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
		{"only_max_is_invalid", "-", "3", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
		{"unparsable_is_invalid", "three", "10", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
		{"negative_is_invalid", "-1", "10", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
		{"min_greater_than_max_is_invalid", "5", "2", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
		{"overflowing_int32_is_invalid", "1", "99999999999", Autoscaling{}, contract.ReasonAutoscalingAnnotationsInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseAutoscaling(ann(tc.min, tc.max))
			if got.Autoscaling != tc.want || got.Reason != tc.reason {
				t.Errorf("got %+v, want %+v/%s", got, tc.want, tc.reason)
			}
			if tc.reason == contract.ReasonAutoscalingAnnotationsInvalid && got.Message == "" {
				t.Error("an invalid pair needs a message")
			}
		})
	}
}

func TestPoolReplicas(t *testing.T) {
	on := Autoscaling{Enabled: true, Min: 2, Max: 5}
	for _, tc := range []struct {
		name         string
		a            Autoscaling
		spec, status *int32
		want         int32
	}{
		{"fixed_uses_machinepool_spec_replicas", Autoscaling{}, ptr.To[int32](4), ptr.To[int32](9), 4},
		{"fixed_explicit_zero_stays_zero", Autoscaling{}, ptr.To[int32](0), nil, 0},
		{"fixed_unset_defaults_to_one", Autoscaling{}, nil, nil, 1},
		{"autoscaling_uses_the_observed_status_replicas", on, ptr.To[int32](2), ptr.To[int32](4), 4},
		{"autoscaling_falls_back_to_spec_before_the_first_observation", on, ptr.To[int32](3), nil, 3},
		{"autoscaling_clamps_up_to_min", on, nil, ptr.To[int32](0), 2},
		{"autoscaling_clamps_down_to_max", on, nil, ptr.To[int32](50), 5},
		{"autoscaling_unset_spec_starts_at_min", on, nil, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PoolReplicas(tc.a, tc.spec, tc.status); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPoolDefaults_NodeLabelsAndFailureDomains(t *testing.T) {
	p := bookPool()
	p.NodeLabels, p.FailureDomains, p.ClusterFailureDomains = nil, nil, nil
	got := decodeJSON(t, mustRender(t, Request{Image: bookImage, Inputs: p}).TFVars)
	if !reflect.DeepEqual(got[contract.InputNodeLabels], map[string]any{}) ||
		!reflect.DeepEqual(got[contract.InputFailureDomains], []any{}) ||
		!reflect.DeepEqual(got[contract.InputClusterFailureDomains], []any{}) {
		t.Errorf("unset node_labels/failure_domains/cluster_failure_domains must render {}/[]/[]: %v", got)
	}
	names := ClusterFailureDomainNames([]contract.FailureDomain{{Name: "b"}, {Name: "a"}})
	if !reflect.DeepEqual(names, []string{"b", "a"}) {
		t.Errorf("cluster failure domain names = %v", names)
	}
}

func TestTags_FixedKeysWithTemplate(t *testing.T) {
	got := Tags(contract.RoleMachinePool, Common{
		Cluster: ObjectRef{Name: "prod", Namespace: "team-a"}, Object: ObjectRef{Name: "p0", Namespace: "team-a"}, Template: "pool-tmpl",
	})
	want := map[string]string{
		"captf.io/cluster": "prod", "captf.io/namespace": "team-a", "captf.io/kind": "TerraformMachinePool",
		"captf.io/name": "p0", "captf.io/managed-by": "captf", "captf.io/template": "pool-tmpl",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestExternallyManagedClusterRendersEmptyObject(t *testing.T) {
	m := bookMachine()
	m.ClusterOutputs = ExternallyManagedClusterOutputs()
	got := decodeJSON(t, mustRender(t, Request{Image: bookImage, Inputs: m}).TFVars)
	if !reflect.DeepEqual(got[contract.InputClusterOutputs], map[string]any{}) {
		t.Errorf("captf_cluster_outputs = %v, want {}", got[contract.InputClusterOutputs])
	}
	if err := CheckClusterOutputs(json.RawMessage(`{"ratio": 0.5}`)); err == nil || strings.Contains(err.Error(), "0.5") {
		t.Errorf("CheckClusterOutputs = %v, want a value-free error", err)
	}
}

func TestSizeCap(t *testing.T) {
	size := func(n int) *Rendered {
		return mustRender(t, Request{Image: bookImage, Inputs: bookMachine(), Variables: Variables{Values: map[string]any{"pad": strings.Repeat("x", n)}}})
	}
	base := size(0).Size()
	at := size(MaxBytes - base)
	if at.Size() != MaxBytes {
		t.Fatalf("size = %d, want exactly %d", at.Size(), MaxBytes)
	}
	if err := at.CheckSize(); err != nil {
		t.Errorf("exactly %d bytes must pass: %v", MaxBytes, err)
	}
	over := size(MaxBytes - base + 1)
	err := over.CheckSize()
	var tl *TooLargeError
	if !asErr(err, &tl) || tl.Size != MaxBytes+1 || tl.Reason() != "InputsTooLarge" {
		t.Errorf("one byte over must be InputsTooLarge, got %v", err)
	}
	if over.Size() != len(over.MainTF)+len(over.TFVars) {
		t.Error("the cap counts the two files together")
	}
}
