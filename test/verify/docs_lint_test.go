package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lint"
)

const docsLintPage = "tfcapi-lint-cli.md"

// docsLintChecks compares the Check, Severity and Roles columns of the
// page's check tables with lint.Checks(): every check has exactly one row,
// every row names a check, and the severities and roles agree.
func docsLintChecks(page string, checks []lint.Check) ([]string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var problems []string
	rows := map[string]bool{}
	byID := map[string]lint.Check{}
	for _, c := range checks {
		byID[c.ID] = c
	}
	for _, t := range docsParseTables(string(b)) {
		cc, sc, rc := t.column("Check"), t.column("Severity"), t.column("Roles")
		if cc < 0 || sc < 0 || rc < 0 {
			continue
		}
		for _, r := range t.Rows {
			where := fmt.Sprintf("%s line %d", filepath.Base(page), r.Line)
			if len(r.Cells) <= max(cc, sc, rc) {
				problems = append(problems, where+": row has too few cells")
				continue
			}
			ids := docsCodeNames(r.Cells[cc])
			if len(ids) != 1 {
				problems = append(problems, where+": the Check cell must name one check ID in backquotes")
				continue
			}
			id := ids[0]
			c, ok := byID[id]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s names check %q, which internal/lint does not have", where, id))
				continue
			}
			if rows[id] {
				problems = append(problems, fmt.Sprintf("%s: check %q has a second row", where, id))
			}
			rows[id] = true
			var want []string
			for _, s := range c.Severities {
				want = append(want, string(s))
			}
			if got := docsCodeNames(r.Cells[sc]); !slices.Equal(got, want) {
				problems = append(problems, fmt.Sprintf("%s: check %q has severities %v, the code %v", where, id, got, want))
			}
			var roles []string
			for _, role := range c.Roles {
				roles = append(roles, string(role))
			}
			got := docsCodeNames(r.Cells[rc])
			if strings.TrimSpace(r.Cells[rc]) == "all" {
				got = nil
				for _, role := range contract.Roles() {
					got = append(got, string(role))
				}
			}
			if !slices.Equal(got, roles) {
				problems = append(problems, fmt.Sprintf("%s: check %q applies to %v, the code to %v", where, id, got, roles))
			}
			if c.Image != strings.HasPrefix(id, "image/") || c.Image != (t.Section == "Image checks") {
				problems = append(problems, fmt.Sprintf("%s: check %q is in section %q", where, id, t.Section))
			}
		}
	}
	for _, c := range checks {
		if !rows[c.ID] {
			problems = append(problems, fmt.Sprintf("check %q (internal/lint) has no row in %s: add one", c.ID, filepath.Base(page)))
		}
	}
	return problems, nil
}

// docsLintFlags compares the page's flag tables with each subcommand's
// real flag set: the sections "Flags of `module` and `image`", "Flags of
// `image` only", "Flags of `test`", "Flags of `init`" and "Flags of
// `version`".
func docsLintFlags(page string) ([]string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var problems []string
	doc := map[string]map[string]docsFlag{}
	for _, t := range docsParseTables(string(b)) {
		fc, tc, dc := t.column("Flag"), t.column("Type"), t.column("Default")
		if fc < 0 || tc < 0 || dc < 0 {
			continue
		}
		var subs []string
		switch t.Section {
		case "Flags of `module` and `image`":
			subs = []string{"module", "image"}
		case "Flags of `image` only":
			subs = []string{"image"}
		case "Flags of `test`":
			subs = []string{"test"}
		case "Flags of `init`":
			subs = []string{"init"}
		case "Flags of `version`":
			subs = []string{"version"}
		default:
			problems = append(problems, fmt.Sprintf("flag table in unknown section %q", t.Section))
			continue
		}
		for _, r := range t.Rows {
			names := docsCodeNames(r.Cells[fc])
			defs := docsCodeNames(r.Cells[dc])
			if len(names) != 1 || len(defs) != 1 {
				problems = append(problems, fmt.Sprintf("%s line %d: want one `--flag` and one `default`", filepath.Base(page), r.Line))
				continue
			}
			for _, s := range subs {
				if doc[s] == nil {
					doc[s] = map[string]docsFlag{}
				}
				doc[s][strings.TrimPrefix(names[0], "--")] = docsFlag{Type: strings.TrimSpace(r.Cells[tc]), Default: defs[0], Where: fmt.Sprintf("line %d", r.Line)}
			}
		}
	}
	for _, s := range lint.Subcommands() {
		real := map[string]docsFlag{}
		lint.Flags(s).VisitAll(func(f *pflag.Flag) {
			def := f.DefValue
			if def == "" {
				def = `""`
			}
			real[f.Name] = docsFlag{Type: f.Value.Type(), Default: def}
		})
		for n, f := range real {
			d, ok := doc[s][n]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s flag --%s has no row in %s", s, n, filepath.Base(page)))
			case d.Type != f.Type || d.Default != f.Default:
				problems = append(problems, fmt.Sprintf("%s flag --%s: the page says %s %s (%s), the code %s %s", s, n, d.Type, d.Default, d.Where, f.Type, f.Default))
			}
		}
		for n, d := range doc[s] {
			if _, ok := real[n]; !ok {
				problems = append(problems, fmt.Sprintf("%s names %s flag --%s (%s), which does not exist", filepath.Base(page), s, n, d.Where))
			}
		}
	}
	return problems, nil
}

