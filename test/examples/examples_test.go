package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// bookPages returns every Markdown page under docs/book, relative to the
// repository root: the walk picks up any page added to the book.
func bookPages(t *testing.T) (string, []string) {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	err = filepath.WalkDir(filepath.Join(root, "docs", "book"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages under docs/book")
	}
	return root, pages
}

// TestBookExamples: every code block of every page of the book follows the
// example conventions. Unmarked yaml blocks are complete objects the API
// server (CRD schemas, CEL, CAPTF's webhooks) accepts in a strict
// server-side dry-run apply; fragments are accepted once placed in a
// minimal object of their kind; not-an-object blocks are YAML; hcl blocks
// parse as HCL, json blocks as JSON. In -short mode nothing is sent to a
// server.
func TestBookExamples(t *testing.T) {
	root, pages := bookPages(t)
	c := newChecker(srv)
	ctx := context.Background()
	for _, page := range pages {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range c.checkPage(ctx, page, src) {
			t.Error(p.String(page))
		}
	}
	mode := "applied to the API server"
	if srv == nil {
		mode = "parsed only (-short): no object was sent to an API server"
	}
	t.Logf("%d pages, objects %s; blocks by type:%s", len(pages), mode, c.summary())
}

// TestGoodExamplesPass: testdata/good.md uses every convention (objects
// several to a block, fragments at spec, at a list, at metadata, of a
// Kubernetes and a Cluster API kind, blocks inside list items, hcl, json,
// sh and text) and nothing is reported.
func TestGoodExamplesPass(t *testing.T) {
	if srv == nil {
		t.Skip("no API server in -short mode")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "good.md"))
	if err != nil {
		t.Fatal(err)
	}
	c := newChecker(srv)
	for _, p := range c.checkPage(context.Background(), "good.md", src) {
		t.Error(p.String("good.md"))
	}
	want := map[string]int{
		countObjects: 3, countDocuments: 5, countFragments: 5, countNotAnObject: 1,
		countHCL: 1, countJSON: 1, "unchecked: sh": 1, "unchecked: text": 1,
	}
	for k, n := range want {
		if c.counts[k] != n {
			t.Errorf("%s: counted %d, want %d; counts:%s", k, c.counts[k], n, c.summary())
		}
	}
}

// TestBadExamplesAreReported: each broken example of testdata/bad.md is
// reported at its line, naming the object and carrying the server's
// message, and nothing else is.
func TestBadExamplesAreReported(t *testing.T) {
	if srv == nil {
		t.Skip("no API server in -short mode")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "bad.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line int
		what []string
	}{
		{9, []string{"TerraformCluster team-a/unknown-field", ".spec.sourceImage: field not declared in schema"}},
		{25, []string{"TerraformCluster team-a/wrong-enum", `spec.drift.action: Unsupported value: "Fix"`}},
		{43, []string{"TerraformCluster team-a/example", "the fragment at spec.job", ".spec.job: field not declared in schema"}},
		{49, []string{"spec.source.image is a string", "nothing can sit under it"}},
		{58, []string{"TerraformMachinePool team-a/example", ".spec.jobs.nodeSelectr: field not declared in schema"}},
		{64, []string{"TerraformCluster team-a/example", "lockTimeoutSeconds must be less than activeDeadlineSeconds"}},
		{70, []string{"the test's API server serves no kind TerraformWidget"}},
		{78, []string{"TerraformMachine team-a/webhook-refused", "admission webhook", "spec.variables[machine_name]"}},
		{93, []string{"must hold complete Kubernetes objects", "no apiVersion, kind, metadata.name", "<!-- example: not-an-object -->"}},
		{99, []string{"this document is a list"}},
		{107, []string{"Role <ns>/captf-operator", `cannot create its namespace "<ns>"`}},
		{114, []string{"PrometheusRule team-a/captf-alerts", "does not serve monitoring.coreos.com/v1 PrometheusRule"}},
		{121, []string{"ClusterRole team-a/reader", "cluster-scoped"}},
		{133, []string{"not YAML", `"providers" already set`}},
		{140, []string{"marks nothing"}},
		{143, []string{"no apiVersion, kind, metadata.name"}},
		{148, []string{"the only example marker is <!-- example: not-an-object -->"}},
		{150, []string{"no apiVersion, kind, metadata.name"}},
		{153, []string{"precedes a ```sh block"}},
		{161, []string{"not HCL", "Unclosed configuration block"}},
		{167, []string{"not JSON", "invalid character '}'"}},
	}
	c := newChecker(srv)
	got := c.checkPage(context.Background(), "bad.md", src)
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, p := range got {
			if used[i] || p.Line != w.line {
				continue
			}
			s := p.String("bad.md")
			all := strings.HasPrefix(s, "bad.md:")
			for _, sub := range w.what {
				all = all && strings.Contains(s, sub)
			}
			if all {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("bad.md:%d: no problem reported containing %q", w.line, w.what)
		}
	}
	for i, p := range got {
		if !used[i] {
			t.Errorf("unexpected problem: %s", p.String("bad.md"))
		}
	}
	if t.Failed() {
		for _, p := range got {
			t.Log(p.String("bad.md"))
		}
	}
}

