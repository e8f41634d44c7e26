package runner

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestSensitiveValues(t *testing.T) {
	mainTF := []byte(`{"variable":{
		"bootstrap_data":{"sensitive":true},
		"extra_tags":{"sensitive":true},
		"cluster_name":{},
		"token":{"sensitive":true},
		"pin":{"sensitive":true}}}`)
	tfvars := []byte(`{
		"bootstrap_data":"I2Nsb3VkLWNvbmZpZwo=",
		"extra_tags":{"owner":"team-secret","list":["alpha-key",7,true]},
		"cluster_name":"public-name",
		"token":null,
		"pin":"123"}`)
	got, err := SensitiveValues(mainTF, tfvars)
	if err != nil {
		t.Fatal(err)
	}
	// Security Model: Secret-sourced variables and bootstrap data are
	// declared sensitive; only their string leaves are redacted, longest
	// first; a value shorter than 4 bytes is left (it would garble lines).
	want := []string{"I2Nsb3VkLWNvbmZpZwo=", "team-secret", "alpha-key"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SensitiveValues = %q, want %q", got, want)
	}
	if _, err := SensitiveValues([]byte("{"), tfvars); err == nil {
		t.Fatal("a broken main.tf.json was accepted")
	}
}

func TestRedactor(t *testing.T) {
	values := []string{"team-secret-long", "team-secret"}
	for _, c := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"a value on one line is replaced", []string{"owner = \"team-secret\"\n"}, "owner = \"" + Redacted + "\"\n"},
		{"the longest value wins", []string{"x team-secret-long y\n"}, "x " + Redacted + " y\n"},
		{"a value split across writes is still found", []string{"owner = \"team-", "secret\"\nnext\n"}, "owner = \"" + Redacted + "\"\nnext\n"},
		{"a last line without a newline is flushed", []string{"tail team-secret"}, "tail " + Redacted},
		{"lines without values pass unchanged", []string{"Plan: 0 to add, 1 to change, 0 to destroy.\n"}, "Plan: 0 to add, 1 to change, 0 to destroy.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newRedactor(&out, values)
			for _, s := range c.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			flush(w)
			if out.String() != c.want {
				t.Fatalf("relayed %q, want %q", out.String(), c.want)
			}
		})
	}
	var out bytes.Buffer
	if w := newRedactor(&out, nil); w != &out {
		t.Fatal("with no sensitive value the output is not wrapped")
	}
	big := strings.Repeat("x", maxRedactLine+1)
	w := newRedactor(&out, values)
	_, _ = w.Write([]byte(big))
	if out.Len() != len(big) {
		t.Fatalf("a runaway line was held back (%d of %d bytes relayed)", out.Len(), len(big))
	}
}

// BenchmarkRedactor relays a typical plan's output (200 lines) through the
// redactor with 20 sensitive values.
func BenchmarkRedactor(b *testing.B) {
	var values []string
	for i := range 20 {
		values = append(values, strings.Repeat(string(rune('a'+i)), 12))
	}
	var plan bytes.Buffer
	for i := range 200 {
		plan.WriteString(`      ~ input  = { tags = { owner = "` + values[i%20] + `" } }` + "\n")
	}
	b.SetBytes(int64(plan.Len()))
	b.ReportAllocs()
	for b.Loop() {
		w := newRedactor(discard{}, values)
		_, _ = w.Write(plan.Bytes())
		flush(w)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
