package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/captf-io/cluster-api-provider-terraform/internal/cli"
)

var built struct {
	once sync.Once
	path string
	err  error
}

// binary builds kubectl-captf once per test binary (for the benchmark),
// stripped as a release is.
func binary(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-captf-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "kubectl-captf")
		out, err := exec.Command("go", "build", "-ldflags", "-s -w", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = err
			tb.Logf("%s", out)
		}
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// TestVersionAndHelpNeedNoCluster checks that version, --help and
// completion run with no kubeconfig at all: the clients are built on first
// use only.
func TestVersionAndHelpNeedNoCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	t.Setenv("HOME", t.TempDir())
	for _, args := range [][]string{{"version"}, {"--help"}, {"completion", "bash"}} {
		var out, errOut bytes.Buffer
		if code := cli.Execute(context.Background(), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args); code != 0 {
			t.Fatalf("kubectl-captf %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		if args[0] == "version" && !strings.HasPrefix(out.String(), "kubectl-captf ") {
			t.Errorf("version printed %q", out.String())
		}
	}
}

// BenchmarkStart is the plugin's start-up: exec of the built binary
// running version, which is what `kubectl captf` adds before any API call.
// The budget is 100 ms per run.
func BenchmarkStart(b *testing.B) {
	bin := binary(b)
	var cpu time.Duration
	n := 0
	for b.Loop() {
		cmd := exec.Command(bin, "version")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		n++
	}
	// The CPU the process used, which a busy machine does not inflate
	// the way it does the wall time.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/op")
}
