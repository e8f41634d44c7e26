package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Write is one API write a manager made: its verb, what it wrote to, and
// the write site it belongs to.
type Write struct {
	// Index counts the manager's accepted writes from 1 (0 for a write the
	// API server refused).
	Index int
	// Verb is create, update, patch or delete.
	Verb string
	// Resource and Subresource are as in the request path (Subresource ""
	// for the object itself).
	Resource, Subresource string
	Namespace, Name       string
	// Detail is what the write touched: an event's reason, the top-level
	// fields and annotation, label and finalizer keys of a patch or update.
	Detail string
	// Code is the API server's response code (0 when no response came).
	Code int
	// Site is the write site: verb, resource, the name with the scenario's
	// object names and hashes blanked out, and the detail.
	Site string
}

func (w Write) String() string {
	return fmt.Sprintf("#%d %s %s/%s (%d)", w.Index, w.Site, w.Namespace, w.Name, w.Code)
}

// Faults watches a manager's API writes and kills the manager right after
// a chosen one: the write reaches the API server, and every request the
// manager makes after it fails, as a process that died would make none,
// while the manager's context is canceled.
//
// A Faults with no kill set only records the writes.
type Faults struct {
	// Names are the scenario's object names (cluster, machines), blanked
	// out of write sites so that a site is the same for every object.
	Names []string
	// KillSite and KillAt, when KillSite is set, kill the manager right
	// after the KillAt-th accepted write of that site (from 1).
	KillSite string
	KillAt   int
	// KillMatch, when set instead of KillSite, kills the manager right
	// after the first accepted write it matches.
	KillMatch func(Write) bool
	// Cancel stops the manager; called once, at the kill.
	Cancel context.CancelFunc

	mu       sync.Mutex
	writes   []Write
	accepted int
	seen     map[string]int
	dead     bool
	killed   *Write

	// cut, while set, fails every request as a partitioned network would;
	// cutRequests counts the requests tried while cut; streams are the
	// response bodies of the watches open now, which a cut breaks.
	cut         bool
	cutRequests int
	streams     map[*cutBody]struct{}

	// lists counts the manager's list reads by resource: a LIST, or a
	// watch that starts with the collection's current objects.
	lists map[string]int
	// codes counts the API server's answers by status code, 0 for a
	// request that got none.
	codes map[int]int
}

// Codes returns how many of the manager's requests got each status code
// so far (0: no answer).
func (f *Faults) Codes() map[int]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.codes)
}

// answered counts resp's status code; call with f.mu held.
func (f *Faults) answered(resp *http.Response) {
	if f.codes == nil {
		f.codes = map[int]int{}
	}
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	f.codes[code]++
}

// Lists returns how many list reads the manager made so far, by resource
// (as in the path: "secrets", "terraformmachines").
func (f *Faults) Lists() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.lists)
}

// countList counts r when it is a list read.
func (f *Faults) countList(r *http.Request) {
	res, ok := collectionOf(r.URL.Path)
	q := r.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	if !ok || watching && q.Get("sendInitialEvents") != "true" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lists == nil {
		f.lists = map[string]int{}
	}
	f.lists[res]++
}

// collectionOf returns the resource a request path names a collection of:
// /api/v1/[namespaces/<ns>/]<resource> or
// /apis/<group>/<version>/[namespaces/<ns>/]<resource>.
func collectionOf(path string) (string, bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(p) >= 3 && p[0] == "api":
		p = p[2:]
	case len(p) >= 4 && p[0] == "apis":
		p = p[3:]
	default:
		return "", false
	}
	if len(p) >= 3 && p[0] == "namespaces" {
		p = p[2:]
	}
	if len(p) != 1 {
		return "", false
	}
	return p[0], true
}

// errCut is what a partitioned manager's requests get.
var errCut = errors.New("fault injection: the manager is cut off from the API server")

// Cut partitions the manager from the API server: every request it makes
// fails as a network that drops it would, and every watch it has open
// breaks, until Mend.
func (f *Faults) Cut() {
	f.mu.Lock()
	f.cut = true
	streams := f.streams
	f.streams = nil
	f.mu.Unlock()
	for b := range streams {
		_ = b.ReadCloser.Close()
	}
}

// Mend ends a Cut, and returns how many requests the manager tried while
// it was cut off.
func (f *Faults) Mend() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = false
	n := f.cutRequests
	f.cutRequests = 0
	return n
}

// cutBody is a watch's response body, which a Cut closes.
type cutBody struct {
	io.ReadCloser
	f *Faults
}

func (b *cutBody) Close() error {
	b.f.mu.Lock()
	delete(b.f.streams, b)
	b.f.mu.Unlock()
	return b.ReadCloser.Close()
}

// cutOff reports whether a request is to fail as cut off, counting it.
func (f *Faults) cutOff() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		f.cutRequests++
	}
	return f.cut
}

// stream registers a watch's response so that a Cut breaks it; a watch
// answered after a Cut began is broken at once.
func (f *Faults) stream(r *http.Request, resp *http.Response, err error) (*http.Response, error) {
	if err != nil || r.URL.Query().Get("watch") != "true" && r.URL.Query().Get("watch") != "1" {
		return resp, err
	}
	b := &cutBody{ReadCloser: resp.Body, f: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		_ = resp.Body.Close()
		return nil, errCut
	}
	if f.streams == nil {
		f.streams = map[*cutBody]struct{}{}
	}
	f.streams[b] = struct{}{}
	resp.Body = b
	return resp, nil
}

// errKilled is what a killed manager's requests get.
var errKilled = errors.New("fault injection: the manager was killed")

