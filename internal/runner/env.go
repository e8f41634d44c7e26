package runner

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// keptReserved are the TF_* and KUBE_* names the Job itself sets; every
// other TF_* and KUBE_* name is dropped from the runtime's environment.
var keptReserved = map[string]bool{
	"TF_IN_AUTOMATION": true,
	"TF_INPUT":         true,
	"KUBE_NAMESPACE":   true,
}

// EnvPlan is the environment the runtime gets.
type EnvPlan struct {
	// Env is the rewritten environment, sorted by name.
	Env []string
	// Dropped are the names of the variables removed (never their values),
	// sorted.
	Dropped []string
	// TmpDir is the TMPDIR the runtime gets.
	TmpDir string
}

// RewriteEnv rewrites the container's environment for the runtime: HOME is
// forced to workdir and TF_DATA_DIR to <workdir>/.terraform; TMPDIR is kept
// when set and otherwise <workdir>/tmp; every other TF_* and KUBE_* name is
// dropped except TF_IN_AUTOMATION, TF_INPUT and KUBE_NAMESPACE; and
// TF_CLI_CONFIG_FILE is set to cliConfig only when cliConfig is not empty
// (the image ships a provider mirror). TF_PLUGIN_CACHE_DIR is never set.
func RewriteEnv(environ []string, workdir, cliConfig string) EnvPlan {
	vars := map[string]string{}
	dropped := map[string]bool{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if reserved(name) && !keptReserved[name] {
			dropped[name] = true
			continue
		}
		vars[name] = value
	}
	vars["HOME"] = workdir
	vars["TF_DATA_DIR"] = filepath.Join(workdir, ".terraform")
	if vars["TMPDIR"] == "" {
		vars["TMPDIR"] = filepath.Join(workdir, "tmp")
	}
	if cliConfig != "" {
		vars["TF_CLI_CONFIG_FILE"] = cliConfig
	}

	p := EnvPlan{TmpDir: vars["TMPDIR"]}
	for name, value := range vars {
		p.Env = append(p.Env, name+"="+value)
	}
	sort.Strings(p.Env)
	for name := range dropped {
		p.Dropped = append(p.Dropped, name)
	}
	sort.Strings(p.Dropped)
	return p
}

func reserved(name string) bool {
	return strings.HasPrefix(name, "TF_") || strings.HasPrefix(name, "KUBE_")
}

// CLIConfig is the runtime CLI configuration written to <workdir>/cli.tfrc
// when the image ships a provider mirror: every provider comes from the
// mirror, none from a registry.
func CLIConfig(providersDir string) string {
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %s
    include = ["*/*/*"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}
`, hclString(providersDir))
}

// hclString quotes s as an HCL string literal (template sequences escaped).
func hclString(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}
