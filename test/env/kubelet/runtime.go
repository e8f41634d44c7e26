package kubelet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// mountSpec is one bind mount into a container's root.
type mountSpec struct {
	Source   string // host path
	Target   string // path inside the container
	ReadOnly bool
}

// sortMounts orders mounts as container runtimes do, a parent before
// what is mounted inside it (fewer path elements first, the pod's order
// kept otherwise): a volume at /tmp must not cover one at
// /tmp/k8s-webhook-server/serving-certs, whichever the pod lists first.
func sortMounts(mounts []mountSpec) {
	depth := func(p string) int { return len(strings.Split(filepath.Clean(p), "/")) }
	slices.SortStableFunc(mounts, func(a, b mountSpec) int { return depth(a.Target) - depth(b.Target) })
}

// containerSpec is everything needed to start one container process.
type containerSpec struct {
	Hostname string
	// NetNS, when set, is the file of the pod's network namespace, which
	// the process joins; PodIP is the pod's address, for /etc/hosts.
	NetNS     string
	PodIP     string
	ImageRoot string // unpacked image, the overlay's lower folder
	Dir       string // scratch folder for the overlay's upper, work and merged folders
	Mounts    []mountSpec
	// TerminationLog is the host file bind-mounted at TerminationLogPath.
	TerminationLog     string
	TerminationLogPath string
	ReadOnlyRoot       bool

	Path    string // executable, as seen inside the container
	Args    []string
	Env     []string
	WorkDir string
	UID     uint32
	GID     uint32
	Groups  []uint32
	Log     *os.File
}

// startContainer starts the container's process chrooted into an overlay of
// the image root, with the volumes bind-mounted at their paths, in a private
// mount and UTS namespace and its own process group.
//
// The namespaces are created on a locked OS thread that is thrown away
// afterwards: the process is forked from that thread, so it alone (with its
// children) lives in the new namespaces, and every mount vanishes when the
// process ends. Nothing is mounted in the namespace of the caller.
func startContainer(s containerSpec) (*exec.Cmd, error) {
	for _, d := range []string{"upper", "work", "merged"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("failed to create container folder: %w", err)
		}
	}
	return startOnThrowawayThread(s)
}

func startOnThrowawayThread(s containerSpec) (*exec.Cmd, error) {
	type result struct {
		cmd *exec.Cmd
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread is never ended by the runtime, so it must
			// not enter the namespaces. While this goroutine holds it,
			// another goroutine necessarily gets another thread.
			cmd, err := startOnThrowawayThread(s)
			runtime.UnlockOSThread()
			ch <- result{cmd, err}
			return
		}
		// Never unlocked: the runtime ends this thread when the goroutine
		// returns, taking its namespaces with it.
		cmd, err := startInNamespace(s)
		ch <- result{cmd, err}
	}()
	r := <-ch
	return r.cmd, r.err
}

func startInNamespace(s containerSpec) (*exec.Cmd, error) {
	if s.NetNS != "" {
		f, err := os.Open(s.NetNS)
		if err != nil {
			return nil, fmt.Errorf("failed to open the pod's network namespace: %w", err)
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("failed to join the pod's network namespace: %w", err)
		}
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return nil, fmt.Errorf("failed to create mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("failed to make mounts private: %w", err)
	}
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return nil, fmt.Errorf("failed to set hostname: %w", err)
		}
	}
	root := filepath.Join(s.Dir, "merged")
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", s.ImageRoot, filepath.Join(s.Dir, "upper"), filepath.Join(s.Dir, "work"))
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return nil, fmt.Errorf("failed to mount the container root: %w", err)
	}
	// A bind of the root onto itself, so that it alone can be made
	// read-only later while the mounts below it stay as they are.
	if err := unix.Mount(root, root, "", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("failed to bind the container root: %w", err)
	}
	if err := setupSystemMounts(root, s.Dir, s.Hostname, s.PodIP); err != nil {
		return nil, err
	}
	if s.TerminationLog != "" {
		if err := bindInto(root, s.TerminationLog, s.TerminationLogPath, false); err != nil {
			return nil, fmt.Errorf("failed to mount the termination log: %w", err)
		}
	}
	for _, m := range s.Mounts {
		if err := bindInto(root, m.Source, m.Target, m.ReadOnly); err != nil {
			return nil, fmt.Errorf("failed to mount %s: %w", m.Target, err)
		}
	}
	if s.ReadOnlyRoot {
		if err := unix.Mount("", root, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return nil, fmt.Errorf("failed to make the container root read-only: %w", err)
		}
	}
	workDir := s.WorkDir
	if workDir == "" {
		workDir = "/"
	}
	cmd := &exec.Cmd{
		Path:   s.Path,
		Args:   s.Args,
		Env:    s.Env,
		Dir:    workDir,
		Stdout: s.Log,
		Stderr: s.Log,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     root,
			Setpgid:    true,
			Credential: &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: s.Groups},
		},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", s.Path, err)
	}
	return cmd, nil
}

