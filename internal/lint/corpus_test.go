package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// The module corpus (testdata/module/*.txt) holds, for every module check
// ID, a case that triggers exactly that finding and a near-miss that
// triggers nothing. A case starts from a clean module of its role written
// from internal/contract (writeBase), then deletes and writes files:
//
//	role: machine
//	want: <check ID> <severity> <file>:<line>   (file "-" for none; repeatable)
//	delete: <file>                              (repeatable)
//	-- <file> --
//	<content>

// baseOutputValue is a valid, non-literal-null value expression for each
// contract output.
var baseOutputValue = map[string]string{
	contract.OutputControlPlaneEndpoint: "var.control_plane_endpoint",
	contract.OutputFailureDomains:       "[]",
	contract.OutputExports:              "{}",
	contract.OutputHealth:               `{ state = "running", healthy = true, message = null, reasons = [] }`,
	contract.OutputProviderID:           `"base:///${var.captf_object.namespace}/${var.captf_object.name}"`,
	contract.OutputAddresses:            "[]",
	contract.OutputFailureDomain:        "null",
	contract.OutputInterruptible:        "false",
	contract.OutputProviderIDList:       "sort([])",
	contract.OutputReplicas:             "var.replicas",
	contract.OutputInstances:            "[]",
}

// writeBase writes a module that declares exactly the role's contract
// inputs (one file each, in_<name>.tf) and outputs (out_<name>.tf), tags
// a stand-in resource (main.tf) and sets required_version (versions.tf).
func writeBase(t testing.TB, dir string, role contract.Role) {
	t.Helper()
	for _, in := range role.Inputs() {
		var b strings.Builder
		fmt.Fprintf(&b, "variable %q {\n  type = %s\n", in.Name, in.Type)
		if in.Nullable {
			b.WriteString("  default = null\n")
		}
		if in.Sensitive {
			b.WriteString("  sensitive = true\n")
		}
		b.WriteString("}\n")
		writeFile(t, filepath.Join(dir, "in_"+in.Name+".tf"), b.String())
	}
	for _, name := range role.OutputNames() {
		v, ok := baseOutputValue[name]
		if !ok {
			t.Fatalf("no base value for output %s", name)
		}
		writeFile(t, filepath.Join(dir, "out_"+name+".tf"), fmt.Sprintf("output %q {\n  value = %s\n}\n", name, v))
	}
	writeFile(t, filepath.Join(dir, "main.tf"), "resource \"terraform_data\" \"tags\" {\n  input = var.captf_tags\n}\n")
	writeFile(t, filepath.Join(dir, "versions.tf"), "terraform {\n  required_version = \">= 1.5\"\n}\n")
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type corpusCase struct {
	name  string
	role  contract.Role
	want  []Finding
	del   []string
	files map[string]string
}

func readCorpus(t testing.TB) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/module/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var out []corpusCase
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{name: strings.TrimSuffix(filepath.Base(p), ".txt"), files: map[string]string{}, want: []Finding{}}
		cur := ""
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if n, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(n, " --") {
				cur = strings.TrimSuffix(n, " --")
				c.files[cur] = ""
				continue
			}
			if cur != "" {
				c.files[cur] += line
				continue
			}
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			switch k {
			case "role":
				c.role = contract.Role(v)
			case "delete":
				c.del = append(c.del, v)
			case "want":
				f := strings.Fields(v)
				if len(f) != 3 {
					t.Fatalf("%s: want line %q", p, v)
				}
				file, line, _ := strings.Cut(f[2], ":")
				if file == "-" {
					file = ""
				}
				n, err := strconv.Atoi(line)
				if err != nil {
					t.Fatalf("%s: want line %q", p, v)
				}
				c.want = append(c.want, Finding{ID: f[0], Severity: Severity(f[1]), File: file, Line: n})
			case "":
			default:
				t.Fatalf("%s: unknown header %q", p, k)
			}
		}
		out = append(out, c)
	}
	return out
}

func (c corpusCase) materialize(t testing.TB) string {
	dir := t.TempDir()
	writeBase(t, dir, c.role)
	for _, d := range c.del {
		if err := os.Remove(filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	for n, content := range c.files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(n)), content)
	}
	return dir
}

