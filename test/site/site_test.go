package site

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// The pages the site test photographs, and the files it writes under the
// checkout's _out/site-screenshots.
var screenshots = map[string]string{
	"/":                             "home.png",
	"/getting-started/quick-start/": "quick-start.png",
	"/reference/conditions/":        "reference-conditions.png",
}

// The home page with the results of a search is saved there too, as search.png.

// TestSiteInBrowser builds the book's site and opens every page of it in
// headless Chromium: every internal link must reach a built page or file,
// every anchor an element of its page, every image must load, and no page
// may log a console error, throw, get an error status for a sub-resource or
// send a request out of the site. The search must find a runbook by a
// command it names. Screenshots of the home page, the Quick Start and a
// reference page are saved under _out/site-screenshots.
func TestSiteInBrowser(t *testing.T) {
	start := time.Now()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := buildSite(t, filepath.Join(root, "docs", "book"))
	shotDir := filepath.Join(root, "_out", "site-screenshots")
	shots := map[string]string{}
	for page, file := range screenshots {
		shots[page] = filepath.Join(shotDir, file)
		os.Remove(shots[page])
	}
	os.Remove(filepath.Join(shotDir, "search.png"))
	rep := checkSite(t, out, checkOptions{
		Screenshots:      shots,
		Searches:         map[string]string{"force-unlock": "/runbooks/stale-lock/"},
		SearchScreenshot: filepath.Join(shotDir, "search.png"),
		Tabs:             2,
	})
	for _, p := range rep.Problems {
		t.Error(p)
	}
	if rep.Pages < 30 {
		t.Errorf("only %d pages were opened", rep.Pages)
	}
	var saved []string
	for page, file := range shots {
		if _, err := os.Stat(file); err != nil {
			t.Errorf("no screenshot of %s: %v", page, err)
		} else {
			saved = append(saved, filepath.Base(file))
		}
	}
	t.Logf("%d pages, %d links to the site (%d with an anchor; %d distinct targets), %d links out of it (not followed), %d images checked in %s",
		rep.Pages, rep.Links, rep.Anchors, rep.Targets, rep.External, rep.Images, time.Since(start).Round(time.Millisecond))
	if len(rep.Orphans) > 0 {
		t.Logf("pages no link from the home page reaches: %s", strings.Join(rep.Orphans, " "))
	}
	t.Logf("screenshots (%s) in %s", strings.Join(saved, ", "), shotDir)
}

// TestSiteCheckCatchesBreakage: the check of TestSiteInBrowser reports each
// kind of breakage of testdata/broken (a link to a page that does not exist,
// an anchor that is not on its page, an image that is not there, a script
// that throws, a console error), and nothing on the page that is fine.
func TestSiteCheckCatchesBreakage(t *testing.T) {
	out := buildSite(t, filepath.Join("testdata", "broken"))
	rep := checkSite(t, out, checkOptions{Tabs: 1})
	want := []string{
		"/broken/: broken link: /missing/ (no such page or file)",
		`/broken/: broken anchor: /good/#nowhere (no element with id "nowhere" on /good/)`,
		"/broken/: image does not load: /nothere.png",
		"/broken/: HTTP 404 for /nothere.png",
		"/broken/: uncaught exception: ReferenceError: notDefinedAnywhere is not defined",
		"/broken/: console error: testdata: a console error",
	}
	for _, w := range want {
		found := false
		for _, p := range rep.Problems {
			if strings.HasPrefix(p, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("not reported: %s", w)
		}
	}
	for _, p := range rep.Problems {
		if !strings.HasPrefix(p, "/broken/: ") {
			t.Errorf("reported on a page that is fine: %s", p)
		}
	}
	if t.Failed() {
		t.Logf("reported:\n%s", strings.Join(rep.Problems, "\n"))
	}
	if rep.Pages < 3 || rep.Anchors < 2 {
		t.Errorf("opened %d pages and checked %d anchors; the testdata has 3 pages and 2 anchors at least", rep.Pages, rep.Anchors)
	}
}
