package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const modulePath = "github.com/captf-io/cluster-api-provider-terraform"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "docsgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("docsgen", flag.ContinueOnError)
	api := fs.String("api", "api/v1alpha1", "API package directory (relative paths start at the repository root)")
	out := fs.String("out", "docs/book/reference/api.md", `page to write, or "-" for standard output (relative paths start at the repository root)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	page, err := generate(fromRoot(root, *api))
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err := stdout.Write(page)
		return err
	}
	return writeFile(fromRoot(root, *out), page)
}

// generate renders the API reference page of the package in dir.
func generate(dir string) ([]byte, error) {
	pkg, err := loadPackage(dir)
	if err != nil {
		return nil, err
	}
	page, err := render(pkg)
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", dir, err)
	}
	return append(page, '\n'), nil
}

func fromRoot(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// repoRoot walks up from the working directory to CAPTF's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the CAPTF repository: no go.mod of " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

// writeFile replaces path atomically, so a failed run never leaves a
// half-written page.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".docsgen-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