// TestFragmentBasesAreValid: the minimal object a fragment is placed in
// is accepted on its own for every kind that has one, so a refused
// fragment is refused for what the page wrote.
func TestFragmentBasesAreValid(t *testing.T) {
	if srv == nil {
		t.Skip("no API server in -short mode")
	}
	for kind := range bases {
		obj, err := srv.base(kind)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if err := srv.apply(context.Background(), obj); err != nil {
			t.Errorf("the minimal %s is refused: %v", kind, err)
		}
	}
}

// TestMarkersAttach: a marker attaches to the fence on the next line, in a
// list item too; a blank line, another block or another language in
// between leaves the block unmarked; line numbers are the page's.
func TestMarkersAttach(t *testing.T) {
	src := strings.Join([]string{
		"# T", // 1
		"",    // 2
		"<!-- fragment: TerraformCluster spec.jobs -->", // 3
		"```yaml",                           // 4
		"a: 1",                              // 5
		"```",                               // 6
		"",                                  // 7
		"- item",                            // 8
		"",                                  // 9
		"  <!-- example: not-an-object -->", // 10
		"  ```yaml",                         // 11
		"  b: 2",                            // 12
		"  ```",                             // 13
		"",                                  // 14
		"<!-- example: not-an-object -->",   // 15
		"",                                  // 16
		"```yaml",                           // 17
		"c: 3",                              // 18
		"```",                               // 19
		"",
	}, "\n")
	p := parsePage([]byte(src))
	if len(p.Blocks) != 3 {
		t.Fatalf("got %d blocks, want 3", len(p.Blocks))
	}
	check := func(i, line, content int, typ, text string) {
		t.Helper()
		b := p.Blocks[i]
		if b.Line != line || b.ContentLine != content || string(b.Content) != text {
			t.Errorf("block %d: line %d, content line %d, content %q; want %d, %d, %q", i, b.Line, b.ContentLine, b.Content, line, content, text)
		}
		switch {
		case typ == "" && b.Marker != nil:
			t.Errorf("block %d is marked %q, want unmarked", i, b.Marker.Raw)
		case typ != "" && (b.Marker == nil || b.Marker.Type != typ):
			t.Errorf("block %d: marker %+v, want a %s marker", i, b.Marker, typ)
		}
	}
	check(0, 4, 5, "fragment", "a: 1\n")
	if m := p.Blocks[0].Marker; m != nil && (m.Kind != "TerraformCluster" || m.Path != "spec.jobs" || m.Line != 3) {
		t.Errorf("fragment marker %+v, want TerraformCluster spec.jobs at line 3", m)
	}
	check(1, 11, 12, "example", "b: 2\n")
	check(2, 17, 18, "", "c: 3\n")
	if len(p.Problems) != 1 || p.Problems[0].Line != 15 || !strings.Contains(p.Problems[0].Msg, "marks nothing") {
		t.Errorf("problems %+v, want one at line 15 saying the marker marks nothing", p.Problems)
	}
}
