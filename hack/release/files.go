package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

//go:embed krew.yaml.tmpl
var krewTemplate string

// krewPlatform is one platform entry of the krew manifest.
type krewPlatform struct {
	Platform, Archive, SHA256, Bin string
}

func (p krewPlatform) OS() string   { os, _, _ := strings.Cut(p.Platform, "/"); return os }
func (p krewPlatform) Arch() string { _, a, _ := strings.Cut(p.Platform, "/"); return a }

// krewManifest renders the krew manifest of kubectl captf: one platform
// entry per archive, with its download URL under the release's tag and its
// checksum.
func krewManifest(version string, platforms []krewPlatform) ([]byte, error) {
	t, err := template.New("krew").Parse(krewTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = t.Execute(&b, struct {
		Version   string
		Platforms []krewPlatform
	}{version, platforms})
	return b.Bytes(), err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// files lists every regular file under dir, as slash-separated paths
// relative to it, sorted.
func files(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		} else if !d.IsDir() {
			return fmt.Errorf("%s is neither a file nor a folder", path)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// WriteChecksums writes checksums.txt: the SHA-256 of every other file of
// the folder, in sha256sum's format (so `sha256sum -c checksums.txt` checks
// a downloaded release).
func WriteChecksums(dir string) error {
	all, err := files(dir)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, f := range all {
		if f == ChecksumsFile {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, f)
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), b.Bytes(), 0o644)
}

// readChecksums parses checksums.txt into file → SHA-256.
func readChecksums(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("%s line %d is not '<sha256>  <file>'", ChecksumsFile, n)
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("%s names %s twice", ChecksumsFile, name)
		}
		sums[name] = sum
	}
	return sums, sc.Err()
}
