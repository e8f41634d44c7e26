package canonical

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"members_sorted_by_key_bytes", `{"b":1,"a":2,"B":3}`, `{"B":3,"a":2,"b":1}`},
		{"whitespace_removed", " [ 1 , { \"x\" : null } ,true ] ", `[1,{"x":null},true]`},
		{"html_characters_stay_literal", `"a\u003cb \u0026 c\u003ed"`, `"a<b & c>d"`},
		{"escapes_decode_to_the_same_string", `"\u00e9\/"`, `"é/"`},
		{"control_characters_escaped", "\"\\u0001\\n\\t\"", `"\u0001\n\t"`},
		{"negative_zero_is_zero", `-0`, `0`},
		{"big_integers_kept_exactly", `123456789012345678901234567890`, `123456789012345678901234567890`},
		{"line_separators_stay_literal", "\"\u2028\"", "\"\u2028\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, path, problem string
	}{
		{"a_fractional_number_is_an_error_naming_the_path", `{"a":{"b":[1,0.5]}}`, "$.a.b[1]", ProblemNotInteger},
		{"an_exponent_number_is_an_error_naming_the_path", `{"odd key":1e3}`, `$["odd key"]`, ProblemNotInteger},
		{"a_duplicate_key_is_an_error", `{"a":1,"a":2}`, "$.a", "duplicate object key"},
		{"invalid_utf8_is_an_error", "\"\xff\"", "$", "not valid UTF-8"},
		{"trailing_data_is_an_error", `1 2`, "$", "unexpected data after the JSON value"},
		{"truncated_input_is_an_error", `{"a":`, "$.a", "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Canonicalize([]byte(tc.in))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ce.Path != tc.path || ce.Problem != tc.problem {
				t.Errorf("got %s / %s, want %s / %s", ce.Path, ce.Problem, tc.path, tc.problem)
			}
		})
	}
}

func TestMarshalGoValues(t *testing.T) {
	got, err := Marshal(map[string]any{
		"i": int32(-7), "u": uint64(9), "s": []string{"b", "a"}, "m": map[string]string{"z": "1", "y": "2"},
		"raw": json.RawMessage(`{"b":1, "a":[true]}`), "n": json.Number("12"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"i":-7,"m":{"y":"2","z":"1"},"n":12,"raw":{"a":[true],"b":1},"s":["b","a"],"u":9}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	for _, bad := range []any{1.0, float32(2), struct{}{}, json.Number("1.5"), json.Number("abc"), "\xff"} {
		if _, err := Marshal(map[string]any{"k": bad}); err == nil {
			t.Errorf("Marshal(%#v) succeeded", bad)
		} else if !strings.HasPrefix(err.Error(), "$.k") {
			t.Errorf("error %v does not name $.k", err)
		}
	}
}