// docsLintExitCodes compares the exit code table with the constants.
func docsLintExitCodes(page string) ([]string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	want := map[string]int{"ExitOK": lint.ExitOK, "ExitFindings": lint.ExitFindings, "ExitUnparsable": lint.ExitUnparsable, "ExitUsage": lint.ExitUsage}
	seen := map[string]bool{}
	var problems []string
	for _, t := range docsParseTables(string(b)) {
		cc, nc := t.column("Code"), t.column("Name")
		if cc < 0 || nc < 0 {
			continue
		}
		for _, r := range t.Rows {
			codes, names := docsCodeNames(r.Cells[cc]), docsCodeNames(r.Cells[nc])
			if len(codes) != 1 || len(names) != 1 {
				problems = append(problems, fmt.Sprintf("exit code row at line %d: want one `code` and one `Name`", r.Line))
				continue
			}
			n, err := strconv.Atoi(codes[0])
			w, ok := want[names[0]]
			if err != nil || !ok || n != w {
				problems = append(problems, fmt.Sprintf("exit code row at line %d: %s is %d in internal/lint", r.Line, names[0], w))
			}
			seen[names[0]] = true
		}
	}
	for n := range want {
		if !seen[n] {
			problems = append(problems, "exit code "+n+" has no row")
		}
	}
	return problems, nil
}

// TestDocsLintCLIMatchesTheCode keeps docs/book/reference/tfcapi-lint-cli.md
// in step with internal/lint: the check tables (ID, severity, roles), the
// flag tables and the exit codes.
func TestDocsLintCLIMatchesTheCode(t *testing.T) {
	page := filepath.Join(docsRoot(t), docsReferenceDir, docsLintPage)
	problems, err := docsLintChecks(page, lint.Checks())
	docsReport(t, problems, err)
	problems, err = docsLintFlags(page)
	docsReport(t, problems, err)
	problems, err = docsLintExitCodes(page)
	docsReport(t, problems, err)
}

// TestDocsLintChecksCatchMismatches: the comparison fails on a check the
// page lacks, on a row for a check that does not exist, and on a wrong
// severity or role list.
func TestDocsLintChecksCatchMismatches(t *testing.T) {
	page := filepath.Join(docsRoot(t), docsReferenceDir, docsLintPage)
	checks := lint.Checks()
	extra := append(checks, lint.Check{ID: "input/new", Severities: []lint.Severity{lint.SeverityError}, Roles: contract.Roles()})
	problems, err := docsLintChecks(page, extra)
	must(t, err)
	docsExpectProblems(t, "extra check", problems, `check "input/new" (internal/lint) has no row`)
	problems, err = docsLintChecks(page, checks[1:])
	must(t, err)
	docsExpectProblems(t, "missing check", problems, `names check "input/default", which internal/lint does not have`)
	changed := lint.Checks()
	changed[0].Severities = []lint.Severity{lint.SeverityError}
	changed[1].Roles = []contract.Role{contract.RoleMachine}
	problems, err = docsLintChecks(page, changed)
	must(t, err)
	docsExpectProblems(t, "changed check", problems, `check "input/default" has severities [warning], the code [error]`, `check "input/required" applies to [cluster machine machinepool], the code to [machine]`)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
