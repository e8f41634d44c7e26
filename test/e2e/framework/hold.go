package framework

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HoldSuffix is the secret_suffix of the state the no-op machine module
// reads through its hold_endpoint: the Secret tfstate-default-hold.
const HoldSuffix = "hold"

// Hold is the server behind the no-op machine module's hold_endpoint
// variable. Every plan of a machine with that variable set first reads the
// state tfstate-default-hold of its namespace from the Kubernetes API at
// that address; Hold answers such a read only once it is released, so the
// run waits inside OpenTofu, holding its state lock, for as long as a test
// needs to land a fault at that moment. The answer is an empty state (no
// output), so a released hold changes nothing the module plans.
//
// A hold is armed when started: the reads wait. Release lets the waiting
// reads and every later one through; Arm makes later ones wait again.
type Hold struct {
	// URL is the address to give hold_endpoint: http://<host>:<port>.
	URL string

	srv *http.Server

	mu      sync.Mutex
	gate    chan struct{} // closed while released
	waiting int
	// arrived is signalled (without blocking) at every read that waits.
	arrived chan struct{}
	reads   int
}

// StartHold starts a hold listening on host (an address the pods reach:
// the environment's API server host), armed.
func StartHold(host string) (*Hold, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	h := &Hold{URL: "http://" + ln.Addr().String(), gate: make(chan struct{}), arrived: make(chan struct{}, 1)}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// Close stops the server; reads still waiting get no answer.
func (h *Hold) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
	_ = h.srv.Close()
}

// Release answers the reads waiting and every later one, until Arm.
func (h *Hold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
	default:
		close(h.gate)
	}
}

// Arm makes later reads wait again, until the next Release.
func (h *Hold) Arm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
		h.gate = make(chan struct{})
	default:
	}
}

// Waiting returns how many reads wait at the hold now, and how many reads
// it has had in all.
func (h *Hold) Waiting() (waiting, reads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting, h.reads
}

// Held waits until a read waits at the hold, or ctx ends.
func (h *Hold) Held(ctx context.Context) error {
	for {
		if n, _ := h.Waiting(); n > 0 {
			return nil
		}
		select {
		case <-h.arrived:
		case <-ctx.Done():
			return errors.New("no run reached the hold: " + ctx.Err().Error())
		}
	}
}

func (h *Hold) serve(w http.ResponseWriter, r *http.Request) {
	// GET /api/v1/namespaces/<ns>/secrets/tfstate-default-hold is the one
	// read the backend makes for a state that exists.
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 6 || parts[0] != "api" || parts[2] != "namespaces" || parts[4] != "secrets" || parts[5] != "tfstate-default-"+HoldSuffix {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
		return
	}
	h.mu.Lock()
	gate := h.gate
	h.reads++
	h.waiting++
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	defer func() {
		h.mu.Lock()
		h.waiting--
		h.mu.Unlock()
	}()
	select {
	case <-gate:
	case <-r.Context().Done():
		return
	}
	body, err := holdSecret(parts[3])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// holdSecret is the state Secret the hold answers with: an empty state in
// the kubernetes backend's format (gzip JSON, base64 under data.tfstate).
func holdSecret(ns string) ([]byte, error) {
	doc, err := json.Marshal(map[string]any{
		"version": 4, "serial": 1, "lineage": "captf-hold", "terraform_version": "1.5.7",
		"outputs": map[string]any{}, "resources": []any{},
	})
	if err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(doc); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "tfstate-default-" + HoldSuffix, "namespace": ns},
		"data":     map[string]any{"tfstate": base64.StdEncoding.EncodeToString(gz.Bytes())},
	})
}
