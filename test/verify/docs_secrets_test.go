package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	infrav1 "github.com/captf-io/cluster-api-provider-terraform/api/v1alpha1"
	"github.com/captf-io/cluster-api-provider-terraform/internal/identity"
	"github.com/captf-io/cluster-api-provider-terraform/internal/jobs"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lease"
	"github.com/captf-io/cluster-api-provider-terraform/internal/lifecycle"
	"github.com/captf-io/cluster-api-provider-terraform/internal/owner"
	"github.com/captf-io/cluster-api-provider-terraform/internal/runner/result"
	"github.com/captf-io/cluster-api-provider-terraform/internal/setup"
	"github.com/captf-io/cluster-api-provider-terraform/internal/state"
)

// docsKeyPattern matches a code span naming a CAPTF or clusterctl key,
// possibly as a selector (key=value).
var docsKeyPattern = regexp.MustCompile(`^((?:captf\.io|captf\.infrastructure\.cluster\.x-k8s\.io|clusterctl\.cluster\.x-k8s\.io)/[a-z0-9.-]+)(=.*)?$`)

// docsCheckKeysExist reports every CAPTF or clusterctl key a page names in a
// code span (prose, tables and code blocks alike) that is not the value of
// an *Annotation or *Label constant of api/v1alpha1 nor a key of the
// captf_tags input (internal/inputs' Tag* constants).
func docsCheckKeysExist(apiDir, page string) ([]string, error) {
	consts, err := docsAPIConsts(apiDir)
	if err != nil {
		return nil, err
	}
	known, err := docsTagKeys()
	if err != nil {
		return nil, err
	}
	for _, c := range docsWithSuffix(consts, "Annotation", "Label") {
		known[c.Value] = true
	}
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	var problems []string
	seen := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		for _, span := range docsKeySpans(line) {
			m := docsKeyPattern.FindStringSubmatch(span)
			if m == nil || seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			// kubectl annotate <key>- removes the key.
			if k, removal := strings.CutSuffix(m[1], "-"); removal && m[2] == "" && known[k] {
				continue
			}
			if !known[m[1]] {
				problems = append(problems, fmt.Sprintf("%s line %d names the key %q, but api/v1alpha1 has no annotation or label constant with that value, nor internal/inputs such a captf_tags key", filepath.Base(page), i+1, m[1]))
			}
		}
	}
	return problems, nil
}

var docsWordPattern = regexp.MustCompile(`[^\s"'(),;]+`)

// docsKeySpans returns the code spans of a line, and on a line without
// backquotes (inside a code block) its words.
func docsKeySpans(line string) []string {
	if strings.Contains(line, "`") {
		var out []string
		for _, s := range docsCodeNames(line) {
			out = append(out, strings.Fields(s)...)
		}
		return out
	}
	return docsWordPattern.FindAllString(line, -1)
}

// docsNamePatterns are the name patterns secrets.md must state, each with
// the name the code builds for sample inputs. A pattern's placeholders are
// filled from docsSampleValues and must give that exact name.
func docsNamePatterns(t *testing.T) (map[string]string, map[string]string) {
	t.Helper()
	const ns, kind, name, ident, cluster = "team-a", "TerraformCluster", "prod", "aws-prod", "prod"
	suffix, err := state.Suffix(ns, kind, name)
	if err != nil {
		t.Fatal(err)
	}
	job := "captf-c-prod-apply-a1-136ce9"
	values := map[string]string{
		"<identity>":  ident,
		"<kindshort>": "c",
		"<name>":      name,
		"<job>":       job,
		"<suffix>":    suffix,
		"<serial>":    "7",
		"<N>":         "2",
		"<hash>":      lease.ClusterHash(ns, cluster),
	}
	patterns := map[string]string{
		"captf-creds-<identity>":                        identity.MirrorName(ident),
		"captf-inputs-<kindshort>-<name>":               lifecycle.DurableName(infrav1.KindTerraformCluster, name),
		"captf-run-<job>":                               jobs.RunSecretName(job),
		"captf-plan-<job>":                              result.PlanSecretName(job),
		"tfstate-default-<suffix>":                      state.SecretName(suffix),
		"tfstate-default-<suffix>-part-<N>":             state.ChunkName(suffix, 2),
		"captf-state-backup-<suffix>-<serial>":          state.BackupName(suffix, 7),
		"captf-state-backup-<suffix>-<serial>-part-<N>": state.BackupChunkName(suffix, 7, 2),
		"captf-run-<suffix>":                            lease.RunName(suffix),
		"captf-cluster-<hash>":                          lease.ClusterName(ns, cluster),
		"lock-tfstate-default-<suffix>":                 state.LockLeaseName(suffix),
		setup.LeaderElectionID:                          setup.LeaderElectionID,
	}
	return patterns, values
}

