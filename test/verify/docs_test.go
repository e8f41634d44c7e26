package verify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The reference pages of the book are kept true to api/v1alpha1 by these
// tests: the API reference is regenerated and compared, and the condition,
// event and key pages are compared name by name with the constants.

const docsReferenceDir = "docs/book/reference"

func docsRoot(t *testing.T) string {
	t.Helper()
	r, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func docsReport(t *testing.T, problems []string, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDocsAPIReferenceIsCurrent regenerates docs/book/reference/api.md from
// api/v1alpha1 and compares it with the committed page.
func TestDocsAPIReferenceIsCurrent(t *testing.T) {
	r := docsRoot(t)
	cmd := exec.Command("go", "run", "./hack/docsgen", "-out", "-")
	cmd.Dir = r
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	fresh, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./hack/docsgen: %v\n%s", err, stderr.String())
	}
	committed, err := os.ReadFile(filepath.Join(r, docsReferenceDir, "api.md"))
	if err != nil {
		t.Fatalf("%v: run go run ./hack/docsgen", err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("%s/api.md is stale: run go run ./hack/docsgen (first difference: %s)", docsReferenceDir, docsFirstDifference(committed, fresh))
	}
}

func docsFirstDifference(have, want []byte) string {
	a, b := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ": committed " + docsQuote(x) + ", generated " + docsQuote(y)
		}
	}
	return "none"
}

func docsQuote(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return "\"" + s + "\""
}

// TestDocsConditionsMatchAPI: every *Condition and *Reason constant has a
// row in conditions.md, every name in its Condition and Reason columns is a
// constant, and every *Reason constant is set on a condition by the code
// (docs_emitted_test.go), but those of notYetSet.
func TestDocsConditionsMatchAPI(t *testing.T) {
	r := docsRoot(t)
	api := filepath.Join(r, "api", "v1alpha1")
	problems, err := docsCheckConditions(api, filepath.Join(r, docsReferenceDir, "conditions.md"))
	docsReport(t, problems, err)
	problems, err = docsCheckSet(api, docsRepoFlow(t), notYetSet)
	docsReport(t, problems, err)
}

// TestDocsEventsMatchAPI: every *Event constant has a row in events.md,
// every name in its Reason columns is a constant, and every *Event constant
// is the reason of an event the code emits (docs_emitted_test.go), but
// those of notYetEmitted.
func TestDocsEventsMatchAPI(t *testing.T) {
	r := docsRoot(t)
	api := filepath.Join(r, "api", "v1alpha1")
	problems, err := docsCheckEvents(api, filepath.Join(r, docsReferenceDir, "events.md"))
	docsReport(t, problems, err)
	problems, err = docsCheckEmitted(api, docsRepoFlow(t), notYetEmitted)
	docsReport(t, problems, err)
}

// TestDocsKeysMatchAPI: every *Annotation, *Label and *Finalizer constant has
// a row in annotations-labels-finalizers.md with its key and kind, and every
// row names a constant or is a key CAPTF does not define.
func TestDocsKeysMatchAPI(t *testing.T) {
	r := docsRoot(t)
	problems, err := docsCheckKeys(filepath.Join(r, "api", "v1alpha1"), filepath.Join(r, docsReferenceDir, "annotations-labels-finalizers.md"))
	docsReport(t, problems, err)
}

