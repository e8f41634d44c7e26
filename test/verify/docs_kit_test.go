package verify

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
)

const moduleAuthorPage = "docs/book/module-author/module-author-kit.md"

var (
	fencedBlock = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")
	inlineLint  = regexp.MustCompile("`(tfcapi-lint [^`]*)`")
)

// lintCommandProblems parses one tfcapi-lint command line (the words after
// "tfcapi-lint") with the subcommand's real flag set. A full command (from
// a code block) must also name its one positional argument and a valid
// --role where the subcommand has one.
func lintCommandProblems(words []string, full bool) []string {
	line := "tfcapi-lint " + strings.Join(words, " ")
	if len(words) == 0 {
		return []string{line + ": no subcommand"}
	}
	if words[0] == "--version" || words[0] == "--help" {
		return nil
	}
	if !slices.Contains(lint.Subcommands(), words[0]) {
		return []string{fmt.Sprintf("%s: tfcapi-lint has no subcommand %q", line, words[0])}
	}
	fs := lint.Flags(words[0])
	fs.SetOutput(io.Discard)
	if err := fs.Parse(words[1:]); err != nil {
		return []string{fmt.Sprintf("%s: %v", line, err)}
	}
	var problems []string
	if role := fs.Lookup("role"); role != nil && fs.Changed("role") {
		if _, err := contract.ParseRole(role.Value.String()); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", line, err))
		}
	}
	if full && words[0] != "version" {
		if fs.NArg() != 1 {
			problems = append(problems, fmt.Sprintf("%s: %d arguments, want one", line, fs.NArg()))
		}
		if role := fs.Lookup("role"); role != nil && !fs.Changed("role") {
			problems = append(problems, line+": no --role")
		}
	}
	return problems
}

// commandWords returns the words of each tfcapi-lint command in a block of
// shell or YAML: from "tfcapi-lint " to the end of the command (a pipe,
// redirection, && or ;), continuation lines joined.
func commandWords(block string) [][]string {
	block = strings.ReplaceAll(block, "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(block, "\n") {
		i := strings.Index(line, "tfcapi-lint ")
		if i < 0 || i > 0 && !strings.ContainsAny(line[i-1:i], " \t:") {
			continue
		}
		var words []string
		for _, w := range strings.Fields(line[i+len("tfcapi-lint "):]) {
			if w == "|" || w == "&&" || w == ";" || strings.HasPrefix(w, ">") || w == "#" {
				break
			}
			words = append(words, strings.Trim(w, `"'`))
		}
		out = append(out, words)
	}
	return out
}

// moduleAuthorProblems lists what is wrong in a module-author page: a
// tfcapi-lint command line its real flags refuse, a make target or test
// that does not exist.
func moduleAuthorProblems(page string, targets, tests []string) []string {
	var problems []string
	n := 0
	for _, m := range fencedBlock.FindAllStringSubmatch(page, -1) {
		for _, words := range commandWords(m[2]) {
			n++
			problems = append(problems, lintCommandProblems(words, true)...)
		}
	}
	for _, m := range inlineLint.FindAllStringSubmatch(page, -1) {
		n++
		problems = append(problems, lintCommandProblems(strings.Fields(m[1])[1:], false)...)
	}
	if n == 0 {
		problems = append(problems, "the page shows no tfcapi-lint command")
	}
	return append(problems, pageNamesProblems(page, targets, tests)...)
}

// TestDocsModuleAuthorCommandsParse: every tfcapi-lint command line of the
// module author's page (the GitHub Actions snippet and the pre-commit
// example included) parses with the subcommand's real flags, and every
// make target and test it names exists.
func TestDocsModuleAuthorCommandsParse(t *testing.T) {
	root := docsRoot(t)
	b, err := os.ReadFile(filepath.Join(root, moduleAuthorPage))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range moduleAuthorProblems(string(b), makefileTargets(t, root), testFunctions(t, root)) {
		t.Errorf("%s: %s", moduleAuthorPage, p)
	}
}

// TestDocsModuleAuthorCheckCatchesMistakes: the check above reports an
// unknown subcommand, an unknown flag, a bad role, a missing argument and
// a page with no command at all.
func TestDocsModuleAuthorCheckCatchesMistakes(t *testing.T) {
	page := "```sh\ntfcapi-lint frobnicate .\ntfcapi-lint test . --role machine --no-such-flag\n" +
		"tfcapi-lint module . --role pool\n```\n\n```yaml\n      - run: tfcapi-lint test --role machine\n```\n" +
		"Use `tfcapi-lint init --rol machine`.\n"
	got := moduleAuthorProblems(page, nil, nil)
	docsExpectProblems(t, "invented commands", got,
		`has no subcommand "frobnicate"`, "unknown flag: --no-such-flag", `unknown role "pool"`,
		"tfcapi-lint test --role machine: 0 arguments, want one", "unknown flag: --rol")
	docsExpectProblems(t, "no command", moduleAuthorProblems("nothing here", nil, nil), "shows no tfcapi-lint command")
}

