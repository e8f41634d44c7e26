package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

const slowLine = "terraform_data.slow[0]: Provisioning with 'local-exec'"

// TestSIGTERMInterruptsApply: SIGTERM in the middle of an apply reaches the
// runtime, which stops its provisioner, writes state and releases the lock;
// the run reports interrupted (Runtime Environment, "Lock timeout and stop
// timeout"). On OpenTofu and on Terraform.
func TestSIGTERMInterruptsApply(t *testing.T) { onRuntimes(t, testSIGTERMInterruptsApply) }

func testSIGTERMInterruptsApply(t *testing.T, rt tools.Runtime) {
	f := newFixtureOn(t, contract.RoleCluster, rt)
	f.render(`{"slow_seconds":120}`)
	s := f.start(f.baseEnv(), f.args("apply"))
	s.stdout.waitFor(t, slowLine, 2*time.Minute)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := s.finish()
	if out.code != runner.ExitFailure {
		t.Errorf("exit %d, want 1", out.code)
	}
	e := out.doc.Error
	if e == nil || e.Kind != infrav1.RunErrorInterrupted || e.Step == nil || *e.Step != runner.StepApply {
		t.Fatalf("error %+v\n%s", e, out.log())
	}
	if out.took > time.Minute {
		t.Errorf("the run took %s: the runtime did not stop on SIGTERM", out.took)
	}
	if l := f.lease(); l.Spec.HolderIdentity != nil {
		t.Errorf("the state lock Lease is still held by %s", *l.Spec.HolderIdentity)
	}
	if last := out.doc.Steps[len(out.doc.Steps)-1]; last.Name != runner.StepApply || last.Exit == 0 {
		t.Errorf("last step %+v", last)
	}
	// What finished before the signal is in the state.
	if st := f.state(); st.ManagedResources == 0 {
		t.Errorf("no state written on the way out")
	}
}

// TestStaleLock: a runner killed outright leaves the lock Lease held; the
// next run fails on it, and one passed the stale lock ID force-unlocks it
// right after init and succeeds; a lock already released is success too.
// On OpenTofu and on Terraform.
func TestStaleLock(t *testing.T) { onRuntimes(t, testStaleLock) }

func testStaleLock(t *testing.T, rt tools.Runtime) {
	f := newFixtureOn(t, contract.RoleCluster, rt)
	f.render(`{"slow_seconds":120}`)

	// SIGKILL the runner and everything under it, as a node loss would.
	s := f.start(f.baseEnv(), f.args("apply"))
	s.stdout.waitFor(t, slowLine, 2*time.Minute)
	s.killGroup()
	_ = s.cmd.Wait()
	l := f.lease()
	if l.Spec.HolderIdentity == nil {
		t.Fatalf("the killed run left no lock")
	}
	lockID := *l.Spec.HolderIdentity

	f.render(`{"slow_seconds":0}`)
	t.Run("a held lock fails the run at the first locking step", func(t *testing.T) {
		out := f.run("apply", "--lock-timeout=0s")
		e := out.doc.Error
		if out.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorStep || *e.Step != runner.StepApply {
			t.Fatalf("exit %d result %s", out.code, out.raw)
		}
		if !strings.Contains(e.Tail, "Error acquiring the state lock") {
			t.Errorf("summary %q", e.Tail)
		}
	})

	t.Run("--force-unlock clears the stale lock right after init", func(t *testing.T) {
		out := f.run("apply", "--force-unlock="+lockID)
		f.mustSucceed(out, "init,force-unlock,validate,apply")
		if l := f.lease(); l.Spec.HolderIdentity != nil {
			t.Errorf("lock still held")
		}
	})

	t.Run("an already unlocked state is success", func(t *testing.T) {
		out := f.run("refresh", "--force-unlock="+lockID)
		f.mustSucceed(out, "init,force-unlock,refresh")
		if out.doc.Steps[1].Exit == 0 {
			t.Errorf("force-unlock of a free lock exited 0; the test no longer proves the tolerance")
		}
	})
}

