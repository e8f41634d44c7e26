package inputs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// sentinel is a value that must never appear in an error.
const sentinel = "SENTINEL-VALUE-7f3a"

func TestResolveVariables(t *testing.T) {
	type want struct {
		values    map[string]any
		sensitive []string
		reason    string
		errHas    []string
	}
	cm := func(name string, format Format, data map[string]string) Source {
		return ConfigMapSource(name, format, false, data, nil)
	}
	sec := func(name string, format Format, data map[string]string) Source {
		d := map[string][]byte{}
		for k, v := range data {
			d[k] = []byte(v)
		}
		return SecretSource(name, format, false, d)
	}
	for _, tc := range []struct {
		name    string
		role    contract.Role
		sources []Source
		inline  string
		want    want
	}{
		{
			name:    "later_source_wins_on_a_shared_key",
			sources: []Source{cm("a", "", map[string]string{"x": "1", "y": "a"}), cm("b", "", map[string]string{"x": "2"})},
			want:    want{values: map[string]any{"x": "2", "y": "a"}},
		},
		{
			name:    "inline_wins_over_every_source",
			sources: []Source{sec("a", "", map[string]string{"x": "from-secret"})},
			inline:  `{"x": "inline"}`,
			want:    want{values: map[string]any{"x": "inline"}},
		},
		{
			name:    "secret_value_is_sensitive_when_it_wins",
			sources: []Source{cm("a", "", map[string]string{"x": "1"}), sec("b", "", map[string]string{"x": "2", "y": "3"})},
			want:    want{values: map[string]any{"x": "2", "y": "3"}, sensitive: []string{"x", "y"}},
		},
		{
			name:    "a_losing_secret_value_does_not_make_the_variable_sensitive",
			sources: []Source{sec("a", "", map[string]string{"x": "1"}), cm("b", "", map[string]string{"x": "2"})},
			want:    want{values: map[string]any{"x": "2"}},
		},
		{
			name:    "string_format_passes_each_value_as_a_string",
			sources: []Source{cm("a", FormatString, map[string]string{"n": "3", "b": "true", "l": `["a"]`})},
			want:    want{values: map[string]any{"n": "3", "b": "true", "l": `["a"]`}},
		},
		{
			name:    "json_format_parses_each_value",
			sources: []Source{cm("a", FormatJSON, map[string]string{"l": `["a","b"]`, "m": `{"team":"a"}`, "n": "3"})},
			want:    want{values: map[string]any{"l": []any{"a", "b"}, "m": map[string]any{"team": "a"}, "n": jsonNumber("3")}},
		},
		{
			name:    "optional_missing_source_contributes_nothing",
			sources: []Source{MissingSource(SourceConfigMap, "later", true), cm("a", "", map[string]string{"x": "1"})},
			want:    want{values: map[string]any{"x": "1"}},
		},
		{
			name:    "a_missing_or_unlabeled_required_source_is_VariablesSourceNotFound",
			sources: []Source{MissingSource(SourceSecret, "db-credentials", false)},
			want:    want{reason: contract.ReasonVariablesSourceNotFound, errHas: []string{`Secret "db-credentials"`}},
		},
		{
			name:    "json_value_that_is_not_json_is_VariablesInvalid_naming_source_and_key_never_the_value",
			sources: []Source{sec("db", FormatJSON, map[string]string{"password": "{" + sentinel})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{`Secret "db"`, `"password"`, "not valid JSON"}},
		},
		{
			name:    "a_value_that_is_not_utf8_is_VariablesInvalid",
			sources: []Source{SecretSource("bin", FormatString, false, map[string][]byte{"blob": {0xff, 0xfe, 's'}})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{`Secret "bin"`, `"blob"`, "UTF-8"}},
		},
		{
			name:    "configmap_binary_data_is_read_like_data",
			sources: []Source{ConfigMapSource("a", FormatString, false, map[string]string{"x": "1"}, map[string][]byte{"y": []byte("2")})},
			want:    want{values: map[string]any{"x": "1", "y": "2"}},
		},
		{
			name:    "a_name_that_is_not_an_identifier_is_refused",
			sources: []Source{cm("a", "", map[string]string{"bad.key": sentinel})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{`"bad.key"`, "identifier"}},
		},
		{
			name:    "a_captf_name_is_refused",
			sources: []Source{cm("a", "", map[string]string{"captf_anything": sentinel})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{"captf_"}},
		},
		{
			name:   "a_contract_input_of_the_role_is_refused",
			role:   contract.RoleMachine,
			inline: `{"machine_name": "` + sentinel + `"}`,
			want:   want{reason: contract.ReasonVariablesInvalid, errHas: []string{InlineSource, `"machine_name"`, "contract input"}},
		},
		{
			name:   "a_contract_input_of_another_role_is_allowed",
			role:   contract.RoleCluster,
			inline: `{"machine_name": "x"}`,
			want:   want{values: map[string]any{"machine_name": "x"}},
		},
		{
			name:   "a_module_meta_argument_is_refused",
			inline: `{"for_each": "` + sentinel + `"}`,
			want:   want{reason: contract.ReasonVariablesInvalid, errHas: []string{`"for_each"`, "meta-argument"}},
		},
		{
			name:   "a_fractional_number_is_refused_without_the_value",
			inline: `{"ratio": 0.73519}`,
			want:   want{reason: contract.ReasonVariablesInvalid, errHas: []string{`"ratio"`, "integers only"}},
		},
		{
			name:    "a_fractional_number_in_a_json_source_is_refused_without_the_value_or_its_path",
			sources: []Source{sec("s", FormatJSON, map[string]string{"cfg": `{"` + sentinel + `": 1.5}`})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{`"cfg"`, "integers only"}},
		},
		{
			name:   "inline_must_be_an_object",
			inline: `["` + sentinel + `"]`,
			want:   want{reason: contract.ReasonVariablesInvalid, errHas: []string{InlineSource, "object"}},
		},
		{
			name:    "an_unknown_format_is_refused",
			sources: []Source{cm("a", "YAML", map[string]string{"x": "1"})},
			want:    want{reason: contract.ReasonVariablesInvalid, errHas: []string{"YAML"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role := tc.role
			if role == "" {
				role = contract.RoleMachine
			}
			var inline []byte
			if tc.inline != "" {
				inline = []byte(tc.inline)
			}
			got, err := ResolveVariables(role, tc.sources, inline)
			if tc.want.reason != "" {
				var ve *VariablesError
				if !asErr(err, &ve) {
					t.Fatalf("err = %v, want *VariablesError", err)
				}
				if ve.Reason != tc.want.reason {
					t.Errorf("reason = %s, want %s", ve.Reason, tc.want.reason)
				}
				for _, s := range tc.want.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				for _, leak := range []string{sentinel, "0.73519", "1.5"} {
					if strings.Contains(err.Error(), leak) {
						t.Errorf("error %q carries a value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Values, tc.want.values) {
				t.Errorf("values = %#v, want %#v", got.Values, tc.want.values)
			}
			if s := got.SensitiveNames(); !reflect.DeepEqual(s, orEmpty(tc.want.sensitive)) {
				t.Errorf("sensitive = %v, want %v", s, tc.want.sensitive)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestRender_RefusesReservedVariableNamesEvenWithoutResolve(t *testing.T) {
	_, err := Render(Request{Image: bookImage, Inputs: bookMachine(), Variables: Variables{Values: map[string]any{"bootstrap_data": sentinel}}})
	var ve *VariablesError
	if !asErr(err, &ve) || strings.Contains(err.Error(), sentinel) {
		t.Fatalf("err = %v, want a value-free *VariablesError", err)
	}
}

func TestCheckVariableName_ReservedNamesPerRole(t *testing.T) {
	for _, role := range contract.Roles() {
		for _, name := range contract.ReservedVariableNames(role) {
			if contract.CheckVariableName(role, name) == nil {
				t.Errorf("%s: %s accepted", role, name)
			}
		}
	}
}
