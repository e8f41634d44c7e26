package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// docsRBACFiles maps each role the RBAC page documents to the shipped file
// that holds it.
var docsRBACFiles = map[string]string{
	"captf-manager-role":         "config/rbac/role.yaml",
	"captf-leader-election-role": "config/rbac/leader_election_role.yaml",
	"captf-runner":               "config/rbac/runner_role.yaml",
	"captf-autoscaler-reader":    "config/rbac/autoscaler_role.yaml",
}

// docsPermission is one (API group, resource, resource name, verb) grant.
type docsPermission struct{ Group, Resource, Name, Verb string }

func (p docsPermission) String() string {
	s := fmt.Sprintf("%s %s", p.Verb, p.Resource)
	if p.Group != "" {
		s += "." + p.Group
	}
	if p.Name != "" {
		s += " named " + p.Name
	}
	return s
}

// docsExpandRules flattens policy rules into single grants.
func docsExpandRules(rules []rbacv1.PolicyRule) map[docsPermission]bool {
	out := map[docsPermission]bool{}
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					for _, v := range r.Verbs {
						out[docsPermission{g, res, n, v}] = true
					}
				}
			}
		}
	}
	return out
}

// docsShippedRules reads the rules of the (Cluster)Role in a shipped file
// (the first YAML document that has a metadata.name).
func docsShippedRules(path string) (string, map[docsPermission]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			// A Role has a namespace, which ClusterRole also allows; any
			// other error is a real one.
			return "", nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		if role.Name != "" {
			return role.Name, docsExpandRules(role.Rules), nil
		}
	}
	return "", nil, fmt.Errorf("%s holds no role", path)
}

var docsSectionRole = regexp.MustCompile("`([a-z0-9-]+)`")

// docsPageRules reads, per role, the grants of the page's tables with API
// group, Resources, Resource names and Verbs columns; the role is the name
// in backquotes in the table's section heading.
func docsPageRules(page string) (map[string]map[docsPermission]bool, []string, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Base(page)
	out := map[string]map[docsPermission]bool{}
	var problems []string
	for _, t := range docsParseTables(string(b)) {
		gc, rc, nc, vc := t.column("API group"), t.column("Resources"), t.column("Resource names"), t.column("Verbs")
		if gc < 0 || rc < 0 || nc < 0 || vc < 0 {
			continue
		}
		m := docsSectionRole.FindStringSubmatch(t.Section)
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s: the rules table under %q has no role name in backquotes in its heading", base, t.Section))
			continue
		}
		role := m[1]
		if out[role] == nil {
			out[role] = map[docsPermission]bool{}
		}
		for _, r := range t.Rows {
			where := fmt.Sprintf("%s line %d (section %q)", base, r.Line, t.Section)
			if len(r.Cells) <= max(gc, rc, nc, vc) {
				problems = append(problems, where+": row has too few cells")
				continue
			}
			groups := docsCodeNames(r.Cells[gc])
			for i, g := range groups {
				if g == `""` {
					groups[i] = ""
				}
			}
			names := docsCodeNames(r.Cells[nc])
			if len(names) == 0 {
				names = []string{""}
			}
			resources, verbs := docsCodeNames(r.Cells[rc]), docsCodeNames(r.Cells[vc])
			if len(groups) == 0 || len(resources) == 0 || len(verbs) == 0 {
				problems = append(problems, where+": API group, Resources and Verbs must each name something in backquotes")
				continue
			}
			for _, g := range groups {
				for _, res := range resources {
					for _, n := range names {
						for _, v := range verbs {
							out[role][docsPermission{g, res, n, v}] = true
						}
					}
				}
			}
		}
	}
	return out, problems, nil
}

// docsCheckRBAC compares, role by role, the page's grants with the shipped
// files, both ways.
func docsCheckRBAC(root, page string, files map[string]string) ([]string, error) {
	documented, problems, err := docsPageRules(page)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(page)
	var roles []string
	for r := range files {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, role := range roles {
		name, shipped, err := docsShippedRules(filepath.Join(root, files[role]))
		if err != nil {
			return nil, err
		}
		if name != role {
			problems = append(problems, fmt.Sprintf("%s holds the role %q, not %q", files[role], name, role))
		}
		doc, ok := documented[role]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no rules table for %s (%s)", base, role, files[role]))
			continue
		}
		var missing, extra []string
		for p := range shipped {
			if !doc[p] {
				missing = append(missing, p.String())
			}
		}
		for p := range doc {
			if !shipped[p] {
				extra = append(extra, p.String())
			}
		}
		sort.Strings(missing)
		sort.Strings(extra)
		for _, p := range missing {
			problems = append(problems, fmt.Sprintf("%s grants %q in %s, but %s does not list it", role, p, files[role], base))
		}
		for _, p := range extra {
			problems = append(problems, fmt.Sprintf("%s lists %q for %s, but %s does not grant it", base, p, role, files[role]))
		}
	}
	for role := range documented {
		if _, ok := files[role]; !ok {
			problems = append(problems, fmt.Sprintf("%s has a rules table for %s, which no shipped file holds", base, role))
		}
	}
	return problems, nil
}

// TestDocsRBACMatchesManifests: the rules tables of rbac.md grant exactly
// what config/rbac/role.yaml, leader_election_role.yaml, runner_role.yaml
// and autoscaler_role.yaml grant.
func TestDocsRBACMatchesManifests(t *testing.T) {
	r := docsRoot(t)
	problems, err := docsCheckRBAC(r, filepath.Join(r, docsReferenceDir, "rbac.md"), docsRBACFiles)
	docsReport(t, problems, err)
}

// TestDocsRBACCheckCatchesMismatches proves the check fails on a grant the
// page misses and on one the page invents.
func TestDocsRBACCheckCatchesMismatches(t *testing.T) {
	root := t.TempDir()
	docsWriteFile(t, filepath.Join(root, "role.yaml"), "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\nrules:\n"+
		"- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get, list]\n")
	page := filepath.Join(root, "rbac.md")
	docsWriteFile(t, page, "# R\n\n## Role `r`\n\n| API group | Resources | Resource names | Verbs |\n| --- | --- | --- | --- |\n"+
		"| `\"\"` | `secrets` | – | `get`, `delete` |\n")
	problems, err := docsCheckRBAC(root, page, map[string]string{"r": "role.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`r grants "list secrets" in role.yaml, but rbac.md does not list it`,
		`rbac.md lists "delete secrets" for r, but role.yaml does not grant it`,
	} {
		if !slices.Contains(problems, want) {
			t.Errorf("no problem %q; got:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 2 {
		t.Errorf("got %d problems, want 2:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}
