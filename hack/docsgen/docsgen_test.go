package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/widget.golden.md")

func TestParseMarker(t *testing.T) {
	tests := []struct {
		name string
		line string
		want marker
	}{
		{
			name: "flag marker has no value",
			line: "+optional",
			want: marker{Name: "optional", Raw: "optional"},
		},
		{
			name: "plain value after the first equals sign",
			line: "+kubebuilder:validation:Enum=a;b=c",
			want: marker{Name: "kubebuilder:validation:Enum", Value: "a;b=c", Raw: "kubebuilder:validation:Enum=a;b=c"},
		},
		{
			name: "back-quoted value is raw",
			line: "+kubebuilder:validation:Pattern=`^a\\.b$`",
			want: marker{Name: "kubebuilder:validation:Pattern", Value: `^a\.b$`, Raw: "kubebuilder:validation:Pattern=`^a\\.b$`"},
		},
		{
			name: "double-quoted value is unquoted",
			line: `+kubebuilder:default="x y"`,
			want: marker{Name: "kubebuilder:default", Value: "x y", Raw: `kubebuilder:default="x y"`},
		},
		{
			name: "printcolumn arguments keep commas and escapes inside quotes",
			line: `+kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="a, b"`,
			want: marker{Name: "kubebuilder:printcolumn", Args: []markerArg{
				{"name", "Ready"}, {"type", "string"},
				{"JSONPath", `.status.conditions[?(@.type=="Ready")].status`}, {"description", "a, b"},
			}},
		},
		{
			name: "XValidation rule with pipes and single quotes",
			line: `+kubebuilder:validation:XValidation:rule="a || b == 'x'",message="say \"no\""`,
			want: marker{Name: "kubebuilder:validation:XValidation", Args: []markerArg{
				{"rule", "a || b == 'x'"}, {"message", `say "no"`},
			}},
		},
		{
			name: "resource with a brace list and bare values",
			line: "+kubebuilder:resource:path=widgets,shortName={wd;wdg},scope=Cluster",
			want: marker{Name: "kubebuilder:resource", Args: []markerArg{
				{"path", "widgets"}, {"shortName", "wd;wdg"}, {"scope", "Cluster"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMarker(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Raw == "" {
				tt.want.Raw = strings.TrimPrefix(tt.line, "+")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseMarker(%q)\n got %#v\nwant %#v", tt.line, got, tt.want)
			}
		})
	}
}

func TestParseMarkerRejectsMalformedArguments(t *testing.T) {
	for _, line := range []string{
		`+kubebuilder:printcolumn:name="unterminated`,
		`+kubebuilder:printcolumn:name`,
		`+kubebuilder:printcolumn:name="a",`,
		`+kubebuilder:printcolumn:name="a"type="b"`,
		"+kubebuilder:resource:path=`raw",
		`+kubebuilder:resource:shortName={a;b`,
		`+kubebuilder:default="bad\q"`,
		`+=value`,
	} {
		if _, err := parseMarker(line); err == nil {
			t.Errorf("parseMarker(%q) accepted a malformed marker", line)
		}
	}
}

// TestGenerateWidgetGolden renders a small API that uses every rendering
// rule and compares it with a reviewed page. Run with -update to rewrite it.
func TestGenerateWidgetGolden(t *testing.T) {
	got, err := generate(filepath.Join("testdata", "api", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "widget.golden.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rendered page differs from %s (run go test ./hack/docsgen -update and review the diff):\n%s", golden, got)
	}
	page := string(got)
	for _, want := range []string{
		// a field inlined from an embedded struct is listed with its origin
		"| `name` | string | required | – | length 1–63; pattern `^[a-z]([-a-z0-9]*)?$` | name of the widget, a DNS label. (Inlined from [Shared](#shared).) |",
		// a field of an enum type inherits the type's allowed values, and a default marker fills the Default column
		"| `color` | [Color](#color) | optional | `green` | one of `red`, `green` |",
		// no +optional and no omitempty: required
		"| `size` | int32 | required | – | 1–100 | size in \\*inches\\*. |",
		"at most 1 item; each item: length ≤ 20; list type `set`",
		// omitempty without a marker: optional
		"| `labels` | map[string]string | optional | – | at most 8 keys |",
		// an unknown marker is shown as written rather than dropped
		"marker `+kubebuilder:validation:XIntOrString`",
		// pipes are escaped inside table cells; angle brackets in prose are not HTML
		"| `self.size < 10 \\|\\| self.color == 'red'` | big widgets are red |",
		"| `red` | `ColorRed` | Is used for &lt;danger&gt;. |",
		"| [Widget](#widget) | Cluster | `widgets` | `wd`, `wdg` | `toys` | yes |",
		"| Size | integer | `.spec.size` | – | with `-o wide` |",
		`| Color | string | ` + "`.spec.color`" + ` | Paint, "as sold" | always |`,
		"Validation of the whole object: at least 1 key.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, absent := range []string{"Internal", "Painter", "Unused", "hidden"} {
		if strings.Contains(page, absent) {
			t.Errorf("%s is documented: a json:\"-\" field, an interface, a type no kind reaches and an unexported type are not part of the API", absent)
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	dir := filepath.Join("..", "..", "api", "v1alpha1")
	first, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := generate(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("two runs over the same source rendered different pages")
		}
	}
}

// TestGenerateCoversTheAPI checks the real API's page has a section for every
// kind and for every type a documented field uses, and names every field.
func TestGenerateCoversTheAPI(t *testing.T) {
	dir := filepath.Join("..", "..", "api", "v1alpha1")
	pkg, err := loadPackage(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, kind := range []string{"TerraformCluster", "TerraformClusterTemplate", "TerraformMachine", "TerraformMachineTemplate",
		"TerraformMachinePool", "TerraformMachinePoolTemplate", "TerraformClusterIdentity", "TerraformPlan"} {
		if !strings.Contains(s, "\n### "+kind+"\n") {
			t.Errorf("kind %s has no section", kind)
		}
	}
	for name, ti := range pkg.Types {
		if !strings.Contains(s, "\n### "+name+"\n") {
			continue
		}
		for _, f := range ti.Fields {
			if f.Type.Local != "" && !strings.Contains(s, "\n### "+f.Type.Local+"\n") {
				t.Errorf("field %s.%s has type %s, which has no section", name, f.GoName, f.Type.Local)
			}
			if f.Inline {
				continue
			}
			if !strings.Contains(s, "| `"+f.JSONName+"` |") {
				t.Errorf("field %s.%s (%s) is not documented", name, f.GoName, f.JSONName)
			}
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		wantErr string
	}{
		{
			name:    "a package without +groupName",
			source:  "// Package v1 has no group.\npackage v1\n\n// +kubebuilder:object:root=true\n\n// A is a kind.\ntype A struct{}\n",
			wantErr: "no +groupName marker",
		},
		{
			name:    "a constant outside its type's Enum",
			source:  "// +groupName=x.io\npackage v1\n\n// C is a color.\n// +kubebuilder:validation:Enum=red\ntype C string\n\nconst Blue C = \"blue\"\n\n// +kubebuilder:object:root=true\n\n// A is a kind.\ntype A struct{ C C `json:\"c\"` }\n",
			wantErr: `constant Blue = "blue" is not one of its Enum values`,
		},
		{
			name:    "a field marked both required and optional",
			source:  "// +groupName=x.io\npackage v1\n\n// +kubebuilder:object:root=true\n\n// A is a kind.\ntype A struct {\n\t// b is both.\n\t// +required\n\t// +optional\n\tB string `json:\"b\"`\n}\n",
			wantErr: "field B is marked both +required and +optional",
		},
		{
			name:    "a field without a json tag",
			source:  "// +groupName=x.io\npackage v1\n\n// +kubebuilder:object:root=true\n\n// A is a kind.\ntype A struct{ B string }\n",
			wantErr: "field B has no json tag",
		},
		{
			name:    "a malformed marker names itself",
			source:  "// +groupName=x.io\npackage v1\n\n// +kubebuilder:object:root=true\n// +kubebuilder:printcolumn:name=\"open\n\n// A is a kind.\ntype A struct{}\n",
			wantErr: "marker +kubebuilder:printcolumn",
		},
		{
			name:    "no kind at all",
			source:  "// +groupName=x.io\npackage v1\n\n// A is not a kind.\ntype A struct{}\n",
			wantErr: "no kinds found",
		},
		{
			name:    "Go that does not parse",
			source:  "// +groupName=x.io\npackage v1\n\ntype A struct{\n",
			wantErr: "parsing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "types.go"), []byte(tt.source), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := generate(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
	if _, err := generate(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no Go files") {
		t.Errorf("an empty directory: want a 'no Go files' error, got %v", err)
	}
}

func TestRunWritesThePageAtomically(t *testing.T) {
	out := filepath.Join(t.TempDir(), "nested", "api.md")
	api, err := filepath.Abs(filepath.Join("testdata", "api", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-api", api, "-out", out}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(api)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the written page differs from the generated one")
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("want only api.md in the output directory, found %d entries", len(entries))
	}

	// A failed run leaves the existing page untouched.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "a.go"), []byte("package v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-api", broken, "-out", out}, nil); err == nil {
		t.Fatal("want an error for a package without +groupName")
	}
	again, _ := os.ReadFile(out)
	if !bytes.Equal(again, want) {
		t.Error("a failed run changed the page")
	}

	var stdout bytes.Buffer
	if err := run([]string{"-api", api, "-out", "-"}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Error(`-out - printed a different page`)
	}
	if err := run([]string{"extra"}, nil); err == nil {
		t.Error("want an error for a stray argument")
	}
}

func BenchmarkGenerate(b *testing.B) {
	dir := filepath.Join("..", "..", "api", "v1alpha1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := generate(dir); err != nil {
			b.Fatal(err)
		}
	}
}
