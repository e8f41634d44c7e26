package runner

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func TestCheckLayout(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "tofu")
	write(t, exe, "#!/bin/sh\n", 0o755)
	notExe := filepath.Join(t.TempDir(), "tofu")
	write(t, notExe, "#!/bin/sh\n", 0o644)
	link := filepath.Join(t.TempDir(), "runtime")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		files   map[string]string
		runtime string
		wantErr string
	}{
		{"a .tf file at the top level is a module", map[string]string{"main.tf": ""}, exe, ""},
		{"a .tf.json file counts", map[string]string{"main.tf.json": "{}"}, exe, ""},
		{"a .tofu file counts", map[string]string{"main.tofu": ""}, exe, ""},
		{"a .tofu.json file counts", map[string]string{"x.tofu.json": "{}"}, exe, ""},
		{"a symlinked runtime is fine", map[string]string{"main.tf": ""}, link, ""},
		{"no module file at the top level is an image-layout error", map[string]string{"README.md": "", "sub/main.tf": ""}, exe, "no .tf, .tf.json, .tofu or .tofu.json file"},
		{"hidden and backup files do not count", map[string]string{".hidden.tf": "", "main.tf~": "", "#main.tf#": ""}, exe, "no .tf"},
		{"a directory named like a module file does not count", map[string]string{"dir.tf/x": ""}, exe, "no .tf"},
		{"a missing runtime is an image-layout error", map[string]string{"main.tf": ""}, "/nonexistent/runtime", "is missing"},
		{"a non-executable runtime is an image-layout error", map[string]string{"main.tf": ""}, notExe, "not executable"},
		{"a directory as runtime is an image-layout error", map[string]string{"main.tf": ""}, t.TempDir(), "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := t.TempDir()
			for name, content := range tc.files {
				write(t, filepath.Join(mod, name), content, 0o644)
			}
			err := CheckLayout(mod, tc.runtime)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var le *LayoutError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a LayoutError with %q", err, tc.wantErr)
			}
		})
	}

	t.Run("a missing module directory is an image-layout error", func(t *testing.T) {
		var le *LayoutError
		if err := CheckLayout("/nonexistent/module", exe); !errors.As(err, &le) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPrepareRoot(t *testing.T) {
	t.Run("the root gets main.tf.json and terraform.tfvars.json from the config", func(t *testing.T) {
		work, cfg := t.TempDir(), t.TempDir()
		write(t, filepath.Join(cfg, MainFile), `{"module":{"role":{"source":"../../module"}}}`, 0o440)
		write(t, filepath.Join(cfg, TFVarsFile), `{"a":1}`, 0o440)
		write(t, filepath.Join(work, "root", "stale.tf"), "", 0o644)
		root, err := PrepareRoot(work, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		if root != filepath.Join(work, "root") {
			t.Errorf("root %s", root)
		}
		entries, _ := os.ReadDir(root)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if strings.Join(names, ",") != "main.tf.json,terraform.tfvars.json" {
			t.Errorf("root holds %v; an earlier root must be replaced", names)
		}
	})

	t.Run("a restore's root is the backend block alone", func(t *testing.T) {
		work := t.TempDir()
		root, err := PrepareRoot(work, "/nonexistent", true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(root, MainFile))
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"terraform": map[string]any{"backend": map[string]any{"kubernetes": map[string]any{}}}}
		if !reflect.DeepEqual(doc, want) {
			t.Errorf("restore root %s", b)
		}
		if _, err := os.Stat(filepath.Join(root, TFVarsFile)); !os.IsNotExist(err) {
			t.Errorf("restore root declares variables")
		}
	})

	for _, tc := range []struct {
		name, main, vars, wantErr string
	}{
		{"missing tfvars is a clear error", `{}`, "", "terraform.tfvars.json"},
		{"invalid JSON is a clear error that never quotes the file", `{}`, `{"secret":"SENTINEL"`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, cfg := t.TempDir(), t.TempDir()
			write(t, filepath.Join(cfg, MainFile), tc.main, 0o440)
			if tc.vars != "" {
				write(t, filepath.Join(cfg, TFVarsFile), tc.vars, 0o440)
			}
			_, err := PrepareRoot(work, cfg, false)
			var pe *PrepareError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "SENTINEL") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestPrepareBackup(t *testing.T) {
	const state = `{"version":4,"terraform_version":"1.12.6","serial":3,"lineage":"l-1","outputs":{},"resources":[]}`
	t.Run("gzip chunks are concatenated, then decompressed", func(t *testing.T) {
		work, cfg := t.TempDir(), t.TempDir()
		z := gz(t, state)
		half := len(z) / 2
		write(t, filepath.Join(cfg, "restore", "0"), string(z[:half]), 0o440)
		write(t, filepath.Join(cfg, "restore", "1"), string(z[half:]), 0o440)
		p, err := PrepareBackup(work, cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != state {
			t.Errorf("backup %s", b)
		}
	})
	t.Run("a plain JSON chunk is used as is", func(t *testing.T) {
		work, cfg := t.TempDir(), t.TempDir()
		write(t, filepath.Join(cfg, "restore", "0"), state, 0o440)
		if _, err := PrepareBackup(work, cfg, 1); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a missing chunk is a clear error", func(t *testing.T) {
		work, cfg := t.TempDir(), t.TempDir()
		write(t, filepath.Join(cfg, "restore", "0"), state, 0o440)
		if _, err := PrepareBackup(work, cfg, 2); err == nil || !strings.Contains(err.Error(), "chunk 1 of 2") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("something that is not a state is refused", func(t *testing.T) {
		work, cfg := t.TempDir(), t.TempDir()
		write(t, filepath.Join(cfg, "restore", "0"), `{"hello":"world"}`, 0o440)
		if _, err := PrepareBackup(work, cfg, 1); err == nil || !strings.Contains(err.Error(), "not a state") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestWriteCLIConfig(t *testing.T) {
	work := t.TempDir()
	if p, err := WriteCLIConfig(work, filepath.Join(work, "none")); err != nil || p != "" {
		t.Errorf("no mirror: %q %v; want nothing written", p, err)
	}
	if _, err := os.Stat(filepath.Join(work, "cli.tfrc")); !os.IsNotExist(err) {
		t.Errorf("cli.tfrc written without a mirror")
	}
	mirror := t.TempDir()
	p, err := WriteCLIConfig(work, mirror)
	if err != nil || p != filepath.Join(work, "cli.tfrc") {
		t.Fatalf("%q %v", p, err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), mirror) {
		t.Errorf("cli.tfrc %s", b)
	}
}

// TestCopyLockFile: a module's .terraform.lock.hcl reaches the generated
// root, where init reads it; a module without one leaves the root without
// one (init writes its own); an unreadable one is an image-layout failure.
func TestCopyLockFile(t *testing.T) {
	module, root := t.TempDir(), t.TempDir()
	if ok, err := CopyLockFile(module, root); ok || err != nil {
		t.Errorf("no lock file: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(root, LockFile)); !os.IsNotExist(err) {
		t.Errorf("a lock file appeared in the root: %v", err)
	}
	lock := "provider \"registry.terraform.io/example/thing\" {\n  version = \"1.0.0\"\n}\n"
	if err := os.WriteFile(filepath.Join(module, LockFile), []byte(lock), 0o444); err != nil {
		t.Fatal(err)
	}
	if ok, err := CopyLockFile(module, root); !ok || err != nil {
		t.Fatalf("lock file: %v %v", ok, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, LockFile)); string(b) != lock {
		t.Errorf("root lock file %q", b)
	}
	bad := t.TempDir()
	if err := os.Mkdir(filepath.Join(bad, LockFile), 0o755); err != nil {
		t.Fatal(err)
	}
	var le *LayoutError
	if _, err := CopyLockFile(bad, root); !errors.As(err, &le) || !strings.Contains(err.Error(), LockFile) {
		t.Errorf("a directory named %s: %v, want a LayoutError naming it", LockFile, err)
	}
}