// TestDocsConstantNamesMatchTheirValues: a condition, reason or event
// constant is named after its value (<Value>Condition, <Value>Reason,
// <Value>Event), which is how a reader finds the constant for a row.
func TestDocsConstantNamesMatchTheirValues(t *testing.T) {
	consts, err := docsAPIConsts(filepath.Join(docsRoot(t), "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"Condition", "Reason", "Event"} {
		for _, c := range docsWithSuffix(consts, suffix) {
			if c.Name != c.Value+suffix {
				t.Errorf("constant %s (api/v1alpha1/%s) has the value %q: name it %s%s, or fix the value", c.Name, c.Pos, c.Value, c.Value, suffix)
			}
		}
	}
}

// TestDocsLinksResolve: every relative link of the book's pages in this
// repository points at a file that exists, every anchor at a heading that
// exists, and the index lists every reference page.
func TestDocsLinksResolve(t *testing.T) {
	r := docsRoot(t)
	book := filepath.Join(r, "docs", "book")
	var pages []string
	err := filepath.WalkDir(book, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages under docs/book")
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(r, p)
		for _, l := range docsLinks(string(b)) {
			if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(l, "#")
			file := p
			if target != "" {
				file = filepath.Join(filepath.Dir(p), filepath.FromSlash(target))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s, which does not exist", rel, l)
					continue
				}
			}
			if anchor == "" || strings.HasSuffix(file, string(filepath.Separator)) {
				continue
			}
			if fi, err := os.Stat(file); err != nil || fi.IsDir() {
				continue
			}
			tb, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !docsAnchors(string(tb))[anchor] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", rel, l, filepath.Base(file), anchor)
			}
		}
	}
	index, err := os.ReadFile(filepath.Join(book, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := filepath.Glob(filepath.Join(r, docsReferenceDir, "*.md"))
	for _, ref := range refs {
		if !strings.Contains(string(index), "(reference/"+filepath.Base(ref)+")") {
			t.Errorf("docs/book/README.md does not list %s/%s", docsReferenceDir, filepath.Base(ref))
		}
	}
}

// TestDocsChecksCatchMismatches proves the checks above fail, in both
// directions, on copies of the API and the pages: a constant without a row,
// a row without a constant, a constant named as "defined elsewhere", and a
// row whose kind contradicts its constant.
func TestDocsChecksCatchMismatches(t *testing.T) {
	r := docsRoot(t)
	api := t.TempDir()
	srcs, _ := filepath.Glob(filepath.Join(r, "api", "v1alpha1", "*.go"))
	for _, s := range srcs {
		if strings.HasSuffix(s, "_test.go") {
			continue
		}
		docsCopyFile(t, s, filepath.Join(api, filepath.Base(s)))
	}
	docsWriteFile(t, filepath.Join(api, "zz_extra.go"), "package v1alpha1\n\nconst (\n"+
		"\tFrobnicatedCondition = \"Frobnicated\"\n"+
		"\tFrobnicatedReason = \"Frobnicated\"\n"+
		"\tFrobnicatedEvent = \"Frobnicated\"\n"+
		"\tFrobnicateAnnotation = \"captf.io/frobnicate\"\n"+
		"\tAliasedReason = NoDriftReason\n"+
		")\n")

	pages := t.TempDir()
	edit := func(name string, edits ...[2]string) string {
		b, err := os.ReadFile(filepath.Join(r, docsReferenceDir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, e := range edits {
			if !strings.Contains(s, e[0]) {
				t.Fatalf("%s lacks %q, which this test edits", name, e[0])
			}
			s = strings.Replace(s, e[0], e[1], 1)
		}
		p := filepath.Join(pages, name)
		docsWriteFile(t, p, s)
		return p
	}

	conditions := edit("conditions.md",
		[2]string{"| False | `NoDrift` | TC, TM, TMP |", "| False | `NoDrifting` | TC, TM, TMP |"},
		[2]string{"| `CapacityResolved` | TMT | positive |", "| `CapacityResolution` | TMT | positive |"},
	)
	problems, err := docsCheckConditions(api, conditions)
	if err != nil {
		t.Fatal(err)
	}
	docsExpectProblems(t, "conditions", problems,
		`condition type "Frobnicated" (constant FrobnicatedCondition`,
		`reason "Frobnicated" (constant FrobnicatedReason`,
		`reason "NoDrift" (constant AliasedReason`,
		`reason "NoDrift" (constant NoDriftReason`,
		`condition type "CapacityResolved" (constant CapacityResolvedCondition`,
		`names reason "NoDrifting" at conditions.md line`,
		`names condition type "CapacityResolution" at conditions.md line`,
	)

	events := edit("events.md",
		[2]string{"| `Resumed` | Normal |", "| `Resuming` | Normal |"},
	)
	problems, err = docsCheckEvents(api, events)
	if err != nil {
		t.Fatal(err)
	}
	docsExpectProblems(t, "events", problems,
		`event reason "Frobnicated" (constant FrobnicatedEvent`,
		`event reason "Resumed" (constant ResumedEvent`,
		`names event reason "Resuming" at events.md line`,
	)

	keys := edit("annotations-labels-finalizers.md",
		[2]string{"| `captf.io/bookkept` | annotation | run Job | CAPTF | The finished Job's result has been recorded in the object's status. | `BookkeptAnnotation` |\n", ""},
		[2]string{"| `LeaseLabel` |", "| — |"},
		[2]string{"| `captf.io/mirrored` | label |", "| `captf.io/mirrored` | annotation |"},
		[2]string{"| `captf.io/state-backup-set` | annotation | backup Secrets | CAPTF | Groups the chunk Secrets of one backup. | `StateBackupSetAnnotation` |",
			"| `captf.io/state-backup-sets` | annotation | backup Secrets | CAPTF | Groups the chunk Secrets of one backup. | `StateBackupSetAnnotation` |"},
		[2]string{"| `captf.io/restore-serial` | annotation | restore Job | CAPTF | The backup serial the restore pushes. | `RestoreSerialAnnotation` |",
			"| `captf.io/restore-serial` | annotation | restore Job | CAPTF | The backup serial the restore pushes. | `RestoreSerialNumberAnnotation` |"},
	)
	problems, err = docsCheckKeys(api, keys)
	if err != nil {
		t.Fatal(err)
	}
	docsExpectProblems(t, "keys", problems,
		`key "captf.io/frobnicate" (constant FrobnicateAnnotation`,
		`key "captf.io/bookkept" (constant BookkeptAnnotation`,
		`key "captf.io/lease" has the constant LeaseLabel`,
		`key "captf.io/lease" (constant LeaseLabel`,
		`MirroredLabel is a label constant, but the Kind column says "annotation"`,
		`constant StateBackupSetAnnotation is "captf.io/state-backup-set"`,
		`the Constant column names RestoreSerialNumberAnnotation`,
		`key "captf.io/restore-serial" (constant RestoreSerialAnnotation`,
	)
}

func docsExpectProblems(t *testing.T, what string, problems []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, p := range problems {
			if strings.Contains(p, w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no problem reported containing %q; got:\n%s", what, w, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%s: want %d problems, got %d:\n%s", what, len(want), len(problems), strings.Join(problems, "\n"))
	}
}

func TestDocsSplitRowAndAnchors(t *testing.T) {
	for _, tt := range []struct {
		row  string
		want []string
	}{
		{"| a | `b \\|\\| c` | d |", []string{"a", "`b || c`", "d"}},
		{"|a|b|", []string{"a", "b"}},
		{"| only |", []string{"only"}},
	} {
		if got := docsSplitRow(tt.row); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("docsSplitRow(%q) = %q, want %q", tt.row, got, tt.want)
		}
	}
	a := docsAnchors("# API reference\n```\n# not a heading\n```\n### TerraformClusterSpec\n## Keys you set\n")
	for _, want := range []string{"api-reference", "terraformclusterspec", "keys-you-set"} {
		if !a[want] {
			t.Errorf("anchor %q not derived; got %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line inside a code block was read as a heading")
	}
}

func docsCopyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	docsWriteFile(t, to, string(b))
}

func docsWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
