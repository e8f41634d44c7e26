// Command licenses checks the licence of every Go module linked into a
// CAPTF binary (make check-licenses). It lists the modules the packages of
// ./cmd/... depend on (go list -deps, so test-only dependencies are left
// out: they are not shipped), finds each module's licence files in the
// module cache and identifies them with licenseclassifier's corpus.
//
// A module passes when every licence found in it is permissive (Policy.
// Permissive), or when it is named in Policy.Exceptions with the licence
// found. A module with no licence file, with a licence the classifier
// cannot name, or with any other licence fails the check, with one line
// naming the module, its version and what was found.
//
//	go run ./hack/licenses            # check, print a table of the modules
//	go run ./hack/licenses -pkgs ./cmd/tfcapi-lint
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	classifier "github.com/google/licenseclassifier/v2"
	"github.com/google/licenseclassifier/v2/assets"
)

func main() {
	pkgs := flag.String("pkgs", "./cmd/...", "the packages whose dependencies are checked (space-separated go list patterns)")
	quiet := flag.Bool("q", false, "print only the failures")
	flag.Parse()
	mods, err := listModules(strings.Fields(*pkgs))
	if err != nil {
		fmt.Fprintf(os.Stderr, "check-licenses: %v\n", err)
		os.Exit(2)
	}
	c, err := assets.DefaultClassifier()
	if err != nil {
		fmt.Fprintf(os.Stderr, "check-licenses: load the licence corpus: %v\n", err)
		os.Exit(2)
	}
	failed := 0
	for _, m := range mods {
		names, err := identify(c, m.Dir)
		verdict := DefaultPolicy.Judge(m.Path, names, err)
		if verdict != "" {
			failed++
			fmt.Printf("FAIL %s %s: %s\n", m.Path, m.Version, verdict)
		} else if !*quiet {
			fmt.Printf("ok   %s %s: %s\n", m.Path, m.Version, strings.Join(names, ", "))
		}
	}
	if failed > 0 {
		fmt.Printf("check-licenses: %d of %d modules have a licence CAPTF cannot ship\n", failed, len(mods))
		os.Exit(1)
	}
	fmt.Printf("check-licenses: %d modules, every licence permissive or a recorded exception\n", len(mods))
}

// Module is one dependency module.
type Module struct {
	Path, Version, Dir string
}

// listModules lists the modules, other than the main one, that provide a
// package of pkgs' dependency graph. A replaced module is listed with its
// replacement's version and folder.
func listModules(pkgs []string) ([]Module, error) {
	args := append([]string{"list", "-deps", "-f",
		"{{with .Module}}{{if not .Main}}{{with .Replace}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{else}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var mods []Module
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		mods = append(mods, Module{Path: f[0], Version: f[1], Dir: f[2]})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// licenceFile reports whether a file name is one a licence is kept in.
func licenceFile(name string) bool {
	n := strings.ToUpper(name)
	for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "UNLICENSE"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// identify names the licences in the licence files at the root of dir.
func identify(c *classifier.Classifier, dir string) ([]string, error) {
	if dir == "" {
		return nil, fmt.Errorf("the module is not in the module cache (run go mod download)")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	files := 0
	for _, e := range entries {
		if e.IsDir() || !licenceFile(e.Name()) {
			continue
		}
		files++
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, m := range c.Match(b).Matches {
			if m.MatchType == "License" && !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	if files == 0 {
		return nil, fmt.Errorf("no licence file")
	}
	sort.Strings(names)
	return names, nil
}

// Policy says which licences CAPTF ships.
type Policy struct {
	// Permissive are the licence names (SPDX identifiers, as the
	// classifier reports them) any module may carry.
	Permissive []string
	// Exceptions name modules allowed a licence outside Permissive, each
	// recorded with the licence and why it is acceptable.
	Exceptions map[string]Exception
}

// Exception is one module allowed a non-permissive licence.
type Exception struct {
	Licence string
	Why     string
}

// mplUnmodified is why an MPL-2.0 library may be linked: the MPL's
// copyleft covers the library's own files, which CAPTF ships unmodified
// with their source a `go mod download` away; CAPTF's code stays under its
// own licence.
const mplUnmodified = "MPL-2.0 is file-level copyleft: linked unmodified, it leaves CAPTF's own code under Apache-2.0"

// DefaultPolicy is CAPTF's: the licences the Cluster API ecosystem accepts
// without review, and HashiCorp's MPL-2.0 libraries for HCL and Terraform's
// JSON formats, which the lint and the state reader need.
var DefaultPolicy = Policy{
	Permissive: []string{"Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MIT", "0BSD", "Zlib", "Unlicense", "CC0-1.0", "BSD-2-Clause-FreeBSD", "Python-2.0", "Unicode-DFS-2016", "Unicode-3.0"},
	Exceptions: map[string]Exception{
		"github.com/hashicorp/hcl/v2":         {"MPL-2.0", mplUnmodified},
		"github.com/hashicorp/terraform-json": {"MPL-2.0", mplUnmodified},
		"github.com/hashicorp/go-version":     {"MPL-2.0", mplUnmodified},
		"github.com/opencontainers/go-digest": {"CC-BY-SA-4.0", "CC-BY-SA-4.0 is the licence of the module's documentation (LICENSE.docs), none of which is linked; its code is Apache-2.0"},
	},
}

// Judge returns why a module with the licences found (or the error that
// kept them from being found) may not be shipped, or "" when it may.
func (p Policy) Judge(module string, found []string, err error) string {
	if err != nil {
		return err.Error()
	}
	if len(found) == 0 {
		return "its licence file names no licence the classifier knows; review it and record an exception"
	}
	var bad []string
	for _, l := range found {
		if slices.Contains(p.Permissive, l) {
			continue
		}
		if e, ok := p.Exceptions[module]; ok && e.Licence == l {
			continue
		}
		bad = append(bad, l)
	}
	if len(bad) > 0 {
		return fmt.Sprintf("%s is not permissive and the module has no recorded exception for it", strings.Join(bad, ", "))
	}
	return ""
}