// setupSystemMounts gives the container /proc, a small /dev and /etc/hosts.
// The files it writes live in dir, outside the container root, and are bound
// in: no file of the root is ever open for writing here, since a process
// forked meanwhile by another thread would inherit the descriptor and make
// the read-only remount of the root fail with EBUSY.
func setupSystemMounts(root, dir, hostname, podIP string) error {
	proc := filepath.Join(root, "proc")
	if err := os.MkdirAll(proc, 0o555); err != nil {
		return fmt.Errorf("failed to create /proc: %w", err)
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("failed to mount /proc: %w", err)
	}
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return fmt.Errorf("failed to create /dev: %w", err)
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("failed to mount /dev: %w", err)
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindInto(root, "/dev/"+d, "/dev/"+d, false); err != nil {
			return fmt.Errorf("failed to provide /dev/%s: %w", d, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dev, "shm"), 0o1777); err != nil {
		return fmt.Errorf("failed to create /dev/shm: %w", err)
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("failed to create /dev/%s: %w", name, err)
		}
	}
	files := map[string]string{
		"hosts":    hostsFile(hostname, podIP),
		"hostname": hostname + "\n",
	}
	for name, content := range files {
		src := filepath.Join(dir, name)
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			return fmt.Errorf("failed to write /etc/%s: %w", name, err)
		}
		if err := bindInto(root, src, "/etc/"+name, false); err != nil {
			return fmt.Errorf("failed to provide /etc/%s: %w", name, err)
		}
	}
	return nil
}

// hostsFile is a container's /etc/hosts: localhost, and the pod's name on
// its own address (on 127.0.0.1 when it shares the host's network).
func hostsFile(hostname, podIP string) string {
	if podIP == "" || podIP == "127.0.0.1" {
		return "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost\n"
	}
	return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n" + podIP + "\t" + hostname + "\n"
}

// bindInto bind-mounts the host path source at target inside root, creating
// the mount point (a folder or an empty file, like the source).
func bindInto(root, source, target string, readOnly bool) error {
	st, err := os.Stat(source)
	if err != nil {
		return fmt.Errorf("mount source: %w", err)
	}
	dst, err := securePath(root, target)
	if err != nil {
		return err
	}
	if st.IsDir() {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("failed to create mount point: %w", err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("failed to create mount point: %w", err)
		}
		// Created without opening it: see setupSystemMounts.
		if err := unix.Mknod(dst, unix.S_IFREG|0o644, 0); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("failed to create mount point: %w", err)
		}
	}
	if err := unix.Mount(source, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	if readOnly {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("read-only remount: %w", err)
		}
	}
	return nil
}

// securePath resolves the container path p under root on the host, following
// symbolic links as the container would see them (absolute links are taken
// relative to root), so a link in the image can never point outside it.
func securePath(root, p string) (string, error) {
	parts := strings.Split(filepath.Clean("/"+p), "/")
	cur := "/"
	links := 0
	for i := 0; i < len(parts); i++ {
		part := parts[i]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			link, err := os.Readlink(filepath.Join(root, next))
			if err != nil {
				return "", fmt.Errorf("failed to read link %s: %w", next, err)
			}
			if links++; links > 255 {
				return "", errors.New("too many links in " + p)
			}
			rest := parts[i+1:]
			base := cur
			if filepath.IsAbs(link) {
				base = "/"
			}
			parts = append(strings.Split(filepath.Clean(filepath.Join(base, link)), "/"), rest...)
			cur, i = "/", -1
			continue
		}
		cur = next
	}
	return filepath.Join(root, cur), nil
}
