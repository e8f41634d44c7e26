package kit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// moduleFacts is what the contract test needs to know of a module before
// running it: the outputs it declares, the providers it needs mocked and
// the terraform_remote_state data sources it reads.
type moduleFacts struct {
	// Outputs are the names of the declared outputs, sorted.
	Outputs []string
	// Providers are the local names of the providers the module requires
	// or implies by a resource type, sorted, without the built-in
	// terraform provider.
	Providers []string
	// RemoteStates are the names of the terraform_remote_state data
	// sources, sorted.
	RemoteStates []string
}

var topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "terraform"},
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "ephemeral", LabelNames: []string{"type", "name"}},
}}

var terraformSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}}

// moduleFileSet returns the top-level configuration files of dir the way
// OpenTofu reads them: a .tf (.tf.json) file with a .tofu (.tofu.json)
// twin is skipped.
func moduleFileSet(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range entries {
		if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
			names[e.Name()] = true
		}
	}
	var files []string
	for n := range names {
		switch {
		case strings.HasSuffix(n, ".tf"):
			if names[strings.TrimSuffix(n, ".tf")+".tofu"] {
				continue
			}
		case strings.HasSuffix(n, ".tf.json"):
			if names[strings.TrimSuffix(n, ".tf.json")+".tofu.json"] {
				continue
			}
		case strings.HasSuffix(n, ".tofu"), strings.HasSuffix(n, ".tofu.json"):
		default:
			continue
		}
		files = append(files, n)
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no .tf, .tf.json, .tofu or .tofu.json file", dir)
	}
	return files, nil
}

// scanModule reads the module's top-level files.
func scanModule(dir string) (*moduleFacts, error) {
	files, err := moduleFileSet(dir)
	if err != nil {
		return nil, err
	}
	p := hclparse.NewParser()
	outputs, providers, remote := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var diags hcl.Diagnostics
	for _, name := range files {
		var f *hcl.File
		var d hcl.Diagnostics
		if strings.HasSuffix(name, ".json") {
			f, d = p.ParseJSONFile(filepath.Join(dir, name))
		} else {
			f, d = p.ParseHCLFile(filepath.Join(dir, name))
		}
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		content, _, d := f.Body.PartialContent(topSchema)
		diags = append(diags, d...)
		for _, b := range content.Blocks {
			switch b.Type {
			case "output":
				outputs[b.Labels[0]] = true
			case "terraform":
				tc, _, d := b.Body.PartialContent(terraformSchema)
				diags = append(diags, d...)
				for _, rp := range tc.Blocks {
					attrs, d := rp.Body.JustAttributes()
					diags = append(diags, d...)
					for n := range attrs {
						providers[n] = true
					}
				}
			default:
				typ := b.Labels[0]
				if b.Type == "data" && typ == "terraform_remote_state" {
					remote[b.Labels[1]] = true
				}
				local, _, _ := strings.Cut(typ, "_")
				providers[local] = true
			}
		}
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("the module cannot be parsed: %s", diags.Error())
	}
	delete(providers, "terraform")
	return &moduleFacts{Outputs: sortedKeys(outputs), Providers: sortedKeys(providers), RemoteStates: sortedKeys(remote)}, nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
