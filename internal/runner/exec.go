package runner

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// stderrTailBytes is how much of a step's stderr is kept in memory for the
// failure summary; the whole stream always goes to the pod log.
const stderrTailBytes = 64 << 10

// maxCaptureBytes caps a captured stdout (show -json, validate -json,
// state list, version -json).
const maxCaptureBytes = 256 << 20

// stdoutMode says where a step's standard output goes.
type stdoutMode int

const (
	// stdoutLog streams stdout to the pod log.
	stdoutLog stdoutMode = iota
	// stdoutLogAndCapture streams it to the log and keeps a copy.
	stdoutLogAndCapture
	// stdoutCaptureOnly keeps it in memory and never logs it (show -json:
	// a plan document carries every input value).
	stdoutCaptureOnly
)

// stepSpec is one runtime command.
type stepSpec struct {
	name   string
	args   []string
	stdout stdoutMode
	// accept lists the exit codes that count as success besides 0.
	accept []int
	// onLine, when set, sees every stdout line.
	onLine func(string)
	// acceptStderr, when set, accepts a failed exit whose stderr it
	// recognizes (force-unlock of a lock no longer held).
	acceptStderr func([]byte) bool
	// verify, when set, checks the output of an accepted step; an error
	// fails the step with the error as its summary.
	verify func(stepOutcome) error
}

// stepOutcome is what a step did.
type stepOutcome struct {
	exit        int
	seconds     float64
	stdout      []byte
	stderrTail  []byte
	startErr    error
	interrupted bool
}

func (o stepOutcome) accepted(spec stepSpec) bool {
	if o.startErr != nil {
		return false
	}
	if o.exit == 0 {
		return true
	}
	for _, c := range spec.accept {
		if o.exit == c {
			return true
		}
	}
	return false
}

// executor runs runtime commands one at a time with the generated root as
// working directory and the rewritten environment, forwarding a stop
// request (SIGTERM) to the runtime process only.
type executor struct {
	bin    []string
	dir    string
	env    []string
	stdout io.Writer
	stderr io.Writer
	// sensitive are the values redacted from everything a step's output
	// feeds: the pod log, the stderr tail the failure summary is built
	// from, a captured stdout that is logged, and onLine. Only a
	// capture-only stdout (show -json, never logged, parsed for the plan)
	// is kept raw.
	sensitive   []string
	stopTimeout time.Duration
	// stop is closed when the runner receives SIGTERM or SIGINT.
	stop <-chan struct{}
}

func (e *executor) stopped() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// run execs the runtime with spec's arguments and waits for it. On a stop
// request it sends SIGTERM to the runtime's pid (never to its process group,
// so provider plugins hear from the runtime, not from the runner), waits up
// to stopTimeout, then sends SIGKILL.
func (e *executor) run(spec stepSpec) stepOutcome {
	if e.stopped() {
		return stepOutcome{exit: -1, interrupted: true}
	}
	args := append(append([]string{}, e.bin...), spec.args...)
	cmd := &exec.Cmd{
		Path: e.bin[0],
		Args: args,
		Dir:  e.dir,
		Env:  e.env,
		// A plugin left holding the output pipes must not hold the step.
		WaitDelay: 5 * time.Second,
	}

	// The tail sits behind the redactor: the failure summary, and so status
	// and events, are built only from output that has been redacted.
	tail := &tailBuffer{limit: stderrTailBytes}
	stderr := newRedactor(io.MultiWriter(e.stderr, tail), e.sensitive)
	cmd.Stderr = stderr
	var captured *cappedBuffer
	var lines *lineWriter
	var redacted, raw []io.Writer
	switch spec.stdout {
	case stdoutLog:
		redacted = append(redacted, e.stdout)
	case stdoutLogAndCapture:
		captured = &cappedBuffer{limit: maxCaptureBytes}
		redacted = append(redacted, e.stdout, captured)
	case stdoutCaptureOnly:
		captured = &cappedBuffer{limit: maxCaptureBytes}
		raw = append(raw, captured)
	}
	if spec.onLine != nil {
		lines = &lineWriter{fn: spec.onLine}
		redacted = append(redacted, lines)
	}
	var stdout io.Writer
	if len(redacted) > 0 {
		stdout = newRedactor(io.MultiWriter(redacted...), e.sensitive)
		raw = append(raw, stdout)
	}
	cmd.Stdout = io.MultiWriter(raw...)

	klog.InfoS("Step started", "step", spec.name, "args", spec.args)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return stepOutcome{exit: -1, startErr: err, seconds: time.Since(start).Seconds()}
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := e.stop
	var kill <-chan time.Time
	interrupted := false
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-done:
			break wait
		case <-stop:
			stop = nil
			interrupted = true
			klog.InfoS("Stop requested; forwarding SIGTERM to the runtime", "step", spec.name, "pid", cmd.Process.Pid, "stopTimeout", e.stopTimeout)
			if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
				klog.ErrorS(err, "Sending SIGTERM to the runtime failed", "step", spec.name)
			}
			t := time.NewTimer(e.stopTimeout)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			klog.InfoS("Stop timeout reached; killing the runtime", "step", spec.name, "pid", cmd.Process.Pid)
			_ = cmd.Process.Kill()
		}
	}
	if stdout != nil {
		flush(stdout)
	}
	flush(stderr)
	if lines != nil {
		lines.flush()
	}
	flush(e.stdout)
	flush(e.stderr)
	out := stepOutcome{
		exit:        exitCode(cmd, waitErr),
		seconds:     time.Since(start).Seconds(),
		stderrTail:  tail.Bytes(),
		interrupted: interrupted,
	}
	if captured != nil {
		out.stdout = captured.Bytes()
	}
	return out
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState != nil {
		return cmd.ProcessState.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

// cappedBuffer keeps the first limit bytes written to it and discards the
// rest (still reporting a full write, so the runtime is never blocked).
type cappedBuffer struct {
	mu        sync.Mutex
	limit     int
	buf       bytes.Buffer
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - c.buf.Len()
	if room < len(p) {
		c.truncated = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

func (c *cappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf.Bytes()...)
}

// lineWriter calls fn for every complete line written to it; a line longer
// than 64 KiB is cut.
type lineWriter struct {
	fn      func(string)
	partial []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(l.partial) < 64<<10 {
				room := min(len(p), 64<<10-len(l.partial))
				l.partial = append(l.partial, p[:room]...)
			}
			break
		}
		l.partial = append(l.partial, p[:i]...)
		l.fn(string(bytes.TrimRight(l.partial, "\r")))
		l.partial = l.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineWriter) flush() {
	if len(l.partial) > 0 {
		l.fn(string(l.partial))
		l.partial = nil
	}
}

// stdStreams are the runner's own output streams (the pod log).
var stdStreams = struct{ out, err io.Writer }{os.Stdout, os.Stderr}
