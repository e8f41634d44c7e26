package managerimage

import (
	"archive/tar"
	"context"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/imagebuild"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// TestManagerImage builds the image from this checkout, pushes it to an
// in-process registry, and checks what a Job's init container relies on:
// an executable static /runner, and /manager as the entrypoint, run as a
// non-root user.
func TestManagerImage(t *testing.T) {
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{RepoRoot: root, OutputDir: t.TempDir(), Version: "v0.0.0-test", Commit: "0123abc"}
	ctx := context.Background()
	start := time.Now()
	bins, err := BuildBinaries(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built the manager and the runner in %s", time.Since(start).Round(time.Second))

	for _, b := range []string{bins.Manager, bins.Runner} {
		f, err := elf.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked", b)
			}
		}
		f.Close()
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == defaults(o).Arch {
		if out, err := exec.Command(bins.Runner, "version").Output(); err != nil || strings.TrimSpace(string(out)) != "v0.0.0-test" {
			t.Errorf("runner version: %q %v", out, err)
		}
		if out, err := exec.Command(bins.Manager, "--version").Output(); err != nil || !strings.Contains(string(out), "v0.0.0-test (commit 0123abc") {
			t.Errorf("manager --version: %q %v", out, err)
		}
	}

	img, err := Image(bins, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/captf/manager:test"
	if _, err := imagebuild.Push(ctx, ref, img, true); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != User || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != ManagerPath || cf.OS != "linux" {
		t.Errorf("config: user %q entrypoint %v os %s", cf.Config.User, cf.Config.Entrypoint, cf.OS)
	}
	if cf.Config.Labels[contract.LabelVersion] != "v0.0.0-test" || cf.Config.Labels[contract.LabelRevision] != "0123abc" {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	// The pulled manifest is the built one, digest for digest, so its layers
	// are the built layers: read their tar streams from the build, which
	// spares unpacking some 70 MB of gzip again.
	built, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := pulled.Digest(); err != nil || d != built {
		t.Fatalf("pulled manifest %s (%v), built %s", d, err, built)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimPrefix(h.Name, "/")] = h
	}
	for _, p := range []string{ManagerPath, RunnerPath} {
		h, ok := files[p]
		if !ok {
			t.Errorf("%s missing from the image", p)
			continue
		}
		if h.Mode&0o777 != 0o755 {
			t.Errorf("%s mode %o, want 0755", p, h.Mode&0o777)
		}
	}
}