// preCommitHook is one entry of .pre-commit-hooks.yaml.
type preCommitHook struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Entry         string   `json:"entry"`
	Language      string   `json:"language"`
	Files         string   `json:"files"`
	Args          []string `json:"args"`
	PassFilenames *bool    `json:"pass_filenames"`
	RequireSerial bool     `json:"require_serial"`
}

// preCommitProblems checks the hooks: each names a real tfcapi-lint
// subcommand, takes no file names (tfcapi-lint reads a whole directory),
// matches module files only, and runs with the args of the page's example.
func preCommitProblems(hooksYAML []byte, exampleArgs map[string][]string) []string {
	var hooks []preCommitHook
	if err := yaml.UnmarshalStrict(hooksYAML, &hooks); err != nil {
		return []string{"the hooks do not parse: " + err.Error()}
	}
	var problems []string
	var ids []string
	for _, h := range hooks {
		where := "hook " + h.ID
		ids = append(ids, h.ID)
		if h.Name == "" || h.Language != "golang" {
			problems = append(problems, where+": want a name and language golang (pre-commit builds cmd/tfcapi-lint)")
		}
		if h.PassFilenames == nil || *h.PassFilenames {
			problems = append(problems, where+": pass_filenames must be false")
		}
		words := strings.Fields(h.Entry)
		if len(words) < 2 || words[0] != "tfcapi-lint" {
			problems = append(problems, where+": the entry must be tfcapi-lint <subcommand>")
			continue
		}
		re, err := regexp.Compile(h.Files)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: files: %v", where, err))
		} else {
			for name, want := range map[string]bool{"main.tf": true, "x/outputs.tofu.json": true, "README.md": false, "main.tftest.hcl": false} {
				if re.MatchString(name) != want {
					problems = append(problems, fmt.Sprintf("%s: files matches %s: %v", where, name, !want))
				}
			}
		}
		args, ok := exampleArgs[h.ID]
		if !ok {
			problems = append(problems, where+": the module author's page shows no example of it")
		}
		for _, p := range lintCommandProblems(append(append(words[1:], h.Args...), args...), true) {
			problems = append(problems, where+": "+p)
		}
	}
	for _, want := range []string{"tfcapi-lint-module", "tfcapi-lint-test"} {
		if !slices.Contains(ids, want) {
			problems = append(problems, "no hook "+want)
		}
	}
	return problems
}

// pageHookArgs reads the args of each hook of the page's pre-commit
// example (the YAML block with a repos: key).
func pageHookArgs(t *testing.T, page string) map[string][]string {
	t.Helper()
	args := map[string][]string{}
	for _, m := range fencedBlock.FindAllStringSubmatch(page, -1) {
		if m[1] != "yaml" || !strings.HasPrefix(m[2], "repos:") {
			continue
		}
		var cfg struct {
			Repos []struct {
				Hooks []struct {
					ID   string   `json:"id"`
					Args []string `json:"args"`
				} `json:"hooks"`
			} `json:"repos"`
		}
		if err := yaml.Unmarshal([]byte(m[2]), &cfg); err != nil {
			t.Fatalf("the pre-commit example does not parse: %v", err)
		}
		for _, r := range cfg.Repos {
			for _, h := range r.Hooks {
				args[h.ID] = h.Args
			}
		}
	}
	return args
}

// TestPreCommitHooksNameRealCommands parses .pre-commit-hooks.yaml and
// checks each hook against tfcapi-lint's real command line, with the args
// the module author's page tells users to give.
func TestPreCommitHooksNameRealCommands(t *testing.T) {
	root := docsRoot(t)
	hooks, err := os.ReadFile(filepath.Join(root, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, moduleAuthorPage))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preCommitProblems(hooks, pageHookArgs(t, string(page))) {
		t.Error(p)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "tfcapi-lint", "main.go")); err != nil {
		t.Errorf("the hooks build cmd/tfcapi-lint: %v", err)
	}
}

// TestPreCommitCheckCatchesMistakes: a hook with an unknown subcommand, a
// flag that does not exist, file names passed, or no example is reported.
func TestPreCommitCheckCatchesMistakes(t *testing.T) {
	hooks := []byte(`- id: tfcapi-lint-module
  name: m
  entry: tfcapi-lint modules
  language: golang
  files: \.tf$
  pass_filenames: false
- id: tfcapi-lint-test
  name: t
  entry: tfcapi-lint test --fast
  language: golang
  files: .*
`)
	got := preCommitProblems(hooks, map[string][]string{"tfcapi-lint-module": {"--role", "machine", "."}})
	docsExpectProblems(t, "broken hooks", got,
		"hook tfcapi-lint-module: files matches x/outputs.tofu.json: false",
		`has no subcommand "modules"`, "unknown flag: --fast", "hook tfcapi-lint-test: pass_filenames must be false",
		"hook tfcapi-lint-test: files matches README.md: true", "hook tfcapi-lint-test: files matches main.tftest.hcl: true",
		"hook tfcapi-lint-test: the module author's page shows no example")
}
