package imagebuild

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// tarEntry is what a layer says about one path.
type tarEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	linkname string
}

// layerEntries reads every entry of a layer.
func layerEntries(t *testing.T, l v1.Layer, keep func(name string) bool, saved map[string]string) map[string]tarEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]tarEntry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarEntry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, size: h.Size, linkname: h.Linkname}
		if keep != nil && keep(h.Name) {
			f, err := os.CreateTemp(t.TempDir(), "entry")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Chmod(fs.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			saved[h.Name] = f.Name()
		}
	}
}

func repoModule(t *testing.T, role contract.Role) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "modules", "noop", string(role))
}

// checkNoopImage checks a pulled no-op image against the Image Contract:
// the layers' paths, the user, the labels, and that /captf/runtime is an
// executable that runs.
func checkNoopImage(t *testing.T, img v1.Image, role contract.Role, tofu string) {
	t.Helper()
	mt, err := img.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, %v", mt, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532" {
		t.Errorf("USER = %q, want 65532", cf.Config.User)
	}
	if cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	wantLabels := map[string]string{
		contract.LabelContract: "v1alpha1", contract.LabelRole: string(role), contract.LabelRuntime: "tofu",
		contract.LabelRuntimeVersion: "1.12.6", contract.LabelVersion: "test",
	}
	for k, v := range wantLabels {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("%d layers, want 2 (runtime, module)", len(layers))
	}
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s", mt)
		}
	}

	saved := map[string]string{}
	rt := layerEntries(t, layers[0], func(n string) bool { return n == "captf/runtime" }, saved)
	if got := slices.Sorted(mapsKeys(rt)); !slices.Equal(got, []string{"captf/", "captf/runtime"}) {
		t.Errorf("runtime layer holds %v, want /captf and /captf/runtime only", got)
	}
	fi, err := os.Stat(tofu)
	if err != nil {
		t.Fatal(err)
	}
	if e := rt["captf/runtime"]; e.typ != tar.TypeReg || e.mode != 0o755 || e.uid != 65532 || e.size != fi.Size() {
		t.Errorf("/captf/runtime = %+v, want a 0755 regular file of %d bytes owned by 65532", e, fi.Size())
	}
	// /captf/runtime really is the runtime: it runs.
	cmd := exec.Command(saved["captf/runtime"], "version", "-json")
	cmd.Env = []string{"HOME=" + t.TempDir(), "CHECKPOINT_DISABLE=1"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("/captf/runtime version -json: %v", err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version != "1.12.6" {
		t.Errorf("/captf/runtime reports %q (%v)", out, err)
	}

	mod := layerEntries(t, layers[1], nil, nil)
	src, err := os.ReadDir(repoModule(t, role))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"captf/", "captf/module/", "captf/providers/"}
	for _, e := range src {
		want = append(want, "captf/module/"+e.Name())
	}
	if got := slices.Sorted(mapsKeys(mod)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("module layer holds %v, want %v", got, want)
	}
	for n, e := range mod {
		wantMode := int64(0o644)
		if e.typ == tar.TypeDir {
			wantMode = 0o755
		}
		if e.mode != wantMode || e.uid != 65532 || e.gid != 65532 {
			t.Errorf("%s: mode %o owner %d:%d, want %o 65532:65532", n, e.mode, e.uid, e.gid, wantMode)
		}
	}
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// standInRuntime writes an executable that answers `version -json` as
// OpenTofu 1.12.6 does, padded with pseudo-random bytes to a few MiB: the
// tests here are about the builder (layers, paths, modes, a file that spans
// many tar blocks and gzip windows, an entry that still runs once pulled),
// not about the 115 MB binary a release ships, which the end-to-end tests
// run in every Job.
func standInRuntime(t *testing.T) string {
	t.Helper()
	script := "#!/bin/sh\necho '{\"terraform_version\":\"1.12.6\"}'\nexit 0\n"
	pad := make([]byte, 3<<20)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(pad)
	p := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(p, append([]byte(script), pad...), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func noopImage(t *testing.T, role contract.Role) (ModuleImage, string) {
	t.Helper()
	tofu := standInRuntime(t)
	return ModuleImage{
		Role: role, ModuleDir: repoModule(t, role), Runtime: tofu, RuntimeName: contract.RuntimeTofu,
		RuntimeVersion: "1.12.6", EmptyProviders: true, Version: "test",
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
	}, tofu
}

func TestNoopImage_LayoutAndLoopbackRegistry(t *testing.T) {
	m, tofu := noopImage(t, contract.RoleMachine)
	img, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("oci_layout", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "noop-machine")
		got, err := WriteLayout(dir, "test", img)
		if err != nil {
			t.Fatal(err)
		}
		if got != digest {
			t.Errorf("layout digest %s, built %s", got, digest)
		}
		// Writing again under the same name replaces, not duplicates.
		if _, err := WriteLayout(dir, "test", img); err != nil {
			t.Fatal(err)
		}
		pulled, err := ReadLayout(dir, "test")
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := pulled.Digest(); d != digest {
			t.Errorf("read back %s, want %s", d, digest)
		}
		checkNoopImage(t, pulled, contract.RoleMachine, tofu)
		notLayout := t.TempDir()
		if err := os.WriteFile(filepath.Join(notLayout, "file"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteLayout(notLayout, "x", img); err == nil {
			t.Error("a non-empty directory that is not a layout must be refused")
		}
	})

	t.Run("loopback_registry", func(t *testing.T) {
		srv := httptest.NewServer(registry.New(registry.Logger(discardLogger())))
		defer srv.Close()
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		ref := u.Host + "/captf/noop-machine:test"
		d, err := Push(context.Background(), ref, img, false)
		if err != nil {
			t.Fatal(err)
		}
		if d.DigestStr() != digest.String() {
			t.Errorf("pushed %s, want %s", d, digest)
		}
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Image(r)
		if err != nil {
			t.Fatal(err)
		}
		if pd, _ := pulled.Digest(); pd != digest {
			t.Errorf("pulled %s, want %s", pd, digest)
		}
		checkNoopImage(t, pulled, contract.RoleMachine, tofu)
	})
}

func TestNoopImagesAreReproducible(t *testing.T) {
	// A small stand-in runtime keeps this test quick; the property is the
	// same for the real binary.
	runtime := filepath.Join(t.TempDir(), "tofu")
	if err := os.WriteFile(runtime, []byte("\x7fELF stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, role := range contract.Roles() {
		m, _ := noopImage(t, role)
		m.Runtime = runtime
		a, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		da, _ := a.Digest()
		db, _ := b.Digest()
		if da != db {
			t.Errorf("%s: two builds differ: %s vs %s", role, da, db)
		}
		cf, _ := a.ConfigFile()
		if cf.Config.Labels[contract.LabelRole] != string(role) {
			t.Errorf("%s: role label %q", role, cf.Config.Labels[contract.LabelRole])
		}
	}
}

// TestBuild_ExtraFiles builds an image the way a manager/runner image is
// built: a static binary at a fixed path, with an entrypoint.
func TestBuild_ExtraFiles(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "runner")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := Build(Spec{
		Platform: v1.Platform{OS: "linux", Architecture: "arm64"},
		Layers: []Layer{{Entries: []Entry{
			{Path: "/usr/local/bin/runner", Mode: 0o755, Source: bin},
			{Path: "/etc/captf/version", Mode: 0o644, Data: []byte("v0\n")},
			{Path: "/runner", Mode: fs.ModeSymlink | 0o777, Linkname: "usr/local/bin/runner"},
		}}},
		User:       "65532:65532",
		Entrypoint: []string{"/runner"},
		Labels:     map[string]string{"org.opencontainers.image.version": "v0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/runner"}) {
		t.Errorf("config %+v", cf.Config)
	}
	layers, _ := img.Layers()
	got := layerEntries(t, layers[0], nil, nil)
	for _, n := range []string{"etc/", "etc/captf/", "usr/", "usr/local/", "usr/local/bin/"} {
		if got[n].typ != tar.TypeDir || got[n].mode != 0o755 {
			t.Errorf("parent directory %s = %+v", n, got[n])
		}
	}
	if e := got["usr/local/bin/runner"]; e.mode != 0o755 || e.size != 12 {
		t.Errorf("runner = %+v", e)
	}
	if e := got["runner"]; e.typ != tar.TypeSymlink || e.linkname != "usr/local/bin/runner" {
		t.Errorf("symlink = %+v", e)
	}
}

func TestModuleImage_Errors(t *testing.T) {
	good, _ := noopImage(t, contract.RoleCluster)
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		mutate func(m *ModuleImage)
		want   string
	}{
		{"unknown_role", func(m *ModuleImage) { m.Role = "worker" }, "unknown role"},
		{"unknown_runtime_name", func(m *ModuleImage) { m.RuntimeName = "bash" }, "runtime name"},
		{"missing_runtime_version", func(m *ModuleImage) { m.RuntimeVersion = "" }, "runtime version"},
		{"module_without_a_top_level_tf_file", func(m *ModuleImage) { m.ModuleDir = empty }, "no .tf"},
		{"missing_runtime", func(m *ModuleImage) { m.Runtime = filepath.Join(empty, "tofu") }, "runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good
			tc.mutate(&m)
			if _, err := m.Build(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	for _, spec := range []Spec{
		{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Layers: []Layer{{Entries: []Entry{{Path: "relative", Data: nil}}}}},
		{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Layers: []Layer{{Entries: []Entry{{Path: "/a"}, {Path: "/a/"}}}}},
		{Layers: nil},
	} {
		if _, err := Build(spec); err == nil {
			t.Errorf("Build(%+v) succeeded", spec)
		}
	}
}

// The three module images of a release share their runtime layer: it is
// compressed once per process, and a changed host file is a new layer.
func TestLayersFromTheSameFilesAreBuiltOnce(t *testing.T) {
	dir := t.TempDir()
	runtime := filepath.Join(dir, "tofu")
	if err := os.WriteFile(runtime, []byte("#!/bin/sh\necho one\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	layerOf := func(role contract.Role) v1.Layer {
		t.Helper()
		img, err := ModuleImage{Role: role, ModuleDir: repoModule(t, role), Runtime: runtime,
			RuntimeName: contract.RuntimeTofu, RuntimeVersion: "1.12.6", EmptyProviders: true}.Build()
		if err != nil {
			t.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		return ls[0]
	}
	first := layerOf(contract.RoleMachine)
	if again := layerOf(contract.RoleCluster); again != first {
		t.Error("a second image with the same runtime built its runtime layer again")
	}
	before, _ := first.Digest()
	if err := os.WriteFile(runtime, []byte("#!/bin/sh\necho two, longer\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	changed := layerOf(contract.RoleMachine)
	if after, _ := changed.Digest(); changed == first || after == before {
		t.Errorf("a changed runtime kept the old layer %s", before)
	}
}
