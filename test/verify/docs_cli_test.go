package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/captf-io/cluster-api-provider-terraform/internal/cli"
)

// docsCLICommands are the runnable commands of kubectl captf by their
// full name ("kubectl captf plan approve"); completion counts as one.
func docsCLICommands() map[string]*cobra.Command {
	root := cli.NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	root.InitDefaultCompletionCmd()
	out := map[string]*cobra.Command{}
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			name := prefix + " " + sub.Name()
			if sub.HasSubCommands() && sub.Name() != "completion" {
				walk(sub, name)
				continue
			}
			out[name] = sub
		}
	}
	walk(root, "kubectl captf")
	return out
}

// docsCheckCLI compares the commands table of the CLI page with the
// commands: one row per command, no row for a command that does not
// exist, and every flag of a command in its row's Flags cell.
func docsCheckCLI(page string, commands map[string]*cobra.Command) ([]string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `kubectl captf ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		rows[name] = strings.TrimSpace(cells[len(cells)-1])
	}
	var problems []string
	for name, c := range commands {
		flags, ok := rows[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no row in %s", name, filepath.Base(page)))
			continue
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(flags, "`--"+f.Name+"`") {
				problems = append(problems, fmt.Sprintf("the row of %s does not name its flag --%s", name, f.Name))
			}
		})
	}
	for name := range rows {
		if _, ok := commands[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s has a row for %s, which is no command", filepath.Base(page), name))
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// TestDocsCLIMatchesCommand keeps the CLI page's commands table true to
// kubectl-captf's command line.
func TestDocsCLIMatchesCommand(t *testing.T) {
	page := filepath.Join(docsRoot(t), "docs", "book", "operator-guide", "cli.md")
	problems, err := docsCheckCLI(page, docsCLICommands())
	docsReport(t, problems, err)
}

// TestDocsCLICheckCatchesMismatches proves the check reports a missing
// command, an invented one and a missing flag.
func TestDocsCLICheckCatchesMismatches(t *testing.T) {
	page := filepath.Join(t.TempDir(), "cli.md")
	if err := os.WriteFile(page, []byte("| Command | What | Flags |\n| `kubectl captf status` | x | `-A` |\n| `kubectl captf melt` | x | |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	problems, err := docsCheckCLI(page, docsCLICommands())
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"kubectl captf plan approve has no row", "row for kubectl captf melt", "does not name its flag --output"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no problem says %q; got:\n%s", want, joined)
		}
	}
}

// TestGoInstallNeedsNoReplace keeps `go install
// github.com/captf-io/cluster-api-provider-terraform/cmd/kubectl-captf@<version>`
// (the CLI page's install command) working: go install refuses a module
// whose go.mod has replace or exclude directives.
func TestGoInstallNeedsNoReplace(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docsRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod line %d: %q would make go install ...@<version> fail", i+1, line)
		}
	}
}
