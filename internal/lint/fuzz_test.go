package lint

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// mapSource is a module held in memory, for fuzzing.
type mapSource map[string][]byte

func (s mapSource) list(dir string) (files, dirs []string, err error) {
	seen := map[string]bool{}
	for p := range s {
		if d := path.Dir(p); d == dir {
			files = append(files, path.Base(p))
		} else if rest, ok := strings.CutPrefix(p, dir+"/"); ok || dir == "." {
			if !ok {
				rest = p
			}
			sub, _, _ := strings.Cut(rest, "/")
			if !seen[sub] {
				seen[sub] = true
				dirs = append(dirs, sub)
			}
		}
	}
	if len(files) == 0 && len(dirs) == 0 && dir != "." {
		return nil, nil, fs.ErrNotExist
	}
	sort.Strings(files)
	return files, dirs, nil
}

func (s mapSource) read(p string) ([]byte, error) {
	b, ok := s[path.Clean(p)]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

func (s mapSource) display(p string) string { return path.Clean(p) }

// FuzzModuleParser feeds arbitrary bytes to the module parser front end, as
// a .tf file (native syntax) or a .tf.json file, next to a nested local
// module, and runs every module check of every role on what parses: no
// input may panic.
func FuzzModuleParser(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/module/*.txt")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, part := range strings.Split(string(b), "\n-- ")[1:] {
			name, content, _ := strings.Cut(part, " --\n")
			f.Add([]byte(content), strings.HasSuffix(name, ".json"))
		}
	}
	noop, _ := filepath.Glob("../../modules/noop/*/*.tf")
	for _, p := range noop {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte(`{"variable": {"captf_tags": {"type": "map(string)"}}, "output": {"health": {"value": {"state": "x"}}}}`), true)
	f.Fuzz(func(t *testing.T, src []byte, asJSON bool) {
		name := "fuzz.tf"
		if asJSON {
			name = "fuzz.tf.json"
		}
		s := mapSource{name: src, "nested/main.tf": src, "call.tf": []byte("module \"n\" {\n  source = \"./nested\"\n  x = var.captf_tags\n}\n")}
		// An input that takes this long is a hang: stop the worker so the
		// fuzzer keeps the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("one input ran for 10 s (JSON %v): %q", asJSON, src)) })
		defer watchdog.Stop()
		for _, role := range contract.Roles() {
			r := &Report{}
			if _, err := lintModuleSource(s, role, r, &findings{}); err != nil {
				if _, ok := err.(*ParseError); !ok {
					t.Fatalf("error of type %T: %v", err, err)
				}
			}
		}
	})
}
