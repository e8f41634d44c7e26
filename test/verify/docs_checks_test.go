package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// docsName is a name found in a reference page, with where it was found.
type docsName struct {
	Name  string
	Where string
}

// docsNamesInColumn collects the code-span names of one column, in every table
// of page that has that column.
func docsNamesInColumn(page, column string) (map[string]docsName, int, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, 0, err
	}
	out := map[string]docsName{}
	tables := 0
	for _, t := range docsParseTables(string(b)) {
		col := t.column(column)
		if col < 0 {
			continue
		}
		tables++
		for _, r := range t.Rows {
			if col >= len(r.Cells) {
				continue
			}
			for _, n := range docsCodeNames(r.Cells[col]) {
				if _, seen := out[n]; !seen {
					out[n] = docsName{Name: n, Where: fmt.Sprintf("%s line %d (section %q)", filepath.Base(page), r.Line, t.Section)}
				}
			}
		}
	}
	return out, tables, nil
}

// docsCompareNames reports, in both directions, the difference between the
// values of consts and the names a page lists. what is "condition type",
// "reason" or "event reason"; suffix is the constants' name suffix.
func docsCompareNames(consts []docsConst, doc map[string]docsName, what, suffix, page string) []string {
	var problems []string
	byValue := map[string][]docsConst{}
	for _, c := range consts {
		byValue[c.Value] = append(byValue[c.Value], c)
	}
	for _, c := range consts {
		if _, ok := doc[c.Value]; !ok {
			problems = append(problems, fmt.Sprintf("%s %q (constant %s, api/v1alpha1/%s) is missing from %s: add a row for it",
				what, c.Value, c.Name, c.Pos, filepath.Base(page)))
		}
	}
	var names []string
	for n := range doc {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := byValue[n]; !ok {
			problems = append(problems, fmt.Sprintf("%s names %s %q at %s, but api/v1alpha1 has no *%s constant with that value: add the constant or remove the row",
				filepath.Base(page), what, n, doc[n].Where, suffix))
		}
	}
	return problems
}

// docsCheckConditions compares the *Condition and *Reason constants of apiDir
// with the Condition and Reason columns of the conditions page.
func docsCheckConditions(apiDir, page string) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	types, nt, err := docsNamesInColumn(page, "Condition")
	if err != nil {
		return nil, err
	}
	reasons, nr, err := docsNamesInColumn(page, "Reason")
	if err != nil {
		return nil, err
	}
	if nt == 0 || nr == 0 {
		return nil, fmt.Errorf("%s has no table with a Condition column or none with a Reason column", page)
	}
	problems := docsCompareNames(docsWithSuffix(consts, "Condition"), types, "condition type", "Condition", page)
	return append(problems, docsCompareNames(docsWithSuffix(consts, "Reason"), reasons, "reason", "Reason", page)...), nil
}

// docsCheckEvents compares the *Event constants of apiDir with the Reason
// column of the events page.
func docsCheckEvents(apiDir, page string) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	reasons, n, err := docsNamesInColumn(page, "Reason")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%s has no table with a Reason column", page)
	}
	return docsCompareNames(docsWithSuffix(consts, "Event"), reasons, "event reason", "Event", page), nil
}

var docsKeyKinds = map[string]string{"Annotation": "annotation", "Label": "label", "Finalizer": "finalizer"}

// docsCheckKeys compares the *Annotation, *Label and *Finalizer constants of
// apiDir with the tables of the annotations page that have Key, Kind and
// Constant columns. A row names its constant in the Constant column, or "—"
// for a key CAPTF does not define (a Cluster API, backend or Kubernetes key),
// which must then not be the value of any constant.
func docsCheckKeys(apiDir, page string) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	keyConsts := map[string]docsConst{}
	keyOwner := map[string]docsConst{}
	for _, c := range docsWithSuffix(consts, "Annotation", "Label", "Finalizer") {
		keyConsts[c.Name] = c
		keyOwner[c.Value] = c
	}
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(page)
	var problems []string
	documented := map[string]string{}
	tables := 0
	for _, t := range docsParseTables(string(b)) {
		kc, kindc, cc := t.column("Key"), t.column("Kind"), t.column("Constant")
		if kc < 0 || cc < 0 {
			continue
		}
		if kindc < 0 {
			return nil, fmt.Errorf("%s: the table in section %q has Key and Constant columns but no Kind column", page, t.Section)
		}
		tables++
		for _, r := range t.Rows {
			if len(r.Cells) <= max(kc, kindc, cc) {
				problems = append(problems, fmt.Sprintf("%s line %d: row has %d cells, want at least %d", base, r.Line, len(r.Cells), max(kc, kindc, cc)+1))
				continue
			}
			where := fmt.Sprintf("%s line %d (section %q)", base, r.Line, t.Section)
			keys := docsCodeNames(r.Cells[kc])
			if len(keys) == 0 {
				problems = append(problems, where+": the Key cell names no key in backquotes")
				continue
			}
			names := docsCodeNames(r.Cells[cc])
			if len(names) == 0 {
				if strings.TrimSpace(r.Cells[cc]) != "—" {
					problems = append(problems, fmt.Sprintf("%s: the Constant cell must name a constant in backquotes or be \"—\", got %q", where, r.Cells[cc]))
					continue
				}
				for _, k := range keys {
					if c, ok := keyOwner[k]; ok {
						problems = append(problems, fmt.Sprintf("%s: key %q has the constant %s in api/v1alpha1/%s: name it in the Constant column", where, k, c.Name, c.Pos))
					}
				}
				continue
			}
			if len(names) != 1 || len(keys) != 1 {
				problems = append(problems, fmt.Sprintf("%s: a row with a constant must name exactly one key and one constant", where))
				continue
			}
			name, key := names[0], keys[0]
			c, ok := keyConsts[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: the Constant column names %s, but api/v1alpha1 has no annotation, label or finalizer constant of that name", where, name))
				continue
			}
			if c.Value != key {
				problems = append(problems, fmt.Sprintf("%s: constant %s is %q in api/v1alpha1/%s, but the row's key is %q", where, name, c.Value, c.Pos, key))
			}
			for suffix, kind := range docsKeyKinds {
				if strings.HasSuffix(name, suffix) && strings.TrimSpace(r.Cells[kindc]) != kind {
					problems = append(problems, fmt.Sprintf("%s: %s is a%s constant, but the Kind column says %q", where, name, docsArticle(kind), r.Cells[kindc]))
				}
			}
			if prev, dup := documented[name]; dup {
				problems = append(problems, fmt.Sprintf("%s: constant %s already has a row at %s", where, name, prev))
			}
			documented[name] = where
		}
	}
	if tables == 0 {
		return nil, fmt.Errorf("%s has no table with Key, Kind and Constant columns", page)
	}
	var missing []string
	for name, c := range keyConsts {
		if _, ok := documented[name]; !ok {
			missing = append(missing, fmt.Sprintf("key %q (constant %s, api/v1alpha1/%s) is missing from %s: add a row for it", c.Value, name, c.Pos, base))
		}
	}
	sort.Strings(missing)
	return append(problems, missing...), nil
}

func docsArticle(kind string) string {
	if strings.HasPrefix(kind, "a") {
		return "n " + kind
	}
	return " " + kind
}
