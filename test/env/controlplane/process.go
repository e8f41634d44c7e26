package controlplane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one binary of the control plane run as a child process, its
// output kept in a log file.
type Process struct {
	Name    string
	LogPath string

	// bin, args and env are kept to start the process again (Restart).
	bin  string
	args []string
	env  []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess runs bin with args, writing stdout and stderr to
// <logDir>/<name>.log. The process gets its own process group and is killed
// if the process that started it dies.
func StartProcess(name, bin string, args []string, logDir string) (*Process, error) {
	return StartProcessEnv(name, bin, args, logDir, nil)
}

// StartProcessEnv is StartProcess with extra environment variables
// (NAME=value) added to the current environment.
func StartProcessEnv(name, bin string, args []string, logDir string, env []string) (*Process, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create log folder for %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: filepath.Join(logDir, name+".log"), bin: bin, args: args, env: env}
	if err := p.start(os.O_CREATE | os.O_TRUNC | os.O_WRONLY); err != nil {
		return nil, err
	}
	return p, nil
}

// start starts the process, its log file opened with flag.
func (p *Process) start(flag int) error {
	logFile, err := os.OpenFile(p.LogPath, flag, 0o644)
	if err != nil {
		return fmt.Errorf("failed to open the log file of %s: %w", p.Name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startFromSpawner(cmd); err != nil {
		logFile.Close()
		return fmt.Errorf("failed to start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.err = err
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Start starts a stopped process again with the same binary, arguments and
// environment, appending to its log. It fails if the process still runs.
func (p *Process) Start() error {
	select {
	case <-p.Exited():
	default:
		return errors.New(p.Name + " is still running")
	}
	return p.start(os.O_CREATE | os.O_APPEND | os.O_WRONLY)
}

// Pdeathsig is delivered when the thread that forked the child ends, not
// the process; and the Go runtime does end threads (those a goroutine locked
// and left, as the kubelet does for each container). So every long-lived
// child is forked from one thread that a goroutine holds for the life of the
// process: the children die with the process, and only with it.
var (
	spawnOnce sync.Once
	spawnReq  chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

func startFromSpawner(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReq = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for r := range spawnReq {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnReq <- spawnRequest{cmd, errc}
	return <-errc
}

// Pid returns the process id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Exited is closed once the process (as last started) has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Err returns how the process (as last started) ended: nil while it runs
// or when it exited with status 0.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// ExitError describes how the process ended, with the tail of its log.
func (p *Process) ExitError() error {
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	return fmt.Errorf("%s exited (%v); last log lines:\n%s", p.Name, err, p.LogTail(20))
}

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) error {
	done, pid := p.Exited(), p.Pid()
	select {
	case <-done:
		return nil
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New(p.Name + " did not exit after SIGKILL")
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("failed to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
