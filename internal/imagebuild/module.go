package imagebuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
)

// ImageUser is the non-root user module images run as.
const ImageUser = 65532

// ModuleImage describes a module image.
type ModuleImage struct {
	// Role is the contract role the module implements.
	Role contract.Role
	// ModuleDir is the module's directory; its content goes to
	// /captf/module.
	ModuleDir string
	// Runtime is the tofu or terraform binary that goes to /captf/runtime.
	Runtime string
	// RuntimeName is contract.RuntimeTofu or contract.RuntimeTerraform.
	RuntimeName string
	// RuntimeVersion is the runtime's version, for example 1.12.6.
	RuntimeVersion string
	// ProvidersDir, when set, is a provider mirror copied to
	// /captf/providers; EmptyProviders ships an empty mirror instead, which
	// keeps init off the network for a module that needs no provider.
	ProvidersDir   string
	EmptyProviders bool
	// Source, Revision and Version set the org.opencontainers.image.*
	// labels when not empty.
	Source, Revision, Version string
	// Platform defaults to linux and the architecture of this process.
	Platform v1.Platform
	// Extra layers are added on top, for example helper binaries.
	Extra []Layer
}

// Spec returns the image spec: one layer with /captf/runtime, one with
// /captf/module (and /captf/providers when asked for), the extra layers,
// USER 65532 and the labels.
func (m ModuleImage) Spec() (Spec, error) {
	if _, err := contract.ParseRole(string(m.Role)); err != nil {
		return Spec{}, err
	}
	if m.RuntimeName != contract.RuntimeTofu && m.RuntimeName != contract.RuntimeTerraform {
		return Spec{}, fmt.Errorf("runtime name %q: want %s or %s", m.RuntimeName, contract.RuntimeTofu, contract.RuntimeTerraform)
	}
	if m.RuntimeVersion == "" {
		return Spec{}, errors.New("runtime version is empty")
	}
	if err := checkModuleDir(m.ModuleDir); err != nil {
		return Spec{}, err
	}
	fi, err := os.Stat(m.Runtime)
	if err != nil {
		return Spec{}, fmt.Errorf("runtime: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Spec{}, fmt.Errorf("runtime %s is not a regular file", m.Runtime)
	}
	uid := ImageUser
	runtimeLayer := Layer{ParentUID: uid, ParentGID: uid, Entries: []Entry{
		{Path: contract.RuntimePath, Mode: 0o755, UID: uid, GID: uid, Source: m.Runtime},
	}}
	moduleEntries, err := DirEntries(m.ModuleDir, contract.ModuleDir, uid, uid)
	if err != nil {
		return Spec{}, err
	}
	switch {
	case m.ProvidersDir != "":
		providers, err := DirEntries(m.ProvidersDir, contract.ProvidersDir, uid, uid)
		if err != nil {
			return Spec{}, err
		}
		moduleEntries = append(moduleEntries, providers...)
	case m.EmptyProviders:
		moduleEntries = append(moduleEntries, Entry{Path: contract.ProvidersDir, Mode: fs.ModeDir | 0o755, UID: uid, GID: uid})
	}
	moduleLayer := Layer{ParentUID: uid, ParentGID: uid, Entries: moduleEntries}

	labels := map[string]string{
		contract.LabelContract:       contract.Version,
		contract.LabelRole:           string(m.Role),
		contract.LabelRuntime:        m.RuntimeName,
		contract.LabelRuntimeVersion: m.RuntimeVersion,
	}
	for k, v := range map[string]string{contract.LabelSource: m.Source, contract.LabelRevision: m.Revision, contract.LabelVersion: m.Version} {
		if v != "" {
			labels[k] = v
		}
	}
	platform := m.Platform
	if platform.OS == "" {
		platform.OS = "linux"
	}
	if platform.Architecture == "" {
		platform.Architecture = runtime.GOARCH
	}
	return Spec{
		Platform: platform,
		Layers:   append([]Layer{runtimeLayer, moduleLayer}, m.Extra...),
		User:     strconv.Itoa(uid),
		Labels:   labels,
	}, nil
}

// Build builds the module image.
func (m ModuleImage) Build() (v1.Image, error) {
	spec, err := m.Spec()
	if err != nil {
		return nil, err
	}
	return Build(spec)
}

// checkModuleDir applies the runner's preflight to the source: at least one
// .tf, .tf.json, .tofu or .tofu.json file at the top level.
func checkModuleDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("module directory: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".tf") || strings.HasSuffix(n, ".tf.json") ||
			strings.HasSuffix(n, ".tofu") || strings.HasSuffix(n, ".tofu.json")) {
			return nil
		}
	}
	return fmt.Errorf("module directory %s has no .tf, .tf.json, .tofu or .tofu.json file at its top level", filepath.Clean(dir))
}
