package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/inputs/canonical"
)

// maxModuleFileBytes caps each module file the runner parses for its
// output declarations; a bigger file leaves the outputs unchecked.
const maxModuleFileBytes = 8 << 20

// maxUndeclaredOutputs caps how many undeclared outputs a result document
// lists; the contract has at most five per role.
const maxUndeclaredOutputs = 16

var outputsSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "output", LabelNames: []string{"name"}}}}

// DeclaredOutputs returns the names of the output blocks the module
// declares in the configuration files at the top level of moduleDir (.tf and
// .tofu in native syntax, .tf.json and .tofu.json in JSON syntax). A .tf or
// .tf.json file that has a .tofu or .tofu.json twin of the same base name
// is skipped, as OpenTofu skips it. A file that cannot be read or parsed is
// an error: the runtime reports the module's own problems better than the
// runner can, so the caller then leaves the generated root as rendered.
func DeclaredOutputs(moduleDir string) (map[string]bool, error) {
	entries, err := os.ReadDir(moduleDir)
	if err != nil {
		return nil, fmt.Errorf("reading module directory %s: %w", moduleDir, err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name()] = true
	}
	parser := hclparse.NewParser()
	declared := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !moduleFileName(name) || shadowedByTofu(name, present) {
			continue
		}
		p := filepath.Join(moduleDir, name)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		src, err := readCapped(p, maxModuleFileBytes)
		if err != nil {
			return nil, fmt.Errorf("reading module file %s: %w", name, err)
		}
		var f *hcl.File
		var diags hcl.Diagnostics
		if strings.HasSuffix(name, ".json") {
			f, diags = parser.ParseJSON(src, name)
		} else {
			f, diags = parser.ParseHCL(src, name)
		}
		if diags.HasErrors() {
			return nil, fmt.Errorf("parsing module file %s: %s", name, firstError(diags))
		}
		content, _, diags := f.Body.PartialContent(outputsSchema)
		if diags.HasErrors() {
			return nil, fmt.Errorf("reading the output blocks of module file %s: %s", name, firstError(diags))
		}
		for _, b := range content.Blocks {
			declared[b.Labels[0]] = true
		}
	}
	return declared, nil
}

// shadowedByTofu reports whether a .tf or .tf.json file has a .tofu or
// .tofu.json twin that OpenTofu loads instead.
func shadowedByTofu(name string, present map[string]bool) bool {
	switch {
	case strings.HasSuffix(name, ".tf.json"):
		return present[strings.TrimSuffix(name, ".tf.json")+".tofu.json"]
	case strings.HasSuffix(name, ".tf"):
		return present[strings.TrimSuffix(name, ".tf")+".tofu"]
	}
	return false
}

func firstError(diags hcl.Diagnostics) string {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			return cleanLine(d.Error())
		}
	}
	return "unknown error"
}

// contractOutputRef matches the value of a generated root output that
// re-exports an output of the module call.
var contractOutputRef = regexp.MustCompile(`^\$\{module\.` + regexp.QuoteMeta(inputs.ModuleName) + `\.([A-Za-z_][A-Za-z0-9_-]*)\}$`)

// PruneRootOutputs removes from the generated root's main.tf.json every
// root output that re-exports a module output the module does not declare,
// and returns those module output names, sorted. The root is rewritten only
// when something is removed; every other member keeps its bytes.
func PruneRootOutputs(root string, declared map[string]bool) ([]string, error) {
	p := filepath.Join(root, MainFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, &PrepareError{fmt.Errorf("reading the generated root: %w", err)}
	}
	top, err := canonical.Members(b)
	if err != nil {
		return nil, &PrepareError{fmt.Errorf("%s of the generated root: %w", MainFile, err)}
	}
	var undeclared []string
	changed := false
	for i := range top {
		if top[i].Key != "output" {
			continue
		}
		outs, err := canonical.Members(top[i].Raw)
		if err != nil {
			return nil, &PrepareError{fmt.Errorf("the outputs of the generated root: %w", err)}
		}
		kept := outs[:0:0]
		for _, o := range outs {
			var decl struct {
				Value any `json:"value"`
			}
			if err := json.Unmarshal(o.Raw, &decl); err == nil {
				if s, ok := decl.Value.(string); ok {
					if m := contractOutputRef.FindStringSubmatch(s); m != nil && !declared[m[1]] {
						undeclared = append(undeclared, m[1])
						continue
					}
				}
			}
			kept = append(kept, o)
		}
		if len(kept) != len(outs) {
			top[i].Raw = encodeMembers(kept)
			changed = true
		}
	}
	slices.Sort(undeclared)
	undeclared = slices.Compact(undeclared)
	if !changed {
		return undeclared, nil
	}
	if err := os.WriteFile(p, encodeMembers(top), 0o600); err != nil {
		return nil, &PrepareError{fmt.Errorf("rewriting the generated root: %w", err)}
	}
	return undeclared, nil
}

// encodeMembers writes members back as one JSON object.
func encodeMembers(ms []canonical.Member) []byte {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(m.Raw)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
