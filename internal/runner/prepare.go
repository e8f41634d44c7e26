package runner

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
)

// File names of the generated root and the per-run Secret.
const (
	MainFile    = contract.MainFile
	TFVarsFile  = contract.TFVarsFile
	RestoreDir  = "restore"
	rootDirName = "root"
	planFile    = "plan.tfplan"
	backupFile  = "restore.tfstate"
	cliFile     = "cli.tfrc"
	// LockFile is the dependency lock file a module ships next to its
	// configuration; the runner carries it into the generated root, where
	// init reads it.
	LockFile = ".terraform.lock.hcl"

	// maxConfigFileBytes caps each file read from the per-run Secret (a
	// Secret holds at most 1 MiB).
	maxConfigFileBytes = 4 << 20
	// maxRestoreBytes caps a decompressed backup (the manager reads at most
	// 64 MiB of state).
	maxRestoreBytes = 64 << 20
)

// LayoutError is an image-layout failure: the image does not follow the
// Image Contract.
type LayoutError struct{ Msg string }

func (e *LayoutError) Error() string { return e.Msg }

// CheckLayout checks the image layout before any command runs: the module
// directory must hold at least one .tf, .tf.json, .tofu or .tofu.json file
// at its top level, and the runtime must be an executable file.
func CheckLayout(moduleDir, runtime string) error {
	entries, err := os.ReadDir(moduleDir)
	if err != nil {
		return &LayoutError{Msg: fmt.Sprintf("module directory %s is missing or unreadable", moduleDir)}
	}
	found := false
	for _, e := range entries {
		if !moduleFileName(e.Name()) {
			continue
		}
		fi, err := os.Stat(filepath.Join(moduleDir, e.Name()))
		if err == nil && fi.Mode().IsRegular() {
			found = true
			break
		}
	}
	if !found {
		return &LayoutError{Msg: fmt.Sprintf("module directory %s has no .tf, .tf.json, .tofu or .tofu.json file at its top level", moduleDir)}
	}

	fi, err := os.Stat(runtime)
	switch {
	case err != nil:
		return &LayoutError{Msg: fmt.Sprintf("runtime %s is missing", runtime)}
	case !fi.Mode().IsRegular():
		return &LayoutError{Msg: fmt.Sprintf("runtime %s is not a regular file", runtime)}
	case syscall.Access(runtime, 0x1 /* X_OK */) != nil:
		return &LayoutError{Msg: fmt.Sprintf("runtime %s is not executable", runtime)}
	}
	return nil
}

// moduleFileName reports whether the runtime would load name as a
// configuration file: the right extension, and not a hidden, backup (~) or
// editor (#...#) file.
func moduleFileName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")) {
		return false
	}
	for _, ext := range []string{".tf", ".tf.json", ".tofu", ".tofu.json"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return true
		}
	}
	return false
}

// PrepareError is a failure to set up the run (generated root, backup,
// CLI configuration) before any runtime command.
type PrepareError struct{ Err error }