// Wrap is the transport wrapper to give RunObservedManager (Observe.Wrap).
func (f *Faults) Wrap(next http.RoundTripper) http.RoundTripper {
	return faultTransport{next: next, f: f}
}

// Writes returns the writes so far.
func (f *Faults) Writes() []Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Write(nil), f.writes...)
}

// Killed returns the write after which the manager was killed, nil while
// it was not.
func (f *Faults) Killed() *Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed
}

type faultTransport struct {
	next http.RoundTripper
	f    *Faults
}

func (t faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f := t.f
	if f.cutOff() {
		return nil, errCut
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		f.mu.Lock()
		dead := f.dead
		f.mu.Unlock()
		if dead {
			return nil, errKilled
		}
		f.countList(r)
		resp, err := t.next.RoundTrip(r)
		f.mu.Lock()
		f.answered(resp)
		f.mu.Unlock()
		return f.stream(r, resp, err)
	}
	w, err := describe(r, f.Names)
	if err != nil {
		return nil, err
	}
	// Writes go one at a time, so that none slips past the kill.
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return nil, errKilled
	}
	resp, err := t.next.RoundTrip(r)
	f.answered(resp)
	if resp != nil {
		w.Code = resp.StatusCode
	}
	if err != nil || resp.StatusCode >= 300 {
		f.writes = append(f.writes, w)
		return resp, err
	}
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	f.seen[w.Site]++
	f.accepted++
	w.Index = f.accepted
	f.writes = append(f.writes, w)
	if f.KillSite != "" && w.Site == f.KillSite && f.seen[w.Site] == f.KillAt || f.KillMatch != nil && f.KillMatch(w) {
		f.dead, f.killed = true, &w
		if f.Cancel != nil {
			f.Cancel()
		}
	}
	return resp, nil
}

var (
	hashLike = regexp.MustCompile(`[0-9a-f]{5,}|[0-9]{6,}`)
	digits   = regexp.MustCompile(`-[0-9]+\b`)
)

// describe reads a write request: path, body and the site it belongs to.
// The body is read and put back.
func describe(r *http.Request, names []string) (Write, error) {
	w := Write{Verb: verbOf(r.Method)}
	// /api/v1/namespaces/ns/secrets/name[/sub] or
	// /apis/group/version/namespaces/ns/res/name[/sub]; cluster-scoped
	// paths have no namespaces/ns.
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) > 0 && parts[0] == "apis" && len(parts) > 3 {
		parts = parts[3:]
	} else if len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		w.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 0 {
		w.Resource = parts[0]
	}
	if len(parts) > 1 {
		w.Name = parts[1]
	}
	if len(parts) > 2 {
		w.Subresource = parts[2]
	}
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return w, err
		}
		_ = r.Body.Close()
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil && len(body) > 0 {
		// Built-in kinds go as protobuf: decode and look at them as JSON.
		if obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
			if b, err := json.Marshal(obj); err == nil {
				_ = json.Unmarshal(b, &doc)
			}
		}
	}
	meta, _ := doc["metadata"].(map[string]any)
	if w.Name == "" && meta != nil {
		w.Name, _ = meta["name"].(string)
		if w.Name == "" {
			w.Name, _ = meta["generateName"].(string)
		}
	}
	switch {
	case w.Resource == "events":
		w.Detail, _ = doc["reason"].(string)
		if w.Verb == "patch" {
			w.Detail = "series"
		}
	case w.Verb == "patch" || w.Verb == "update":
		w.Detail = fields(doc, w.Verb == "update")
	}
	name := w.Name
	if w.Resource == "events" {
		name = ""
	}
	sorted := append([]string(nil), names...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, n := range sorted {
		// Whole name segments only: a short name must not blank a word.
		re := regexp.MustCompile(`(^|[-.])` + regexp.QuoteMeta(n) + `($|[-.])`)
		name = re.ReplaceAllString(name, "${1}*${2}")
	}
	name = digits.ReplaceAllString(hashLike.ReplaceAllString(name, "#"), "-#")
	var site []string
	for _, part := range []string{w.Verb, resourcePath(w), name, w.Detail} {
		if part != "" {
			site = append(site, part)
		}
	}
	w.Site = strings.Join(site, " ")
	return w, nil
}

func resourcePath(w Write) string {
	if w.Subresource != "" {
		return w.Resource + "/" + w.Subresource
	}
	return w.Resource
}

func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// fields names what a patch or update body sets: its top-level fields but
// metadata, the annotation and label keys it touches, and its finalizers
// and owner references. A full
// update names only the finalizers and annotations that CAPTF owns.
func fields(doc map[string]any, update bool) string {
	var out []string
	for k := range doc {
		switch k {
		case "metadata", "apiVersion", "kind":
			continue
		case "spec", "data", "stringData", "type":
			if update {
				continue
			}
		}
		out = append(out, k)
	}
	meta, _ := doc["metadata"].(map[string]any)
	for _, k := range []string{"annotations", "labels"} {
		m, _ := meta[k].(map[string]any)
		for key := range m {
			if update && !strings.Contains(key, "captf") && !strings.Contains(key, "clusterctl") {
				continue
			}
			out = append(out, k+"["+key+"]")
		}
	}
	for _, k := range []string{"finalizers", "ownerReferences"} {
		if _, ok := meta[k]; ok && !update {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Sites returns the distinct write sites of writes in the order of their
// first accepted write, with how many times each was written.
func Sites(writes []Write) (sites []string, count map[string]int) {
	count = map[string]int{}
	for _, w := range writes {
		if w.Index == 0 {
			continue
		}
		if count[w.Site] == 0 {
			sites = append(sites, w.Site)
		}
		count[w.Site]++
	}
	return sites, count
}
