package docs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// block is one ```sh block of a page.
type block struct {
	page string
	line int
	text string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// shBlocks returns the ```sh blocks of the Markdown page at root/page, in
// order, as goldmark parses them (so a fence inside a list item or a
// longer fence counts as the reader sees it).
func shBlocks(root, page string) ([]block, error) {
	src, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var blocks []block
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		fc, ok := n.(*ast.FencedCodeBlock)
		if !entering || !ok || string(fc.Language(src)) != "sh" {
			return ast.WalkContinue, nil
		}
		var b strings.Builder
		lines := fc.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			b.Write(seg.Value(src))
		}
		line := 0
		if lines.Len() > 0 {
			line = bytes.Count(src[:lines.At(0).Start], []byte("\n")) + 1
		}
		blocks = append(blocks, block{page: page, line: line, text: b.String()})
		return ast.WalkSkipChildren, nil
	})
	return blocks, err
}

// commands returns the block's lines that are neither blank nor comments.
func (b block) commands() string {
	var out []string
	for _, l := range strings.Split(b.text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// output collects a process's output and wakes whoever waits for more.
type output struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	file   io.Writer
	notify chan struct{}
}

func newOutput(file io.Writer) *output {
	return &output{file: file, notify: make(chan struct{})}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.file != nil {
		_, _ = o.file.Write(p)
	}
	close(o.notify)
	o.notify = make(chan struct{})
	return len(p), nil
}

// since returns what was written from offset on, and a channel closed at
// the next write.
func (o *output) since(offset int) (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.buf.Bytes()[offset:]), o.notify
}

func (o *output) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Len()
}

// process is a command run in a process group of its own, as a terminal
// runs a command: Ctrl-C signals the whole group.
type process struct {
	cmd    *exec.Cmd
	out    *output
	exited chan struct{}
	err    error
}

func startProcess(dir string, env []string, out *output, stdin io.Reader, argv ...string) (*process, error) {
	p := &process{cmd: exec.Command(argv[0], argv[1:]...), out: out, exited: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Stdin = out, out, stdin
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitFor waits until the output from offset on holds want, the process
// exits, or timeout passes; it returns the output from offset up to want.
func (p *process) waitFor(offset int, want string, timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		got, more := p.out.since(offset)
		if i := strings.Index(got, want); i >= 0 {
			return got[:i], nil
		}
		select {
		case <-more:
		case <-p.exited:
			got, _ = p.out.since(offset)
			if i := strings.Index(got, want); i >= 0 {
				return got[:i], nil
			}
			return got, fmt.Errorf("the shell exited (%v)", p.err)
		case <-deadline.C:
			got, _ = p.out.since(offset)
			return got, fmt.Errorf("not done after %s", timeout)
		}
	}
}

// interrupt sends SIGINT to the process group, as Ctrl-C in its terminal
// does, and waits until every process of the group is gone; past timeout
// it kills the group. It reports whether the group ended on the
// interrupt.
func (p *process) interrupt(timeout time.Duration) bool {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	deadline := time.Now().Add(timeout)
	select {
	case <-p.exited:
	case <-time.After(timeout):
	}
	// The group outlives its leader while a child still runs. Nothing
	// reports on a group, so look again until it is empty.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		<-tick.C
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return false
}

// shell is the reader's working terminal: one bash session that runs the
// pages' blocks one after the other, so that variables exported by one
// block are there for the next, with -euo pipefail so that a failing
// command ends it.
type shell struct {
	t     *testing.T
	p     *process
	stdin io.WriteCloser
	dir   string
	n     int
}

func startShell(t *testing.T, root string, env []string) *shell {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProcess(root, env, newOutput(nil), r, "bash", "--noprofile", "--norc", "-euo", "pipefail")
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := &shell{t: t, p: p, stdin: w, dir: t.TempDir()}
	t.Cleanup(func() {
		s.stdin.Close()
		if !s.p.interrupt(time.Minute) {
			t.Logf("the working shell had to be killed")
		}
	})
	return s
}

// run runs script in the session, its standard input empty, and returns
// its output. A failing command ends the session, and run returns an error.
func (s *shell) run(script string, timeout time.Duration) (string, error) {
	s.n++
	file := filepath.Join(s.dir, fmt.Sprintf("block-%02d.sh", s.n))
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return "", err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	done := "__block_" + hex.EncodeToString(nonce[:]) + "_done__"
	offset := s.p.out.len()
	if _, err := fmt.Fprintf(s.stdin, "source %q </dev/null\nprintf '\\n%%s\\n' %s\n", file, done); err != nil {
		return "", fmt.Errorf("the shell is gone: %w", err)
	}
	out, err := s.p.waitFor(offset, "\n"+done+"\n", timeout)
	return out, err
}

// value returns the session's value of the variable name ("" when unset).
func (s *shell) value(name string) string {
	s.t.Helper()
	out, err := s.run(fmt.Sprintf("printf '%%s' \"${%s:-}\"", name), time.Minute)
	if err != nil {
		s.t.Fatalf("reading $%s in the shell: %v\n%s", name, err, out)
	}
	return out
}