var docsPlaceholder = regexp.MustCompile(`<[a-z]+>|<N>`)

// TestDocsSecretsMatchCode: secrets.md states every Secret and Lease name
// pattern the code builds, and filling a pattern's placeholders with sample
// values gives exactly the name the code's function returns; the suffix and
// cluster-hash derivations it describes are the code's; every key it names
// exists in api/v1alpha1.
func TestDocsSecretsMatchCode(t *testing.T) {
	r := docsRoot(t)
	page := filepath.Join(r, docsReferenceDir, "secrets.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	var spans []string
	for _, tb := range docsParseTables(text) {
		if c := tb.column("Name"); c >= 0 {
			for _, row := range tb.Rows {
				if c < len(row.Cells) {
					spans = append(spans, docsCodeNames(row.Cells[c])...)
				}
			}
		}
	}
	inNameColumn := map[string]bool{}
	for _, s := range spans {
		inNameColumn[s] = true
	}
	patterns, values := docsNamePatterns(t)
	var keys []string
	for p := range patterns {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if !inNameColumn[p] {
			t.Errorf("secrets.md has no Name cell stating the pattern %q (the code builds %q for the samples)", p, patterns[p])
		}
		filled := docsPlaceholder.ReplaceAllStringFunc(p, func(ph string) string {
			v, ok := values[ph]
			if !ok {
				t.Errorf("pattern %q uses the placeholder %s, which has no sample value", p, ph)
			}
			return v
		})
		if filled != patterns[p] {
			t.Errorf("pattern %q gives %q for the samples, but the code builds %q", p, filled, patterns[p])
		}
	}
	// Every pattern in a Name column is one the code builds (or a name
	// CAPTF only reads, which has no placeholder of CAPTF's).
	for _, s := range spans {
		if docsPlaceholder.MatchString(s) {
			if _, ok := patterns[s]; !ok {
				t.Errorf("secrets.md states the name pattern %q, which this test does not know the code's function for: add it to docsNamePatterns", s)
			}
		}
	}

	// The derivations the page describes.
	sum := sha256.Sum256([]byte("team-a/TerraformCluster/prod"))
	if want := hex.EncodeToString(sum[:])[:16] + "-c"; values["<suffix>"] != want {
		t.Errorf("state.Suffix gives %q, but the page's rule (16 hex of sha256(<namespace>/<kind>/<name>) + -<kindshort>) gives %q", values["<suffix>"], want)
	}
	if !strings.Contains(text, "`"+values["<suffix>"]+"`") {
		t.Errorf("secrets.md does not show the example suffix %s of team-a/TerraformCluster/prod", values["<suffix>"])
	}
	sum = sha256.Sum256([]byte("team-a/prod"))
	if want := hex.EncodeToString(sum[:])[:16]; values["<hash>"] != want {
		t.Errorf("lease.ClusterHash gives %q, but the page's rule (16 hex of sha256(<namespace>/<cluster name>)) gives %q", values["<hash>"], want)
	}
	long := strings.Repeat("n", 64)
	sum = sha256.Sum256([]byte(long))
	if got, want := owner.LabelValue(long), hex.EncodeToString(sum[:])[:16]; got != want {
		t.Errorf("a 64-character label value becomes %q, but the page's rule (16 hex of its sha256) gives %q", got, want)
	}

	problems, err := docsCheckKeysExist(filepath.Join(r, "api", "v1alpha1"), page)
	docsReport(t, problems, err)
}

// TestDocsKeyCheckCatchesUnknownKeys proves the key check reports a key no
// constant holds, in a code span and in a code block.
func TestDocsKeyCheckCatchesUnknownKeys(t *testing.T) {
	r := docsRoot(t)
	page := filepath.Join(t.TempDir(), "p.md")
	docsWriteFile(t, page, "Uses `captf.io/managed=true` and `captf.io/frobnicate`.\n\n```\nkubectl get secret -l captf.io/not-a-key=true\n```\n")
	problems, err := docsCheckKeysExist(filepath.Join(r, "api", "v1alpha1"), page)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "captf.io/frobnicate") || !strings.Contains(problems[1], "captf.io/not-a-key") {
		t.Errorf("want problems for captf.io/frobnicate and captf.io/not-a-key, got:\n%s", strings.Join(problems, "\n"))
	}
}