// signalRuntime is a runtime stand-in whose apply starts a child playing a
// provider plugin and waits; on SIGTERM it reports it and kills the plugin
// before the plugin could react. With ignore, it ignores SIGTERM.
func signalRuntime(ignore bool) string {
	apply := `sh -c 'trap "echo plugin-got-TERM >&2; exit 0" TERM; while :; do sleep 0.1; done' &
    plugin=$!
    trap 'echo runtime-got-TERM >&2; kill -KILL $plugin; exit 1' TERM`
	if ignore {
		// No plugin here: nothing would be left to stop it once the
		// runtime is killed.
		apply = `trap '' TERM`
	}
	return `#!/bin/sh
case "$1" in
  version) echo '{"terraform_version":"0.0.0-fake"}' ;;
  validate) echo '{"valid":true,"diagnostics":[]}' ;;
  apply)
    ` + apply + `
    echo apply-running
    while :; do sleep 0.1; done ;;
esac
exit 0
`
}

// fakeJob lays out a Job around a runtime script; it needs no API server.
func fakeJob(t *testing.T, script string) (*fixture, []string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"module", "config"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		"runtime":                     script,
		"module/main.tf":              "",
		"config/" + runner.MainFile:   `{}`,
		"config/" + runner.TFVarsFile: `{}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, dir: dir}
	return f, []string{"run", "--op=apply", "--bin=" + filepath.Join(dir, "runtime"), "--module=" + filepath.Join(dir, "module"),
		"--providers=" + filepath.Join(dir, "none"), "--workdir=" + filepath.Join(dir, "work"),
		"--config=" + filepath.Join(dir, "config"), "--result=" + filepath.Join(dir, "termination-log")}
}

// TestSIGTERMReachesTheRuntimeOnly: the runner forwards SIGTERM to the
// runtime's pid, never to its plugins, which hear from the runtime.
func TestSIGTERMReachesTheRuntimeOnly(t *testing.T) {
	f, args := fakeJob(t, signalRuntime(false))
	s := f.startRaw([]string{"PATH=/usr/bin:/bin"}, args)
	s.stdout.waitFor(t, "apply-running", 30*time.Second)
	time.Sleep(200 * time.Millisecond) // let the runtime install its trap
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := s.finish()
	if !strings.Contains(out.stderr, "runtime-got-TERM") {
		t.Errorf("the runtime never got SIGTERM:\n%s", out.log())
	}
	if strings.Contains(out.stderr, "plugin-got-TERM") {
		t.Errorf("a plugin got SIGTERM from the runner")
	}
	if e := out.doc.Error; e == nil || e.Kind != infrav1.RunErrorInterrupted || *e.Step != runner.StepApply {
		t.Errorf("result %s", out.raw)
	}
}

// TestStopTimeoutKillsTheRuntime: a runtime that ignores SIGTERM is killed
// once --stop-timeout has passed; the run still reports interrupted.
func TestStopTimeoutKillsTheRuntime(t *testing.T) {
	f, args := fakeJob(t, signalRuntime(true))
	s := f.startRaw([]string{"PATH=/usr/bin:/bin"}, append(args, "--stop-timeout=100ms"))
	s.stdout.waitFor(t, "apply-running", 30*time.Second)
	time.Sleep(200 * time.Millisecond)
	signalled := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out := s.finish()
	if took := time.Since(signalled); took > 15*time.Second {
		t.Errorf("stopping took %s", took)
	}
	if !strings.Contains(out.stderr, "Stop timeout reached") {
		t.Errorf("the runtime was not killed after the stop timeout:\n%s", out.log())
	}
	e := out.doc.Error
	if out.code != runner.ExitFailure || e == nil || e.Kind != infrav1.RunErrorInterrupted {
		t.Fatalf("exit %d result %s", out.code, out.raw)
	}
	if last := out.doc.Steps[len(out.doc.Steps)-1]; last.Exit != -1 {
		t.Errorf("killed step exit %d, want -1", last.Exit)
	}
}
