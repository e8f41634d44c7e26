package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
)

// fakeRuntime answers the four commands of an unguarded apply instantly,
// so that what is left of a Job's time is the runner's own.
const fakeRuntime = `#!/bin/sh
case "$1" in
  version) echo '{"terraform_version":"0.0.0-fake"}' ;;
  validate) echo '{"format_version":"1.0","valid":true,"error_count":0,"warning_count":0,"diagnostics":[]}' ;;
  apply) echo 'Apply complete! Resources: 0 added, 0 changed, 0 destroyed.' ;;
esac
exit 0
`

// BenchmarkRunnerOverhead measures the runner's own cost per Job beyond the
// runtime's processes: a whole `runner run --op apply` (process start,
// flags, preflight, root, environment, four runtime commands, result
// document) against the same four commands exec'd directly. The figure that
// matters is overhead-ms/op (goal: under 150 ms).
func BenchmarkRunnerOverhead(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "runtime")
	module := filepath.Join(dir, "module")
	config := filepath.Join(dir, "config")
	work := filepath.Join(dir, "work")
	for _, d := range []string{module, config, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	files := map[string]string{
		bin:                                      fakeRuntime,
		filepath.Join(module, "main.tf"):         "",
		filepath.Join(config, runner.MainFile):   `{"terraform":{"backend":{"kubernetes":{}}},"module":{"role":{"source":"../../module"}}}`,
		filepath.Join(config, runner.TFVarsFile): `{}`,
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	args := []string{"run", "--op=apply", "--bin=" + bin, "--module=" + module, "--providers=" + filepath.Join(dir, "none"),
		"--workdir=" + work, "--config=" + config, "--result=" + filepath.Join(dir, "result"),
		"--backend-config=secret_suffix=x", "--backend-config=namespace=ns"}
	o := &runner.Options{LockTimeout: runner.DefaultLockTimeout, BackendConfig: []string{"secret_suffix=x", "namespace=ns"}}
	direct := [][]string{
		{"version", "-json"},
		runner.CommandArgs(o, runner.StepInit, false, "", ""),
		runner.CommandArgs(o, runner.StepValidate, false, "", ""),
		runner.CommandArgs(o, runner.StepApply, false, "", ""),
	}
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + b.TempDir()}
	root := runner.RootDir(work)

	var viaRunner, viaDirect time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(runnerBin, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("runner: %v\n%s", err, out)
		}
		viaRunner += time.Since(start)

		start = time.Now()
		for _, a := range direct {
			c := exec.Command(bin, a...)
			c.Dir, c.Env = root, env
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("direct: %v\n%s", err, out)
			}
		}
		viaDirect += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(viaRunner.Microseconds())/1000/n, "runner-ms/op")
	b.ReportMetric(float64(viaDirect.Microseconds())/1000/n, "direct-ms/op")
	b.ReportMetric(float64((viaRunner-viaDirect).Microseconds())/1000/n, "overhead-ms/op")
}