func (c corpusCase) wantExit(strict bool) int {
	code := ExitOK
	for _, f := range c.want {
		if f.Severity == SeverityError || (strict && f.Severity == SeverityWarning) {
			code = ExitFindings
		}
	}
	return code
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBaseModulesLintClean: the module every corpus case starts from lints
// with no finding at all under --strict, for every role.
func TestBaseModulesLintClean(t *testing.T) {
	for _, role := range contract.Roles() {
		dir := t.TempDir()
		writeBase(t, dir, role)
		code, out, stderr := run("module", dir, "--role", string(role), "--strict", "--json")
		if code != ExitOK || !strings.Contains(out, `"findings": []`) {
			t.Errorf("%s: exit %d\n%s%s", role, code, out, stderr)
		}
	}
}

// TestModuleCorpus runs every corpus case in JSON and text, with and
// without --strict, and checks the findings (ID, severity, file, line) and
// the exit code (reference: tfcapi-lint CLI, "Module checks", "Exit codes").
func TestModuleCorpus(t *testing.T) {
	cases := readCorpus(t)
	covered := map[string][2]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.materialize(t)
			for _, strict := range []bool{false, true} {
				args := []string{"module", dir, "--role", string(c.role), "--json"}
				if strict {
					args = append(args, "--strict")
				}
				code, out, stderr := run(args...)
				if code != c.wantExit(strict) {
					t.Errorf("strict=%v: exit %d, want %d\n%s%s", strict, code, c.wantExit(strict), out, stderr)
				}
				var r Report
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("JSON report: %v\n%s", err, out)
				}
				if r.Findings == nil {
					t.Error("findings is null")
				}
				got := make([]Finding, 0, len(r.Findings))
				for _, f := range r.Findings {
					if f.Message == "" {
						t.Errorf("%s: empty message", f.ID)
					}
					got = append(got, Finding{ID: f.ID, Severity: f.Severity, File: f.File, Line: f.Line})
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("findings = %+v\nwant %+v\n%s", got, c.want, out)
				}
				// The text report says the same, one line per finding.
				textArgs := []string{"module", dir, "--role", string(c.role)}
				if strict {
					textArgs = append(textArgs, "--strict")
				}
				code, text, _ := run(textArgs...)
				t.Logf("%s", text)
				if code != c.wantExit(strict) {
					t.Errorf("text, strict=%v: exit %d, want %d", strict, code, c.wantExit(strict))
				}
				for _, f := range c.want {
					loc := f.File
					if loc == "" {
						loc = "<module>"
					} else if f.Line > 0 {
						loc += ":" + strconv.Itoa(f.Line)
					}
					if !strings.Contains(text, fmt.Sprintf("%s: %s [%s] ", loc, f.Severity, f.ID)) {
						t.Errorf("text report lacks %s %s [%s]:\n%s", loc, f.Severity, f.ID, text)
					}
				}
				if want := fmt.Sprintf("%d error(s), %d warning(s), %d info\n", r.Summary.Error, r.Summary.Warning, r.Summary.Info); !strings.HasSuffix(text, want) {
					t.Errorf("text summary: want %q in\n%s", want, text)
				}
			}
		})
		id := strings.ReplaceAll(strings.SplitN(c.name, ".", 2)[0], "-", "/")
		// Module check IDs have one slash: input-tags-unused -> input/tags-unused.
		if i := strings.Index(id, "/"); i >= 0 {
			id = id[:i+1] + strings.ReplaceAll(id[i+1:], "/", "-")
		}
		v := covered[id]
		if strings.HasSuffix(c.name, ".near") {
			v[1] = true
			if len(c.want) != 0 {
				t.Errorf("%s: a near-miss must lint clean", c.name)
			}
		} else {
			v[0] = true
			for _, f := range c.want {
				if f.ID != id {
					t.Errorf("%s: triggers %s, not only %s", c.name, f.ID, id)
				}
			}
			if len(c.want) != 1 {
				t.Errorf("%s: a trigger must want exactly one finding", c.name)
			}
		}
		covered[id] = v
	}
	for _, ch := range Checks() {
		if ch.Image {
			continue
		}
		if v := covered[ch.ID]; !v[0] || !v[1] {
			t.Errorf("check %s: corpus has trigger=%v near-miss=%v; want both", ch.ID, v[0], v[1])
		}
	}
}
