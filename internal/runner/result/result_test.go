package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
)

func bigDoc() *Document {
	d := &Document{
		Version: Version,
		Op:      infrav1.OperationApply,
		Image:   Image{Ref: "registry.example/modules/cluster:v1.2.3", ProvidersMirror: true},
		Runtime: Runtime{Command: []string{"/captf/runtime"}, Version: "1.12.6"},
		Error: &Error{
			Kind: infrav1.RunErrorPlanChanged,
			Tail: strings.Repeat("x", MaxSummaryBytes),
		},
		Changes: &Changes{Add: 1, Change: 2, Destroy: 3},
		Plan:    &Plan{Hash: "p1:" + strings.Repeat("a", 64), Add: 70, Change: 5, Destroy: 9},
		Drift:   &Drift{Detected: true, Add: 1, Change: 2, Destroy: 3},
	}
	for i := range 16 {
		d.Steps = append(d.Steps, Step{Name: fmt.Sprintf("step-%d", i), Exit: 0, Seconds: 1.25})
	}
	for i := range MaxPlanResources {
		d.Plan.Resources = append(d.Plan.Resources, fmt.Sprintf("module.role.aws_instance.very_long_resource_name_%03d[\"%s\"] (replace)", i, strings.Repeat("k", 20)))
	}
	for i := range MaxDriftResources {
		d.Drift.Resources = append(d.Drift.Resources, fmt.Sprintf("module.role.aws_instance.drifted_%03d", i))
	}
	return d
}

func decode(t *testing.T, b []byte) *Document {
	t.Helper()
	d, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return d
}

