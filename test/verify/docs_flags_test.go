package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
)

// docsFlag is one flag as the page or the command states it.
type docsFlag struct {
	Type, Default, Shorthand string
	Where                    string
}

// docsCommandFlags returns every flag of the manager's real command line
// (setup.Command, which cmd/manager runs), help included.
func docsCommandFlags() map[string]docsFlag {
	cmd := setup.Command()
	cmd.InitDefaultHelpFlag()
	out := map[string]docsFlag{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		out[f.Name] = docsFlag{Type: f.Value.Type(), Default: f.DefValue, Shorthand: f.Shorthand}
	})
	return out
}

// docsFlagRows reads the tables of page with Flag, Type and Default columns.
// A Flag cell names the flag as `--name`, optionally preceded by its
// shorthand `-x`; the Default cell is the default in backquotes, `""` for
// an empty one.
func docsFlagRows(page string) (map[string]docsFlag, []string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Base(page)
	rows := map[string]docsFlag{}
	var problems []string
	for _, t := range docsParseTables(string(b)) {
		fc, tc, dc := t.column("Flag"), t.column("Type"), t.column("Default")
		if fc < 0 || tc < 0 || dc < 0 {
			continue
		}
		for _, r := range t.Rows {
			where := fmt.Sprintf("%s line %d (section %q)", base, r.Line, t.Section)
			if len(r.Cells) <= max(fc, tc, dc) {
				problems = append(problems, where+": row has too few cells")
				continue
			}
			var name, short string
			for _, n := range docsCodeNames(r.Cells[fc]) {
				switch {
				case strings.HasPrefix(n, "--"):
					name = strings.TrimPrefix(n, "--")
				case strings.HasPrefix(n, "-") && len(n) == 2:
					short = n[1:]
				default:
					problems = append(problems, fmt.Sprintf("%s: %q in the Flag cell is neither --name nor -x", where, n))
				}
			}
			if name == "" {
				problems = append(problems, where+": the Flag cell names no --flag")
				continue
			}
			defs := docsCodeNames(r.Cells[dc])
			if len(defs) != 1 {
				problems = append(problems, where+": the Default cell must hold the default in one pair of backquotes (`\"\"` when empty)")
				continue
			}
			def := defs[0]
			if def == `""` {
				def = ""
			}
			if prev, dup := rows[name]; dup {
				problems = append(problems, fmt.Sprintf("%s: --%s already has a row at %s", where, name, prev.Where))
				continue
			}
			rows[name] = docsFlag{Type: strings.TrimSpace(r.Cells[tc]), Default: def, Shorthand: short, Where: where}
		}
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s has no table with Flag, Type and Default columns", page)
	}
	return rows, problems, nil
}

// docsCheckFlags compares the command's flags with the page's rows, both
// ways: name, shorthand, type and default.
func docsCheckFlags(flags map[string]docsFlag, page string) ([]string, error) {
	rows, problems, err := docsFlagRows(page)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(page)
	var names []string
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := flags[n]
		row, ok := rows[n]
		if !ok {
			problems = append(problems, fmt.Sprintf("flag --%s (type %s, default %q) has no row in %s", n, f.Type, f.Default, base))
			continue
		}
		if row.Type != f.Type {
			problems = append(problems, fmt.Sprintf("%s: --%s has the type %s, but the row says %q", row.Where, n, f.Type, row.Type))
		}
		if row.Default != f.Default {
			problems = append(problems, fmt.Sprintf("%s: --%s defaults to %q, but the row says %q", row.Where, n, f.Default, row.Default))
		}
		if row.Shorthand != f.Shorthand {
			problems = append(problems, fmt.Sprintf("%s: --%s has the shorthand %q, but the row gives %q", row.Where, n, f.Shorthand, row.Shorthand))
		}
	}
	var docNames []string
	for n := range rows {
		docNames = append(docNames, n)
	}
	sort.Strings(docNames)
	for _, n := range docNames {
		if _, ok := flags[n]; !ok {
			problems = append(problems, fmt.Sprintf("%s names --%s, which the manager does not have", rows[n].Where, n))
		}
	}
	return problems, nil
}

// TestDocsManagerFlagsMatchCommand: every flag of the manager's command line
// has a row in manager-flags.md with its type and default, every row names
// a flag, and the environment variables --runner-image falls back to and
// those of the Go memory limit are documented.
func TestDocsManagerFlagsMatchCommand(t *testing.T) {
	r := docsRoot(t)
	page := filepath.Join(r, docsReferenceDir, "manager-flags.md")
	problems, err := docsCheckFlags(docsCommandFlags(), page)
	docsReport(t, problems, err)
	envs, n, err := docsNamesInColumn(page, "Variable")
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("manager-flags.md has no table with a Variable column")
	}
	for _, env := range []string{setup.ManagerImageEnv, setup.PodNamespaceEnv, setup.PodNameEnv, setup.GoMemLimitEnv, setup.AutoMemLimitEnv} {
		if _, ok := envs[env]; !ok {
			t.Errorf("manager-flags.md does not list the environment variable %s", env)
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "`"+setup.LeaderElectionID+"`") {
		t.Errorf("manager-flags.md does not name the leader-election Lease %s", setup.LeaderElectionID)
	}
}

// TestDocsFlagsCheckCatchesMismatches proves the flag check fails on a
// missing row, an unknown flag, and a wrong type, default or shorthand.
func TestDocsFlagsCheckCatchesMismatches(t *testing.T) {
	flags := map[string]docsFlag{
		"a": {Type: "int", Default: "1"},
		"b": {Type: "string", Default: ""},
		"v": {Type: "Level", Default: "2", Shorthand: "v"},
		"c": {Type: "bool", Default: "false"},
	}
	page := filepath.Join(t.TempDir(), "flags.md")
	docsWriteFile(t, page, "# F\n\n| Flag | Type | Default | Meaning |\n| --- | --- | --- | --- |\n"+
		"| `--a` | string | `1` | x |\n"+
		"| `--b` | string | `\"\"` | x |\n"+
		"| `--v` | Level | `3` | x |\n"+
		"| `--ghost` | bool | `false` | x |\n")
	problems, err := docsCheckFlags(flags, page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"flag --c (type bool, default \"false\") has no row",
		"--a has the type int, but the row says \"string\"",
		"--v defaults to \"2\", but the row says \"3\"",
		"--v has the shorthand \"v\", but the row gives \"\"",
		"names --ghost, which the manager does not have",
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem reported containing %q; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 5 {
		t.Errorf("got %d problems, want 5:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}