func (e *PrepareError) Error() string { return e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// RootDir is the generated root of a work directory.
func RootDir(workdir string) string { return filepath.Join(workdir, rootDirName) }

// PrepareRoot writes the generated root at <workdir>/root: the rendered
// main.tf.json and terraform.tfvars.json from configDir, or, for a restore,
// the backend block alone. Any earlier root is replaced.
func PrepareRoot(workdir, configDir string, restore bool) (string, error) {
	root := RootDir(workdir)
	if err := os.RemoveAll(root); err != nil {
		return "", &PrepareError{fmt.Errorf("clearing the generated root %s: %w", root, err)}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", &PrepareError{fmt.Errorf("creating the generated root %s: %w", root, err)}
	}
	if restore {
		// The backend block alone: no module call, no variable.
		if err := os.WriteFile(filepath.Join(root, MainFile), inputs.BackendOnlyRoot(), 0o600); err != nil {
			return "", &PrepareError{fmt.Errorf("writing the restore root: %w", err)}
		}
		return root, nil
	}
	for _, name := range []string{MainFile, TFVarsFile} {
		b, err := readCapped(filepath.Join(configDir, name), maxConfigFileBytes)
		if err != nil {
			return "", &PrepareError{fmt.Errorf("reading %s from the run configuration %s: %w", name, configDir, err)}
		}
		if !json.Valid(b) {
			return "", &PrepareError{fmt.Errorf("%s in the run configuration %s is not valid JSON", name, configDir)}
		}
		if err := os.WriteFile(filepath.Join(root, name), b, 0o600); err != nil {
			return "", &PrepareError{fmt.Errorf("writing %s to the generated root: %w", name, err)}
		}
	}
	return root, nil
}

// CopyLockFile copies the module's dependency lock file, when it ships
// one, into the generated root, so that init installs the provider
// versions it pins and checks each package from the mirror against the
// hashes it records (a package matching none fails init). It reports
// whether there was one.
func CopyLockFile(moduleDir, root string) (bool, error) {
	src := filepath.Join(moduleDir, LockFile)
	fi, err := os.Stat(src)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || !fi.Mode().IsRegular() {
		return false, &LayoutError{Msg: fmt.Sprintf("module lock file %s is not a readable regular file", src)}
	}
	b, err := readCapped(src, maxConfigFileBytes)
	if err != nil {
		return false, &LayoutError{Msg: fmt.Sprintf("module lock file %s cannot be read: %v", src, err)}
	}
	if err := os.WriteFile(filepath.Join(root, LockFile), b, 0o600); err != nil {
		return false, &PrepareError{fmt.Errorf("writing the lock file to the generated root: %w", err)}
	}
	return true, nil
}

// PrepareBackup assembles the backup to push from the chunk files
// <configDir>/restore/0 .. <chunks-1>: their bytes are concatenated and,
// when gzip-compressed (the state Secrets' own encoding), decompressed. The
// state file is written to <workdir>/restore.tfstate.
func PrepareBackup(workdir, configDir string, chunks int) (string, error) {
	var raw bytes.Buffer
	for i := 0; i < chunks; i++ {
		p := filepath.Join(configDir, RestoreDir, strconv.Itoa(i))
		b, err := readCapped(p, maxConfigFileBytes)
		if err != nil {
			return "", &PrepareError{fmt.Errorf("reading backup chunk %d of %d: %w", i, chunks, err)}
		}
		raw.Write(b)
	}
	data := raw.Bytes()
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return "", &PrepareError{fmt.Errorf("backup is not valid gzip: %w", err)}
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxRestoreBytes+1))
		if err != nil {
			return "", &PrepareError{fmt.Errorf("decompressing the backup: %w", err)}
		}
		if len(out) > maxRestoreBytes {
			return "", &PrepareError{fmt.Errorf("backup decompresses to more than %d bytes", maxRestoreBytes)}
		}
		data = out
	}
	var probe struct {
		Version *int    `json:"version"`
		Lineage *string `json:"lineage"`
	}
	if err := json.Unmarshal(data, &probe); err != nil || probe.Version == nil || probe.Lineage == nil {
		return "", &PrepareError{errors.New("backup is not a state file (no version and lineage)")}
	}
	p := filepath.Join(workdir, backupFile)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return "", &PrepareError{fmt.Errorf("writing the backup to %s: %w", p, err)}
	}
	return p, nil
}

// WriteCLIConfig writes <workdir>/cli.tfrc when providersDir is a
// directory and returns its path; it returns "" (and writes nothing) when
// the image ships no mirror.
func WriteCLIConfig(workdir, providersDir string) (string, error) {
	fi, err := os.Stat(providersDir)
	if err != nil || !fi.IsDir() {
		return "", nil
	}
	p := filepath.Join(workdir, cliFile)
	if err := os.WriteFile(p, []byte(CLIConfig(providersDir)), 0o600); err != nil {
		return "", &PrepareError{fmt.Errorf("writing the CLI configuration %s: %w", p, err)}
	}
	return p, nil
}

func readCapped(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return b, nil
}
