// Package tools finds the pinned third-party binaries (kube-apiserver, etcd,
// kube-controller-manager, tofu, terraform, Cluster API managers, promtool) that CAPTF's tests and
// local environment run. They are built from source by hack/tools/install.sh
// into ${XDG_CACHE_HOME:-$HOME/.cache}/captf/tools on first use and reused
// afterwards. The book's site test also finds Hugo and Chromium here, which
// the same script installs from Debian's packages.
package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
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
)

// Binary names and the hack/tools entry that builds each.
var toolOf = map[string]string{
	"kube-apiserver":                "kubernetes",
	"kube-controller-manager":       "kubernetes",
	"kubectl":                       "kubectl",
	"etcd":                          "etcd",
	"tofu":                          "opentofu",
	"terraform":                     "terraform",
	"terraform-provider-openstack":  "openstack",
	"capi-manager":                  "clusterapi",
	"kubeadm-bootstrap-manager":     "clusterapi",
	"kubeadm-control-plane-manager": "clusterapi",
	"clusterctl":                    "clusterapi",
	"cert-manager-controller":       "certmanager",
	"cert-manager-webhook":          "certmanager",
	"cert-manager-cainjector":       "certmanager",
	"controller-gen":                "generators",
	"kustomize":                     "generators",
	"staticcheck":                   "staticcheck",
	"promtool":                      "promtool",
	"promql-metrics":                "promtool",
	"vale":                          "vale",
	// Debian's packages (installed with apt-get when missing).
	"hugo":     "hugo",
	"chromium": "chromium",
}

var (
	mu   sync.Mutex
	dirs = map[string]string{}
)

// RepoRoot returns the root of the CAPTF checkout that holds this package.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.HasPrefix(b, []byte("module github.com/captf-io/cluster-api-provider-terraform\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no CAPTF go.mod above the working directory")
		}
		dir = parent
	}
}

// Path returns the absolute path of a pinned binary, building it (once per
// machine) if the cache does not hold it yet.
func Path(binary string) (string, error) {
	tool, ok := toolOf[binary]
	if !ok {
		return "", fmt.Errorf("unknown tool binary %q", binary)
	}
	dir, err := Dir(tool)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, binary), nil
}

// Dir returns the cache directory of a hack/tools entry (kubernetes, etcd,
// opentofu, clusterapi, generators), building it if needed.
func Dir(tool string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if d, ok := dirs[tool]; ok {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "hack", "tools", "install.sh"), tool)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools/install.sh %s: %w: %s", tool, err, stderr.String())
	}
	d := strings.TrimSpace(string(out))
	dirs[tool] = d
	return d, nil
}

// Runtime is a pinned Terraform/OpenTofu runtime that module images ship at
// /captf/runtime.
type Runtime struct {
	// Name is the io.captf.runtime label's value: tofu or terraform.
	Name string
	// Binary is the pinned binary's name, for Path.
	Binary string
	// Version is what the binary reports (version -json).
	Version string
	// Tag ends the no-op images' tags, as in v0.1.0-opentofu.
	Tag string
}

// The two runtimes: OpenTofu, the reference runtime, and HashiCorp
// Terraform v1.5.7, the last release under the MPL.
var (
	OpenTofu  = Runtime{Name: "tofu", Binary: "tofu", Version: "1.12.6", Tag: "opentofu"}
	Terraform = Runtime{Name: "terraform", Binary: "terraform", Version: "1.5.7", Tag: "terraform"}
)

// Runtimes returns both runtimes, OpenTofu first.
func Runtimes() []Runtime { return []Runtime{OpenTofu, Terraform} }

// Path returns the pinned binary of the runtime, building it if needed.
func (r Runtime) Path() (string, error) { return Path(r.Binary) }

// Build builds the main package pkg (./cmd/manager, say) of the checkout
// with go build -trimpath and puts the binary at dst. The build goes to a
// fixed path under ${XDG_CACHE_HOME:-$HOME/.cache}/captf/bin that depends
// only on dst's base name and env (CGO_ENABLED=0, say), so every test
// binary and every clone of the repository builds into the same file: go
// build finds it up to date and skips the link when nothing it is made of
// changed. A file lock serialises the builds, and dst is a hard link to (or
// a copy of) the result taken under the lock, so a later build from other
// sources never changes the binary a caller runs.
func Build(ctx context.Context, pkg, dst string, env ...string) error {
	name := filepath.Base(dst)
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	key := sha256.Sum256([]byte(strings.Join(env, "\x00")))
	dir := filepath.Join(cache, "captf", "bin", name+"-"+hex.EncodeToString(key[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if os.Link(out, dst) == nil {
		return nil
	}
	return copyFile(out, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
