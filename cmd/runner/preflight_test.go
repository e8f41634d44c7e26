package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
)

// TestPreflight: a module dir without a top-level module file, or a runtime
// that cannot be executed, stops the Job with image-layout before any
// command; a missing run configuration stops it before any command too.
func TestPreflight(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "runtime")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho should-not-run >&2\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExe := filepath.Join(t.TempDir(), "runtime")
	if err := os.WriteFile(notExe, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goodModule := t.TempDir()
	if err := os.WriteFile(filepath.Join(goodModule, "main.tf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyModule := t.TempDir()
	if err := os.MkdirAll(filepath.Join(emptyModule, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emptyModule, "nested", "main.tf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		module   string
		bin      string
		config   string
		wantKind infrav1.RunErrorKind
		wantStep string
		wantTail string
	}{
		{"module without a top-level .tf/.tf.json/.tofu/.tofu.json file", emptyModule, exe, t.TempDir(), infrav1.RunErrorImageLayout, "", "no .tf, .tf.json, .tofu or .tofu.json file"},
		{"runtime that is not executable", goodModule, notExe, t.TempDir(), infrav1.RunErrorImageLayout, "", "not executable"},
		{"runtime that is missing", goodModule, "/nonexistent/runtime", t.TempDir(), infrav1.RunErrorImageLayout, "", "is missing"},
		{"run configuration without main.tf.json", goodModule, exe, t.TempDir(), infrav1.RunErrorStep, "prepare", "main.tf.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res := filepath.Join(dir, "termination-log")
			s := &fixture{t: t, dir: dir}
			st := s.startRaw(nil, []string{"run", "--op=apply", "--bin=" + tc.bin, "--module=" + tc.module,
				"--providers=" + filepath.Join(dir, "none"), "--workdir=" + filepath.Join(dir, "work"),
				"--config=" + tc.config, "--result=" + res})
			out := st.finish()
			if out.code != 1 {
				t.Errorf("exit %d, want 1", out.code)
			}
			e := out.doc.Error
			if e == nil || e.Kind != tc.wantKind || !strings.Contains(e.Tail, tc.wantTail) {
				t.Fatalf("error %+v", e)
			}
			if (e.Step == nil) != (tc.wantStep == "") || (e.Step != nil && *e.Step != tc.wantStep) {
				t.Errorf("error step %v, want %q", e.Step, tc.wantStep)
			}
			if len(out.doc.Steps) != 0 || strings.Contains(out.log(), "should-not-run") {
				t.Errorf("a command ran: steps %v", out.doc.Steps)
			}
			if out.doc.Image.ProvidersMirror {
				t.Errorf("no mirror, but providersMirror is true")
			}
			if _, err := result.Decode(out.raw); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFailedStepExitCodeAndSummary: a failing step stops the Job at that
// step; the runner exits with the step's own code and the summary comes
// from validate's JSON diagnostics, never from raw output.
func TestFailedStepExitCodeAndSummary(t *testing.T) {
	script := `#!/bin/sh
case "$1" in
  version) echo '{"terraform_version":"0.0.0-fake"}' ;;
  validate)
    echo '{"valid":false,"error_count":1,"diagnostics":[{"severity":"error","summary":"Unsupported argument","detail":"raw-detail-text","range":{"filename":"../../module/main.tf","start":{"line":3,"column":1,"byte":0},"end":{"line":3,"column":2,"byte":1}}}]}'
    echo 'raw stderr line' >&2
    exit 3 ;;
  apply) echo should-not-run; exit 0 ;;
esac
exit 0
`
	f, args := fakeJob(t, script)
	out := f.startRaw([]string{"PATH=/usr/bin:/bin"}, args).finish()
	if out.code != 3 {
		t.Errorf("exit %d, want the failing step's 3", out.code)
	}
	e := out.doc.Error
	if e == nil || e.Kind != infrav1.RunErrorStep || *e.Step != "validate" || e.Tail != "Unsupported argument (../../module/main.tf:3)" {
		t.Fatalf("error %+v", e)
	}
	if got := out.steps(); got != "init,validate" {
		t.Errorf("steps %s: the run must stop at the failing step", got)
	}
	if !strings.Contains(out.stdout, "raw-detail-text") || !strings.Contains(out.stderr, "raw stderr line") {
		t.Errorf("validate's output must still reach the pod log")
	}
}
