package scale

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// requestCounter counts the harness's own API requests (the executor, the
// fleet creator, Cluster API's stand-in and the readiness watch) by the
// same "VERB resource[/subresource]" key as apiserver_request_total, so the
// manager's share is the API server's count less this one.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]float64
}

// wrap returns a copy of cfg whose requests are counted.
func (rc *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			rc.add(requestKey(req))
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (rc *requestCounter) add(key string) {
	if key == "" {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.counts == nil {
		rc.counts = map[string]float64{}
	}
	rc.counts[key]++
}

// snapshot returns a copy of the counts so far.
func (rc *requestCounter) snapshot() map[string]float64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]float64, len(rc.counts))
	for k, v := range rc.counts {
		out[k] = v
	}
	return out
}

// requestKey maps a request to the API server's verb and resource labels:
// GET of a collection is LIST, ?watch=true is WATCH; "" for a path that is
// not a resource (discovery, /metrics).
func requestKey(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return ""
	}
	resource, name, sub := parts[0], "", ""
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	verb := req.Method
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "WATCH"
		case name == "":
			verb = "LIST"
		}
	case http.MethodPatch:
		if req.Header.Get("Content-Type") == "application/apply-patch+yaml" {
			verb = "APPLY"
		}
	}
	key := verb + " " + resource
	if sub != "" {
		key += "/" + sub
	}
	return key
}

// minus is after less before, dropping zeros.
func minus(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// PerMachine is the manager's API requests per machine brought to Ready, by
// verb and resource: the API server's count over the bring-up less the
// harness's own, divided by N.
func (r *Result) PerMachine() map[string]float64 {
	out := map[string]float64{}
	if r.N == 0 {
		return out
	}
	for k, v := range r.BringUpRequestCounts {
		if d := v - r.HarnessRequestCounts[k]; d > 0 {
			out[k] = d / float64(r.N)
		}
	}
	return out
}

// RequestTable is a text table of requests per machine by verb and resource:
// the manager's and the harness's, busiest first.
func (r *Result) RequestTable() string {
	mgr := r.PerMachine()
	keys := map[string]bool{}
	for k := range mgr {
		keys[k] = true
	}
	for k := range r.HarnessRequestCounts {
		keys[k] = true
	}
	type row struct {
		key       string
		mgr, harn float64
	}
	var rows []row
	var tm, th float64
	for k := range keys {
		h := r.HarnessRequestCounts[k] / float64(max(r.N, 1))
		rows = append(rows, row{k, mgr[k], h})
		tm += mgr[k]
		th += h
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].mgr != rows[j].mgr {
			return rows[i].mgr > rows[j].mgr
		}
		return rows[i].key < rows[j].key
	})
	var b strings.Builder
	fmt.Fprintf(&b, "requests per machine over the bring-up (N=%d)\n%-44s %9s %9s\n", r.N, "verb resource", "manager", "harness")
	for _, x := range rows {
		if x.mgr < 0.005 && x.harn < 0.005 {
			continue
		}
		fmt.Fprintf(&b, "%-44s %9.2f %9.2f\n", x.key, x.mgr, x.harn)
	}
	fmt.Fprintf(&b, "%-44s %9.2f %9.2f\n", "total", tm, th)
	return b.String()
}