func TestMarshal(t *testing.T) {
	t.Run("small document is written whole, drift and error null when unset", func(t *testing.T) {
		d := &Document{Version: Version, Op: infrav1.OperationRefresh, Runtime: Runtime{Command: []string{"/captf/runtime"}}, Steps: []Step{{Name: "init", Seconds: 0.12345}}}
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{`"drift":null`, `"error":null`, `"seconds":0.123`, `"version":1`, `"op":"refresh"`} {
			if !strings.Contains(s, want) {
				t.Errorf("document %s lacks %s", s, want)
			}
		}
		for _, absent := range []string{`"changes"`, `"plan"`} {
			if strings.Contains(s, absent) {
				t.Errorf("document %s carries %s although it is unset", s, absent)
			}
		}
	})

	t.Run("steps are an empty list, never null", func(t *testing.T) {
		b, err := Marshal(&Document{Version: Version, Op: infrav1.OperationApply})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"steps":[]`) {
			t.Errorf("got %s", b)
		}
	})

	t.Run("the cap is 4096 bytes and the plan hash and counts are never dropped", func(t *testing.T) {
		d := bigDoc()
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MaxBytes {
			t.Fatalf("document is %d bytes, over %d", len(b), MaxBytes)
		}
		got := decode(t, b)
		if got.Plan == nil || got.Plan.Hash != d.Plan.Hash || got.Plan.Add != 70 || got.Plan.Change != 5 || got.Plan.Destroy != 9 {
			t.Errorf("plan hash or counts lost: %+v", got.Plan)
		}
		if got.Drift == nil || got.Drift.Add != 1 || got.Drift.Change != 2 || got.Drift.Destroy != 3 || !got.Drift.Detected {
			t.Errorf("drift counts lost: %+v", got.Drift)
		}
		if got.Error == nil || got.Error.Kind != infrav1.RunErrorPlanChanged {
			t.Errorf("error kind lost: %+v", got.Error)
		}
	})

	t.Run("shrinking drops changes first", func(t *testing.T) {
		d := bigDoc()
		// Just over the cap with the changes, under it without.
		d.Plan.Resources = d.Plan.Resources[:10]
		d.Drift.Resources = nil
		d.Error.Tail = ""
		b0, _ := encode(copyDoc(d))
		pad := MaxBytes - len(b0) + 5
		d.Image.Ref += strings.Repeat("r", pad)
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, b)
		if got.Changes != nil {
			t.Errorf("changes kept although the document was over the cap")
		}
		if len(got.Plan.Resources) != 10 || len(got.Steps) != 16 {
			t.Errorf("dropped more than the changes: %d resources, %d steps", len(got.Plan.Resources), len(got.Steps))
		}
	})

	t.Run("then the error tail, then the resource lists, then the step history", func(t *testing.T) {
		d := bigDoc()
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, b)
		if got.Changes != nil || got.Error.Tail != "" {
			t.Errorf("changes or tail kept: %+v %+v", got.Changes, got.Error)
		}
		if len(got.Plan.Resources) != 0 || !got.Plan.Truncated {
			t.Errorf("plan resources kept (%d) or not marked truncated", len(got.Plan.Resources))
		}
		if len(got.Drift.Resources) != 0 {
			t.Errorf("drift resources kept: %d", len(got.Drift.Resources))
		}
		if len(got.Steps) != 16 {
			t.Errorf("steps dropped although the document fit without them: %d", len(got.Steps))
		}
	})

	t.Run("step history goes oldest first when nothing else is left", func(t *testing.T) {
		d := bigDoc()
		d.Image.Ref = strings.Repeat("r", 3300)
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MaxBytes {
			t.Fatalf("%d bytes", len(b))
		}
		got := decode(t, b)
		if len(got.Steps) == 16 || len(got.Steps) == 0 {
			t.Fatalf("expected some steps dropped, have %d", len(got.Steps))
		}
		if got.Steps[len(got.Steps)-1].Name != "step-15" {
			t.Errorf("newest step dropped: %+v", got.Steps)
		}
		if got.Image.Ref != d.Image.Ref {
			t.Errorf("image ref cut although dropping steps sufficed")
		}
	})

	t.Run("an oversized image reference is cut as a last resort", func(t *testing.T) {
		d := bigDoc()
		d.Image.Ref = strings.Repeat("r", 10000)
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MaxBytes {
			t.Fatalf("%d bytes", len(b))
		}
		if got := decode(t, b); got.Plan.Hash != d.Plan.Hash {
			t.Errorf("hash lost")
		}
	})

	t.Run("the error tail is capped at 512 bytes on a rune boundary", func(t *testing.T) {
		d := &Document{Version: Version, Op: infrav1.OperationApply, Error: &Error{Kind: infrav1.RunErrorStep, Tail: strings.Repeat("é", 400)}}
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, b)
		if len(got.Error.Tail) > MaxSummaryBytes || len(got.Error.Tail) < MaxSummaryBytes-1 {
			t.Errorf("tail is %d bytes", len(got.Error.Tail))
		}
	})

	t.Run("the plan lists at most 50 resources and says when it was cut", func(t *testing.T) {
		d := &Document{Version: Version, Op: infrav1.OperationPlan, Plan: &Plan{Hash: "p1:x"}}
		for i := range 60 {
			d.Plan.Resources = append(d.Plan.Resources, fmt.Sprintf("r.%d (create)", i))
		}
		got := decode(t, mustMarshal(t, d))
		if len(got.Plan.Resources) != MaxPlanResources || !got.Plan.Truncated {
			t.Errorf("%d resources, truncated=%v", len(got.Plan.Resources), got.Plan.Truncated)
		}
	})

	t.Run("the input document is never modified", func(t *testing.T) {
		d := bigDoc()
		before, _ := json.Marshal(d)
		if _, err := Marshal(d); err != nil {
			t.Fatal(err)
		}
		after, _ := json.Marshal(d)
		if string(before) != string(after) {
			t.Errorf("Marshal modified its input")
		}
	})

	t.Run("HTML characters are not escaped", func(t *testing.T) {
		d := &Document{Version: Version, Op: infrav1.OperationApply, Error: &Error{Kind: infrav1.RunErrorStep, Tail: "a<b & c>d"}}
		if b := mustMarshal(t, d); !strings.Contains(string(b), "a<b & c>d") {
			t.Errorf("got %s", b)
		}
	})
}

func mustMarshal(t *testing.T, d *Document) []byte {
	t.Helper()
	b, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantErr string
	}{
		{"not JSON is a clear error", "nope", "not valid JSON"},
		{"another version is refused", `{"version":2,"op":"apply"}`, "version 2"},
		{"version 1 decodes", `{"version":1,"op":"apply","image":{"ref":"x","providersMirror":true},"runtime":{"command":["/captf/runtime"],"version":"1.12.6"},"steps":[{"name":"init","exit":0,"seconds":1.5}],"drift":null,"error":{"kind":"step","step":"init","tail":"boom"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Error == nil || *d.Error.Step != "init" || d.Steps[0].Seconds != 1.5 || !d.Image.ProvidersMirror {
				t.Errorf("decoded %+v", d)
			}
		})
	}
}

func BenchmarkMarshalShrink(b *testing.B) {
	d := bigDoc()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestModuleSection: the list of undeclared contract outputs travels in the
// document, is never shrunk away, and a document without it (an older
// runner, a restore) still decodes, with the section absent.
func TestModuleSection(t *testing.T) {
	t.Run("undeclared outputs survive the shrink", func(t *testing.T) {
		d := bigDoc()
		d.Module = &Module{UndeclaredOutputs: []string{"exports", "health"}}
		b, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MaxBytes {
			t.Fatalf("document is %d bytes", len(b))
		}
		got := decode(t, b)
		if got.Module == nil || strings.Join(got.Module.UndeclaredOutputs, ",") != "exports,health" {
			t.Errorf("module = %+v, want the two undeclared outputs", got.Module)
		}
	})
	t.Run("a module declaring every output is an empty list, never null", func(t *testing.T) {
		b, err := Marshal(&Document{Version: Version, Op: infrav1.OperationApply, Module: &Module{UndeclaredOutputs: []string{}}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"module":{"undeclaredOutputs":[]}`) {
			t.Errorf("got %s", b)
		}
	})
	t.Run("no check, no section", func(t *testing.T) {
		b, err := Marshal(&Document{Version: Version, Op: infrav1.OperationRestore})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"module"`) {
			t.Errorf("got %s", b)
		}
	})
	t.Run("a version 1 document without the section decodes", func(t *testing.T) {
		d := decode(t, []byte(`{"version":1,"op":"apply","image":{"ref":"x","providersMirror":false},"runtime":{"command":["/captf/runtime"],"version":""},"steps":[],"drift":null,"error":null}`))
		if d.Module != nil {
			t.Errorf("module = %+v, want nil", d.Module)
		}
	})
}
