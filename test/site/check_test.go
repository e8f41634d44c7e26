package site

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// buildSite builds the Hugo project docs/site of the checkout with book as
// its content into a temporary folder, and returns that folder. For the
// checkout's own docs/book it builds docs/site in place, as make docs does;
// for another book (testdata) it builds a copy of docs/site placed beside a
// copy of that book, since the site mounts ../book.
func buildSite(t *testing.T, book string) string {
	t.Helper()
	root, err := tools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	hugo, err := tools.Path("hugo")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	source := filepath.Join(root, "docs", "site")
	if abs, _ := filepath.Abs(book); abs != filepath.Join(root, "docs", "book") {
		source = filepath.Join(work, "site")
		copyTree(t, filepath.Join(root, "docs", "site"), source)
		copyTree(t, book, filepath.Join(work, "book"))
	}
	out := filepath.Join(work, "public")
	cmd := exec.Command(hugo, "--source", source, "--destination", out, "--cacheDir", filepath.Join(work, "cache"), "--printPathWarnings")
	cmd.Env = append(os.Environ(), "HUGO_RESOURCEDIR="+filepath.Join(work, "resources"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("hugo: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	// Hugo 0.111 prints its warnings (a link to a page that is not in the
	// book, say) on standard output, among its statistics.
	warnings := 0
	for _, l := range strings.Split(stdout.String()+stderr.String(), "\n") {
		if strings.HasPrefix(l, "WARN") || strings.HasPrefix(l, "ERROR") {
			warnings++
			if warnings <= 10 {
				t.Logf("hugo: %s", l)
			}
		}
	}
	if warnings > 10 {
		t.Logf("hugo: %d more warnings", warnings-10)
	}
	t.Logf("hugo built %s in %s", book, time.Since(start).Round(time.Millisecond))
	return out
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkOptions says what a check does beside checking every page.
type checkOptions struct {
	// Screenshots maps a page's path (/getting-started/quick-start/) to the
	// PNG file its screenshot is saved to.
	Screenshots map[string]string
	// Searches maps a query, typed into the home page's search box, to the
	// path of a page its results must list.
	Searches map[string]string
	// SearchScreenshot is the PNG file a screenshot of the home page with the
	// last search's results is saved to, if not "".
	SearchScreenshot string
	// Tabs is the number of tabs that open pages at once.
	Tabs int
}

// report is what a check of a built site found.
type report struct {
	Problems []string
	Pages    int // pages opened
	Links    int // links to pages and files of the site checked
	Anchors  int // links with an anchor checked against their page
	Targets  int // distinct pages, files and anchors linked to
	External int // links out of the site (not followed)
	Images   int // images checked
	Orphans  []string
}

// pageInfo is what a page holds, as the browser sees it once loaded.
type pageInfo struct {
	IDs    []string `json:"ids"`
	Links  []string `json:"links"`
	Images []struct {
		Src string `json:"src"`
		OK  bool   `json:"ok"`
	} `json:"images"`
	Title string `json:"title"`
}

const pageScript = `(() => ({
  ids: [...document.querySelectorAll('[id]')].map(e => e.id)
    .concat([...document.querySelectorAll('a[name]')].map(e => e.name)),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  images: [...document.images].map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
  title: document.title,
}))()`

// checkSite serves the built site in dir on 127.0.0.1 and opens every page
// of it in the package's browser: the home page, every page a page links
// to, and every .html file the build wrote.
func checkSite(t *testing.T, dir string, opts checkOptions) report {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)

	// Every page the build wrote, the home page first.
	pages := []string{"/"}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		u := "/" + filepath.ToSlash(rel)
		if strings.HasSuffix(u, "/index.html") {
			u = strings.TrimSuffix(u, "index.html")
		}
		if u != "/" {
			pages = append(pages, u)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pages[1:])

	var (
		mu       sync.Mutex
		rep      report
		infos    = map[string]*pageInfo{}
		problems = map[string][]string{} // page -> problems met while it was open
	)
	add := func(page, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems[page] = append(problems[page], fmt.Sprintf(format, args...))
	}

	queue := make(chan string, len(pages))
	for _, p := range pages {
		queue <- p
	}
	close(queue)
	tabs := max(opts.Tabs, 1)
	parent := browser(t)
	var wg sync.WaitGroup
	for range tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab, closeTab := chromedp.NewContext(parent)
			defer closeTab()
			var (
				current string
				curMu   sync.Mutex
				reqs    = map[network.RequestID]string{}
			)
			at := func() string { curMu.Lock(); defer curMu.Unlock(); return current }
			err := chromedp.Listen(tab, func(ev any) {
				page := at()
				switch ev := ev.(type) {
				case *runtime.EventExceptionThrown:
					d := ev.ExceptionDetails
					msg := d.Text
					if d.Exception != nil && d.Exception.Description != "" {
						msg = d.Exception.Description
					}
					add(page, "uncaught exception: %s", firstLine(msg))
				case *runtime.EventConsoleAPICalled:
					if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
						var parts []string
						for _, a := range ev.Args {
							if a.Description != "" {
								parts = append(parts, a.Description)
							} else {
								parts = append(parts, strings.Trim(string(a.Value), `"`))
							}
						}
						add(page, "console error: %s", firstLine(strings.Join(parts, " ")))
					}
				case *log.EventEntryAdded:
					// Failed loads are reported from the network events below.
					if ev.Entry.Level == log.EntryLevelError && ev.Entry.Source != log.EntrySourceNetwork {
						add(page, "console error (%s): %s", ev.Entry.Source, firstLine(ev.Entry.Text))
					}
				case *network.EventRequestWillBeSent:
					u := ev.Request.URL
					mu.Lock()
					reqs[ev.RequestID] = u
					mu.Unlock()
					if pu, err := url.Parse(u); err == nil && (pu.Scheme == "http" || pu.Scheme == "https" || pu.Scheme == "ws" || pu.Scheme == "wss") && pu.Host != base.Host {
						add(page, "request out of the site: %s", u)
					}
				case *network.EventResponseReceived:
					if ev.Response.Status >= 400 {
						add(page, "HTTP %d for %s", ev.Response.Status, strings.TrimPrefix(ev.Response.URL, srv.URL))
					}
				case *network.EventLoadingFailed:
					mu.Lock()
					u := reqs[ev.RequestID]
					mu.Unlock()
					if !ev.Canceled {
						add(page, "failed to load %s: %s", strings.TrimPrefix(u, srv.URL), ev.ErrorText)
					}
				}
			})
			if err != nil {
				add("(browser)", "listen: %v", err)
				return
			}
			for p := range queue {
				curMu.Lock()
				current = p
				curMu.Unlock()
				info, err := openPage(tab, srv.URL+p)
				if err != nil {
					add(p, "open: %v", err)
					continue
				}
				for _, img := range info.Images {
					if !img.OK {
						add(p, "image does not load: %s", strings.TrimPrefix(img.Src, srv.URL))
					}
				}
				if file, ok := opts.Screenshots[p]; ok {
					if err := screenshot(tab, file); err != nil {
						add(p, "screenshot: %v", err)
					}
				}
				if q := opts.Searches; p == "/" && len(q) > 0 {
					for query, want := range q {
						searchProblems(tab, query, want, func(f string, a ...any) { add(p, f, a...) })
					}
					if opts.SearchScreenshot != "" {
						if err := screenshot(tab, opts.SearchScreenshot); err != nil {
							add(p, "screenshot: %v", err)
						}
					}
				}
				mu.Lock()
				infos[p] = info
				rep.Pages++
				rep.Images += len(info.Images)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	// Links and anchors, now that every page's ids are known. A broken link
	// of the navigation is on every page: each is reported once, at the
	// first page (in path order) that has it, with the number of others.
	reachable := map[string]bool{"/": true}
	links := map[string][]string{}  // page -> internal page paths it links to
	broken := map[string][]string{} // problem -> pages that have it
	targets := map[string]bool{}
	brokenAt := func(page, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		broken[msg] = append(broken[msg], page)
	}
	for _, page := range pages {
		info := infos[page]
		if info == nil {
			continue
		}
		for _, href := range info.Links {
			u, err := url.Parse(href)
			if err != nil {
				add(page, "link %q does not parse: %v", href, err)
				continue
			}
			if u.Scheme == "mailto" || u.Scheme == "javascript" {
				continue
			}
			if u.Host != base.Host {
				rep.External++
				continue
			}
			rep.Links++
			targets[relative(u)] = true
			target, ok := resolve(dir, u.Path)
			if !ok {
				brokenAt(page, "broken link: %s (no such page or file)", relative(u))
				continue
			}
			if strings.HasSuffix(target, "/") || strings.HasSuffix(target, ".html") {
				links[page] = append(links[page], target)
			}
			if u.Fragment == "" {
				continue
			}
			rep.Anchors++
			ti := infos[target]
			if ti == nil {
				brokenAt(page, "broken anchor: %s (the target was not opened)", relative(u))
			} else if !slices.Contains(ti.IDs, u.Fragment) {
				brokenAt(page, "broken anchor: %s (no element with id %q on %s)", relative(u), u.Fragment, target)
			}
		}
	}
	rep.Targets = len(targets)
	for msg, on := range broken {
		on = slices.Compact(on)
		if len(on) > 1 {
			msg += fmt.Sprintf(", and on %d other pages", len(on)-1)
		}
		add(on[0], "%s", msg)
	}
	for todo := []string{"/"}; len(todo) > 0; {
		p := todo[0]
		todo = todo[1:]
		for _, l := range links[p] {
			if !reachable[l] {
				reachable[l] = true
				todo = append(todo, l)
			}
		}
	}
	for _, p := range pages {
		if !reachable[p] {
			rep.Orphans = append(rep.Orphans, p)
		}
	}

	var keys []string
	for k := range problems {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		seen := map[string]bool{}
		slices.Sort(problems[k])
		for _, pr := range problems[k] {
			if !seen[pr] {
				seen[pr] = true
				rep.Problems = append(rep.Problems, k+": "+pr)
			}
		}
	}
	return rep
}

// openPage navigates the tab to u, waits for its load event, and returns
// what the page holds.
func openPage(tab context.Context, u string) (*pageInfo, error) {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return nil, err
	}
	b, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](pageScript))
	if err != nil {
		return nil, err
	}
	var info pageInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// searchProblems types a query into the search box of the open page and
// reports when the results the page lists (static/js/search.js) miss the
// page want.
func searchProblems(tab context.Context, query, want string, report func(string, ...any)) {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	expr := fmt.Sprintf(`(async () => {
  const input = document.getElementById("search");
  input.focus();
  input.value = %q;
  input.dispatchEvent(new Event("input"));
  for (let i = 0; i < 100; i++) {
    const links = [...document.querySelectorAll("#search-results a")];
    if (links.length) return links.map(a => new URL(a.href).pathname);
    await new Promise(r => setTimeout(r, 50));
  }
  return [];
})()`, query)
	urls, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		report("search %q: %v", query, err)
		return
	}
	if !slices.Contains(urls, want) {
		report("search %q: the results %v do not list %s", query, urls, want)
	}
}

func screenshot(tab context.Context, file string) error {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, png, 0o644)
}

// resolve maps a URL path of the site to the page or file the build wrote:
// "/x/" for a page (x/index.html), "/404.html" for an HTML file, the path for
// any other file. ok is false when the build wrote nothing there.
func resolve(dir, p string) (string, bool) {
	p = path.Clean("/" + p)
	file := filepath.Join(dir, filepath.FromSlash(p))
	if fi, err := os.Stat(file); err == nil {
		if !fi.IsDir() {
			return p, true
		}
		if _, err := os.Stat(filepath.Join(file, "index.html")); err == nil {
			if p == "/" {
				return p, true
			}
			return p + "/", true
		}
	}
	return p, false
}

func relative(u *url.URL) string {
	s := u.Path
	if u.Fragment != "" {
		s += "#" + u.Fragment
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
