package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/licenseclassifier/v2/assets"
)

// TestJudge: the licence policy of make check-licenses.
func TestJudge(t *testing.T) {
	p := Policy{
		Permissive: []string{"Apache-2.0", "MIT"},
		Exceptions: map[string]Exception{"example.com/mpl": {Licence: "MPL-2.0", Why: "test"}},
	}
	for _, c := range []struct {
		name, module string
		found        []string
		err          error
		fails        string
	}{
		{"a permissive licence passes", "example.com/a", []string{"Apache-2.0"}, nil, ""},
		{"every licence of a dual-licensed module must pass", "example.com/a", []string{"GPL-3.0", "MIT"}, nil, "GPL-3.0 is not permissive"},
		{"a recorded exception passes for its licence", "example.com/mpl", []string{"MPL-2.0"}, nil, ""},
		{"an exception covers only the licence recorded", "example.com/mpl", []string{"GPL-2.0"}, nil, "GPL-2.0 is not permissive"},
		{"an exception covers only the module recorded", "example.com/other", []string{"MPL-2.0"}, nil, "MPL-2.0 is not permissive"},
		{"a licence file the classifier cannot name fails", "example.com/a", nil, nil, "names no licence"},
		{"a module without a licence file fails", "example.com/a", nil, errors.New("no licence file"), "no licence file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := p.Judge(c.module, c.found, c.err)
			if (c.fails == "") != (got == "") || !strings.Contains(got, c.fails) {
				t.Errorf("Judge(%s, %v) = %q, want it to say %q", c.module, c.found, got, c.fails)
			}
		})
	}
}

// TestIdentify: licence files at a module's root are found and named; a
// GPL-3.0 module fails the default policy and an MIT one passes.
func TestIdentify(t *testing.T) {
	c, err := assets.DefaultClassifier()
	if err != nil {
		t.Fatal(err)
	}
	module := func(file, corpus string) string {
		dir := t.TempDir()
		b, err := assets.ReadLicenseFile(corpus)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	gpl, err := identify(c, module("COPYING", "License/GPL-3.0/license.txt"))
	if err != nil || len(gpl) != 1 || gpl[0] != "GPL-3.0" {
		t.Fatalf("COPYING with the GPL-3.0: identified %v, %v", gpl, err)
	}
	if DefaultPolicy.Judge("example.com/gpl", gpl, nil) == "" {
		t.Errorf("a GPL-3.0 module passes the default policy")
	}
	mit, err := identify(c, module("LICENSE.md", "License/MIT/pristine.txt"))
	if err != nil || DefaultPolicy.Judge("example.com/mit", mit, nil) != "" {
		t.Errorf("LICENSE.md with the MIT licence: identified %v, %v; want a pass", mit, err)
	}
	if _, err := identify(c, t.TempDir()); err == nil {
		t.Errorf("a module with no licence file was identified")
	}
}
