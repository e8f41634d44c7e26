package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/captf-io/cluster-api-provider-terraform/test/env/registry"
	"github.com/captf-io/cluster-api-provider-terraform/test/env/testimage"
)

// pulledTestImage pushes the podprog image to a fresh loopback registry and
// pulls it into an image store.
func pulledTestImage(t *testing.T) (*image, string) {
	t.Helper()
	reg, err := registry.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop() })
	img, err := testimage.Image()
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := reg.Push(context.Background(), "captf/podprog:test", img)
	if err != nil {
		t.Fatal(err)
	}
	store := newImageStore(t.TempDir())
	got, err := store.get(context.Background(), reg.Ref("captf/podprog:test"), corev1.PullIfNotPresent)
	if err != nil {
		t.Fatal(err)
	}
	return got, pinned
}

func TestImageStore_PullRecordsRepositoryDigest(t *testing.T) {
	img, pinned := pulledTestImage(t)
	if img.ID != pinned {
		t.Fatalf("imageID %q, want the pushed digest %q", img.ID, pinned)
	}
	fi, err := os.Stat(filepath.Join(img.Root, testimage.ProgramPath))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("program mode %v, want 0755", fi.Mode().Perm())
	}
	st, err := os.Stat(filepath.Join(img.Root, "captf/work"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != testimage.UID {
		t.Fatalf("/captf/work owned by %d, want %d", uid, testimage.UID)
	}
	if img.Config.User != "65532" || img.Config.WorkingDir != "/captf" {
		t.Fatalf("image config not kept: %+v", img.Config)
	}
}

func TestStartContainer_ChrootMountsIdentityAndTerminationLog(t *testing.T) {
	img, _ := pulledTestImage(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("value"), 0o444); err != nil {
		t.Fatal(err)
	}
	termLog := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(termLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(termLog, 0o666)
	logPath := filepath.Join(dir, "log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	cmd, err := startContainer(containerSpec{
		Hostname:           "pod-a",
		ImageRoot:          img.Root,
		Dir:                filepath.Join(dir, "c"),
		Mounts:             []mountSpec{{Source: data, Target: "/data"}, {Source: secret, Target: "/etc/secret", ReadOnly: true}},
		TerminationLog:     termLog,
		TerminationLogPath: "/dev/termination-log",
		ReadOnlyRoot:       true,
		Path:               testimage.ProgramPath,
		Args: []string{"podprog", "--identity", "--expect-file=/etc/secret/key=value",
			"--write=/data/out=hello", "--message=all done"},
		Env:     []string{"PATH=/captf/bin"},
		WorkDir: "/captf",
		UID:     65532, GID: 65532, Groups: []uint32{2000},
		Log: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("container failed: %v\n%s", err, b)
	}
	logs, _ := os.ReadFile(logPath)
	for _, want := range []string{"uid=65532 gid=65532 groups=[2000] wd=/captf hostname=pod-a", "file /etc/secret/key ok", "wrote /data/out"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(data, "out")); string(b) != "hello" {
		t.Errorf("emptyDir file = %q, want hello", b)
	}
	if b, _ := os.ReadFile(termLog); string(b) != "all done" {
		t.Errorf("termination message = %q", b)
	}
	// Nothing stays mounted on the host side.
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), dir) {
		t.Errorf("container mounts leaked into the caller's namespace")
	}
}

func TestStartContainer_ReadOnlyRootRefusesWrites(t *testing.T) {
	img, _ := pulledTestImage(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd, err := startContainer(containerSpec{
		Hostname: "pod-b", ImageRoot: img.Root, Dir: filepath.Join(dir, "c"), ReadOnlyRoot: true,
		Path: testimage.ProgramPath, Args: []string{"podprog", "--write=/captf/x=1"},
		Log: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("write to a read-only root succeeded")
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "read-only file system") {
		t.Fatalf("unexpected failure:\n%s", b)
	}
}

// TestStartContainer_ConcurrentReadOnlyRoots starts many read-only
// containers at once, as the pods of a bring-up do: a process forked by one
// start must never hold a file of another's root open for writing, which
// made that root's read-only remount fail with EBUSY.
func TestStartContainer_ConcurrentReadOnlyRoots(t *testing.T) {
	img, _ := pulledTestImage(t)
	dir := t.TempDir()
	const workers, starts = 8, 100
	errs := make(chan error, workers*starts)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range starts {
				c := filepath.Join(dir, fmt.Sprintf("c-%d-%d", w, i))
				if err := os.MkdirAll(c, 0o755); err != nil {
					errs <- err
					return
				}
				termLog := filepath.Join(c, "termination-log")
				if err := os.WriteFile(termLog, nil, 0o666); err != nil {
					errs <- err
					return
				}
				logFile, err := os.Create(filepath.Join(c, "log"))
				if err != nil {
					errs <- err
					return
				}
				cmd, err := startContainer(containerSpec{
					Hostname: fmt.Sprintf("pod-%d-%d", w, i), ImageRoot: img.Root, Dir: c, ReadOnlyRoot: true,
					TerminationLog: termLog, TerminationLogPath: "/dev/termination-log",
					Path: testimage.ProgramPath, Args: []string{"podprog", "--expect-file=/etc/hostname=" + fmt.Sprintf("pod-%d-%d\n", w, i)},
					Log: logFile,
				})
				if err == nil {
					if werr := cmd.Wait(); werr != nil {
						b, _ := os.ReadFile(logFile.Name())
						err = fmt.Errorf("container %s failed: %v\n%s", c, werr, b)
					}
				}
				logFile.Close()
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A volume mounted inside another's path is mounted after it, whatever the
// pod's order: the shipped manager mounts an emptyDir at /tmp and its
// webhook certificate at /tmp/k8s-webhook-server/serving-certs.
func TestSortMounts(t *testing.T) {
	mounts := []mountSpec{
		{Target: "/tmp/k8s-webhook-server/serving-certs"},
		{Target: "/var/run/secrets/kubernetes.io/serviceaccount"},
		{Target: "/tmp"},
		{Target: "/data"},
		{Target: "/tmp/k8s-metrics-server/serving-certs"},
	}
	sortMounts(mounts)
	var got []string
	for _, m := range mounts {
		got = append(got, m.Target)
	}
	want := []string{"/tmp", "/data", "/tmp/k8s-webhook-server/serving-certs", "/tmp/k8s-metrics-server/serving-certs", "/var/run/secrets/kubernetes.io/serviceaccount"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("mount order %v, want %v", got, want)
	}
}
