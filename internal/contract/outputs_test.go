package contract

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// raw builds RawOutputs from name=JSON pairs.
func raw(pairs ...string) RawOutputs {
	out := RawOutputs{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = json.RawMessage(pairs[i+1])
	}
	return out
}

const okHealth = `{"state":"running","healthy":true,"message":null,"reasons":[]}`

func clusterRaw(overrides ...string) RawOutputs {
	r := raw(OutputControlPlaneEndpoint, `{"host":"lb.example","port":6443}`, OutputFailureDomains, `[]`,
		OutputExports, `{"network_id":"n1"}`, OutputHealth, okHealth)
	for k, v := range raw(overrides...) {
		if v == nil {
			delete(r, k)
		} else {
			r[k] = v
		}
	}
	return r
}

func without(r RawOutputs, name string) RawOutputs {
	delete(r, name)
	return r
}

func TestDecodeClusterOutputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     RawOutputs
		facts   ClusterFacts
		reason  string
		check   func(t *testing.T, o ClusterOutputs)
		problem string
	}{
		{name: "valid_outputs_are_OutputsValid", raw: clusterRaw(), reason: ReasonOutputsValid, check: func(t *testing.T, o ClusterOutputs) {
			if !reflect.DeepEqual(o.ControlPlaneEndpoint, &Endpoint{Host: "lb.example", Port: 6443}) || o.Health.State != HealthRunning || string(o.Exports) != `{"network_id":"n1"}` {
				t.Errorf("decoded %+v", o)
			}
		}},
		{name: "an_undeclared_output_is_OutputsMissing", raw: clusterRaw(), facts: ClusterFacts{Undeclared: []string{OutputExports}}, reason: ReasonOutputsMissing, problem: "exports"},
		{name: "an_output_absent_from_state_reads_as_null_since_null_root_outputs_are_not_stored", raw: without(clusterRaw(), OutputExports), reason: ReasonOutputsPending, problem: "exports"},
		{name: "control_plane_endpoint_may_stay_null_forever", raw: clusterRaw(OutputControlPlaneEndpoint, `null`), reason: ReasonOutputsValid},
		{name: "a_half_set_endpoint_is_OutputsInvalid", raw: clusterRaw(OutputControlPlaneEndpoint, `{"host":"lb","port":null}`), reason: ReasonOutputsInvalid, problem: "control_plane_endpoint: host and port must be set together"},
		{name: "an_endpoint_port_out_of_range_is_OutputsInvalid", raw: clusterRaw(OutputControlPlaneEndpoint, `{"host":"lb","port":70000}`), reason: ReasonOutputsInvalid, problem: "control_plane_endpoint.port"},
		{name: "an_endpoint_host_over_512_is_OutputsInvalid", raw: clusterRaw(OutputControlPlaneEndpoint, `{"host":"`+strings.Repeat("h", 513)+`","port":1}`), reason: ReasonOutputsInvalid, problem: "control_plane_endpoint.host"},
		{name: "failure_domains_null_and_empty_both_clear", raw: clusterRaw(OutputFailureDomains, `null`), reason: ReasonOutputsValid, check: func(t *testing.T, o ClusterOutputs) {
			if o.FailureDomains != nil {
				t.Errorf("got %v", o.FailureDomains)
			}
		}},
		{name: "failure_domain_control_plane_defaults_to_true", raw: clusterRaw(OutputFailureDomains, `[{"name":"a"},{"name":"b","control_plane":false,"attributes":{"zone":"z","n":1}}]`), reason: ReasonOutputsValid, check: func(t *testing.T, o ClusterOutputs) {
			want := []FailureDomain{{Name: "a", ControlPlane: true}, {Name: "b", ControlPlane: false, Attributes: map[string]string{"zone": "z", "n": "1"}}}
			if !reflect.DeepEqual(o.FailureDomains, want) {
				t.Errorf("got %+v", o.FailureDomains)
			}
		}},
		{name: "failure_domain_names_must_be_unique", raw: clusterRaw(OutputFailureDomains, `[{"name":"a"},{"name":"a"}]`), reason: ReasonOutputsInvalid, problem: "failure_domains[1].name"},
		{name: "failure_domain_names_are_1_to_256_chars", raw: clusterRaw(OutputFailureDomains, `[{"name":""}]`), reason: ReasonOutputsInvalid, problem: "failure_domains[0].name"},
		{name: "at_most_100_failure_domains", raw: clusterRaw(OutputFailureDomains, fdList(101)), reason: ReasonOutputsInvalid, problem: "at most 100"},
		{name: "exports_null_is_OutputsPending", raw: clusterRaw(OutputExports, `null`), reason: ReasonOutputsPending},
		{name: "exports_with_a_fractional_number_is_OutputsInvalid_on_exports", raw: clusterRaw(OutputExports, `{"ratio":0.5}`), reason: ReasonOutputsInvalid, problem: "exports.ratio"},
		{name: "health_null_is_OutputsPending", raw: clusterRaw(OutputHealth, `null`), reason: ReasonOutputsPending},
		{name: "health_state_outside_the_enum_is_OutputsInvalid", raw: clusterRaw(OutputHealth, `{"state":"ok","healthy":true}`), reason: ReasonOutputsInvalid, problem: "health.state"},
		{name: "health_without_healthy_is_OutputsInvalid", raw: clusterRaw(OutputHealth, `{"state":"running"}`), reason: ReasonOutputsInvalid, problem: "health.healthy"},
		{name: "extra_health_attributes_are_ignored", raw: clusterRaw(OutputHealth, `{"state":"degraded","healthy":false,"message":"disk","reasons":["r1"],"extra":1.5}`), reason: ReasonOutputsValid, check: func(t *testing.T, o ClusterOutputs) {
			if o.Health.State != HealthDegraded || o.Health.Healthy || *o.Health.Message != "disk" || !slices.Equal(o.Health.Reasons, []string{"r1"}) {
				t.Errorf("got %+v", o.Health)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, v := DecodeClusterOutputs(tc.raw, tc.facts)
			if v.Reason != tc.reason {
				t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tc.reason)
			}
			if tc.problem != "" && !strings.Contains(v.Message, tc.problem) {
				t.Errorf("message %q lacks %q", v.Message, tc.problem)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func fdList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"name":"fd-` + strings.Repeat("x", i+1) + `"}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func machineRaw(overrides ...string) RawOutputs {
	r := raw(OutputProviderID, `"aws:///us-east-1a/i-1"`, OutputAddresses, `[]`, OutputFailureDomain, `null`,
		OutputInterruptible, `false`, OutputHealth, okHealth)
	for k, v := range raw(overrides...) {
		r[k] = v
	}
	return r
}

func TestDecodeMachineOutputs(t *testing.T) {
	fdA := "fd-a"
	for _, tc := range []struct {
		name    string
		raw     RawOutputs
		facts   MachineFacts
		reason  string
		check   func(t *testing.T, o MachineOutputs)
		problem string
	}{
		{name: "valid_outputs_are_OutputsValid", raw: machineRaw(), reason: ReasonOutputsValid},
		{name: "empty_provider_id_is_treated_as_null_and_pending", raw: machineRaw(OutputProviderID, `""`), reason: ReasonOutputsPending, check: func(t *testing.T, o MachineOutputs) {
			if o.ProviderID != nil {
				t.Error("\"\" must decode to nil")
			}
		}},
		{name: "provider_id_over_512_chars_is_OutputsInvalid", raw: machineRaw(OutputProviderID, `"`+strings.Repeat("p", 513)+`"`), reason: ReasonOutputsInvalid, problem: "provider_id"},
		{name: "provider_id_of_512_chars_is_valid", raw: machineRaw(OutputProviderID, `"`+strings.Repeat("é", 512)+`"`), reason: ReasonOutputsValid},
		{name: "a_later_non_null_provider_id_change_is_ProviderIDChanged", raw: machineRaw(), facts: MachineFacts{ProviderID: "aws:///us-east-1a/i-0"}, reason: ReasonProviderIDChanged},
		{name: "the_same_provider_id_is_valid", raw: machineRaw(), facts: MachineFacts{ProviderID: "aws:///us-east-1a/i-1"}, reason: ReasonOutputsValid},
		{name: "addresses_are_sorted_InternalIP_InternalDNS_ExternalIP_ExternalDNS_Hostname_then_address",
			raw:    machineRaw(OutputAddresses, `[{"type":"Hostname","address":"h"},{"type":"ExternalIP","address":"9.9.9.9"},{"type":"InternalIP","address":"10.0.0.2"},{"type":"ExternalDNS","address":"e.example"},{"type":"InternalIP","address":"10.0.0.1"},{"type":"InternalDNS","address":"i.internal"}]`),
			reason: ReasonOutputsValid, check: func(t *testing.T, o MachineOutputs) {
				want := []Address{{"InternalIP", "10.0.0.1"}, {"InternalIP", "10.0.0.2"}, {"InternalDNS", "i.internal"}, {"ExternalIP", "9.9.9.9"}, {"ExternalDNS", "e.example"}, {"Hostname", "h"}}
				if !reflect.DeepEqual(o.Addresses, want) {
					t.Errorf("got %v", o.Addresses)
				}
			}},
		{name: "an_address_type_outside_the_enum_is_OutputsInvalid", raw: machineRaw(OutputAddresses, `[{"type":"PublicIP","address":"1.1.1.1"}]`), reason: ReasonOutputsInvalid, problem: "addresses[0].type"},
		{name: "an_empty_address_is_OutputsInvalid", raw: machineRaw(OutputAddresses, `[{"type":"InternalIP","address":""}]`), reason: ReasonOutputsInvalid, problem: "addresses[0].address"},
		{name: "more_than_256_addresses_is_OutputsInvalid", raw: machineRaw(OutputAddresses, addrList(257)), reason: ReasonOutputsInvalid, problem: "at most 256"},
		{name: "empty_addresses_mean_provisioned_with_none", raw: machineRaw(OutputAddresses, `[]`), reason: ReasonOutputsValid, check: func(t *testing.T, o MachineOutputs) {
			if o.Addresses == nil || len(o.Addresses) != 0 {
				t.Errorf("[] must decode to an empty, non-nil list; got %#v", o.Addresses)
			}
		}},
		{name: "null_addresses_are_pending", raw: machineRaw(OutputAddresses, `null`), reason: ReasonOutputsPending},
		{name: "failure_domain_differing_from_the_request_is_FailureDomainMismatch", raw: machineRaw(OutputFailureDomain, `"fd-b"`), facts: MachineFacts{RequestedFailureDomain: &fdA}, reason: ReasonFailureDomainMismatch},
		{name: "null_failure_domain_when_one_was_requested_is_FailureDomainMismatch", raw: machineRaw(), facts: MachineFacts{RequestedFailureDomain: &fdA}, reason: ReasonFailureDomainMismatch},
		{name: "failure_domain_equal_to_the_request_is_valid", raw: machineRaw(OutputFailureDomain, `"fd-a"`), facts: MachineFacts{RequestedFailureDomain: &fdA}, reason: ReasonOutputsValid},
		{name: "failure_domain_adds_information_when_none_was_requested", raw: machineRaw(OutputFailureDomain, `"fd-c"`), reason: ReasonOutputsValid, check: func(t *testing.T, o MachineOutputs) {
			if o.FailureDomain == nil || *o.FailureDomain != "fd-c" {
				t.Errorf("got %v", o.FailureDomain)
			}
		}},
		{name: "interruptible_null_is_written_as_false", raw: machineRaw(OutputInterruptible, `null`), reason: ReasonOutputsValid, check: func(t *testing.T, o MachineOutputs) {
			if o.Interruptible {
				t.Error("null must decode to false")
			}
		}},
		{name: "interruptible_must_be_declared", raw: machineRaw(), facts: MachineFacts{Undeclared: []string{OutputInterruptible}}, reason: ReasonOutputsMissing, problem: "interruptible"},
		{name: "interruptible_absent_from_state_is_false", raw: without(machineRaw(), OutputInterruptible), reason: ReasonOutputsValid},
		{name: "missing_beats_invalid", raw: machineRaw(OutputProviderID, `[]`), facts: MachineFacts{Undeclared: []string{OutputHealth}}, reason: ReasonOutputsMissing},
		{name: "invalid_beats_pending", raw: machineRaw(OutputProviderID, `null`, OutputAddresses, `"x"`), reason: ReasonOutputsInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, v := DecodeMachineOutputs(tc.raw, tc.facts)
			if v.Reason != tc.reason {
				t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tc.reason)
			}
			if tc.problem != "" && !strings.Contains(v.Message, tc.problem) {
				t.Errorf("message %q lacks %q", v.Message, tc.problem)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func addrList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"type":"InternalIP","address":"10.0.0.1"}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func poolRaw(overrides ...string) RawOutputs {
	r := raw(OutputProviderID, `"group-1"`, OutputProviderIDList, `["b","a","b"]`, OutputReplicas, `2`,
		OutputInstances, `[{"provider_id":"b","state":"running"},{"provider_id":"a","instance_id":"i-a","addresses":[{"type":"Hostname","address":"h"},{"type":"InternalIP","address":"10.0.0.1"}],"failure_domain":"fd-a","state":"pending"}]`,
		OutputHealth, okHealth)
	for k, v := range raw(overrides...) {
		r[k] = v
	}
	return r
}

func TestDecodeMachinePoolOutputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     RawOutputs
		facts   MachinePoolFacts
		reason  string
		check   func(t *testing.T, o MachinePoolOutputs)
		problem string
	}{
		{name: "provider_id_list_is_sorted_and_deduplicated", raw: poolRaw(), reason: ReasonOutputsValid, check: func(t *testing.T, o MachinePoolOutputs) {
			if !slices.Equal(o.ProviderIDList, []string{"a", "b"}) {
				t.Errorf("got %v", o.ProviderIDList)
			}
			want := []Instance{
				{ProviderID: "a", InstanceID: "i-a", Addresses: []Address{{"InternalIP", "10.0.0.1"}, {"Hostname", "h"}}, FailureDomain: "fd-a", State: "pending"},
				{ProviderID: "b", State: "running"},
			}
			if !reflect.DeepEqual(o.Instances, want) {
				t.Errorf("instances = %+v", o.Instances)
			}
		}},
		{name: "replicas_zero_is_explicit", raw: poolRaw(OutputReplicas, `0`, OutputProviderIDList, `[]`, OutputInstances, `[]`), reason: ReasonOutputsValid, check: func(t *testing.T, o MachinePoolOutputs) {
			if o.Replicas == nil || *o.Replicas != 0 {
				t.Errorf("replicas = %v, want an explicit 0", o.Replicas)
			}
			if o.ProviderIDList == nil {
				t.Error("[] must stay a non-nil empty list")
			}
		}},
		{name: "replicas_null_is_pending", raw: poolRaw(OutputReplicas, `null`), reason: ReasonOutputsPending},
		{name: "replicas_fractional_is_OutputsInvalid", raw: poolRaw(OutputReplicas, `1.5`), reason: ReasonOutputsInvalid, problem: "replicas"},
		{name: "replicas_negative_is_OutputsInvalid", raw: poolRaw(OutputReplicas, `-1`), reason: ReasonOutputsInvalid, problem: "replicas"},
		{name: "provider_id_is_optional", raw: poolRaw(OutputProviderID, `null`), reason: ReasonOutputsValid},
		{name: "provider_id_empty_is_null", raw: poolRaw(OutputProviderID, `""`), reason: ReasonOutputsValid, check: func(t *testing.T, o MachinePoolOutputs) {
			if o.ProviderID != nil {
				t.Error("want nil")
			}
		}},
		{name: "provider_id_list_null_is_pending", raw: poolRaw(OutputProviderIDList, `null`), reason: ReasonOutputsPending},
		{name: "provider_id_list_entry_empty_is_OutputsInvalid", raw: poolRaw(OutputProviderIDList, `["a",""]`), reason: ReasonOutputsInvalid, problem: "provider_id_list[1]"},
		{name: "provider_id_list_over_10000_distinct_is_OutputsInvalid", raw: poolRaw(OutputProviderIDList, idList(10001, true)), reason: ReasonOutputsInvalid, problem: "at most 10000"},
		{name: "provider_id_list_of_10000_distinct_after_dedup_is_valid", raw: poolRaw(OutputProviderIDList, idList(10000, false)), reason: ReasonOutputsValid},
		{name: "instances_over_1000_are_capped_as_InstancesTruncated", raw: poolRaw(OutputInstances, instList(1001)), reason: ReasonInstancesTruncated, check: func(t *testing.T, o MachinePoolOutputs) {
			if len(o.Instances) != MaxInstances || o.InstancesTotal != 1001 {
				t.Errorf("kept %d of %d", len(o.Instances), o.InstancesTotal)
			}
		}},
		{name: "instances_null_are_optional", raw: poolRaw(OutputInstances, `null`), reason: ReasonOutputsValid},
		{name: "an_instance_state_outside_the_enum_is_OutputsInvalid", raw: poolRaw(OutputInstances, `[{"provider_id":"a","state":"up"}]`), reason: ReasonOutputsInvalid, problem: "instances[0].state"},
		{name: "an_instance_without_provider_id_is_OutputsInvalid", raw: poolRaw(OutputInstances, `[{"state":"running"}]`), reason: ReasonOutputsInvalid, problem: "instances[0].provider_id"},
		{name: "instance_addresses_are_validated_like_the_machine_role", raw: poolRaw(OutputInstances, `[{"provider_id":"a","addresses":[{"type":"x","address":"y"}]}]`), reason: ReasonOutputsInvalid, problem: "instances[0].addresses[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, v := DecodeMachinePoolOutputs(tc.raw, tc.facts)
			if v.Reason != tc.reason {
				t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tc.reason)
			}
			if tc.problem != "" && !strings.Contains(v.Message, tc.problem) {
				t.Errorf("message %q lacks %q", v.Message, tc.problem)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func idList(n int, distinct bool) string {
	parts := make([]string, 0, n+1)
	for i := range n {
		parts = append(parts, `"id-`+itoa(i)+`"`)
	}
	if !distinct {
		parts = append(parts, `"id-0"`)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func instList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"provider_id":"id-` + itoa(i) + `"}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestVerdictStatusesAndValueFreeMessages(t *testing.T) {
	secret := "SENTINEL-SECRET-VALUE"
	_, v := DecodeClusterOutputs(clusterRaw(OutputExports, `{"password":"`+secret+`","ratio":0.25}`), ClusterFacts{})
	if v.Status != StatusFalse || strings.Contains(v.Message, secret) || strings.Contains(v.Message, "0.25") {
		t.Errorf("verdict %+v carries a value", v)
	}
	_, v = DecodeMachineOutputs(machineRaw(OutputAddresses, `[{"type":"`+secret+`","address":"x"}]`), MachineFacts{})
	if strings.Contains(v.Message, secret) {
		t.Errorf("message %q carries a value", v.Message)
	}
	for reason, status := range map[string]string{
		ReasonOutputsValid: StatusTrue, ReasonInstancesTruncated: StatusTrue, ReasonOutputsPending: StatusUnknown,
		ReasonOutputsMissing: StatusFalse, ReasonOutputsInvalid: StatusFalse,
	} {
		var got Verdict
		switch reason {
		case ReasonOutputsValid:
			_, got = DecodeMachinePoolOutputs(poolRaw(), MachinePoolFacts{})
		case ReasonInstancesTruncated:
			_, got = DecodeMachinePoolOutputs(poolRaw(OutputInstances, instList(1001)), MachinePoolFacts{})
		case ReasonOutputsPending:
			_, got = DecodeMachinePoolOutputs(poolRaw(OutputHealth, `null`), MachinePoolFacts{})
		case ReasonOutputsMissing:
			_, got = DecodeMachinePoolOutputs(poolRaw(), MachinePoolFacts{Undeclared: []string{OutputInstances}})
		case ReasonOutputsInvalid:
			_, got = DecodeMachinePoolOutputs(poolRaw(OutputHealth, `[]`), MachinePoolFacts{})
		}
		if got.Reason != reason || got.Status != status || got.Valid() != (status == StatusTrue) {
			t.Errorf("%s: got %s/%s", reason, got.Status, got.Reason)
		}
	}
}

// TestEmptyStrings: one rule for "" in every role (Module Contract, "Type
// conventions"): a string that maps to a Kubernetes field must meet that
// field's validation, failure-domain names 1–256 characters, and an invalid
// value is OutputsInvalid rather than written. The one normalization is for
// IDs: "" for an ID such as provider_id becomes null first (Contract
// Changelog, v1alpha1 "Added at the freeze").
func TestEmptyStrings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decode func() (Verdict, any)
		reason string
		want   any
	}{
		{"type_conventions/machine_failure_domain_empty_is_OutputsInvalid", func() (Verdict, any) {
			o, v := DecodeMachineOutputs(machineRaw(OutputFailureDomain, `""`), MachineFacts{})
			return v, o.FailureDomain
		}, ReasonOutputsInvalid, (*string)(nil)},
		{"type_conventions/instance_failure_domain_empty_is_OutputsInvalid", func() (Verdict, any) {
			_, v := DecodeMachinePoolOutputs(poolRaw(OutputInstances, `[{"provider_id":"a","failure_domain":""}]`), MachinePoolFacts{})
			return v, nil
		}, ReasonOutputsInvalid, nil},
		{"type_conventions/instance_failure_domain_null_is_absent", func() (Verdict, any) {
			o, v := DecodeMachinePoolOutputs(poolRaw(OutputInstances, `[{"provider_id":"a","failure_domain":null}]`), MachinePoolFacts{})
			return v, o.Instances[0].FailureDomain
		}, ReasonOutputsValid, ""},
		{"type_conventions/machine_provider_id_empty_is_null", func() (Verdict, any) {
			o, v := DecodeMachineOutputs(machineRaw(OutputProviderID, `""`), MachineFacts{})
			return v, o.ProviderID
		}, ReasonOutputsPending, (*string)(nil)},
		{"type_conventions/pool_provider_id_empty_is_null", func() (Verdict, any) {
			o, v := DecodeMachinePoolOutputs(poolRaw(OutputProviderID, `""`), MachinePoolFacts{})
			return v, o.ProviderID
		}, ReasonOutputsValid, (*string)(nil)},
		{"type_conventions/instance_id_empty_is_null", func() (Verdict, any) {
			o, v := DecodeMachinePoolOutputs(poolRaw(OutputInstances, `[{"provider_id":"a","instance_id":""}]`), MachinePoolFacts{})
			return v, o.Instances[0].InstanceID
		}, ReasonOutputsValid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, got := tc.decode()
			if v.Reason != tc.reason {
				t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tc.reason)
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded %#v, want %#v", got, tc.want)
			}
		})
	}
}
