package setup

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"strings"

	"k8s.io/component-base/logs"
)

// maxFlagBody bounds a PUT /debug/flags/v body.
const maxFlagBody = 64

// debugHandlers are served on the secure diagnostics endpoint, behind its
// authentication and authorization (verb get for /debug/pprof/*, put for
// /debug/flags/v).
func debugHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		"/debug/flags/v":       http.HandlerFunc(putVerbosity),
	}
}

// putVerbosity sets the log verbosity (-v) from the request body.
func putVerbosity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "only PUT is allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFlagBody+1))
	if err != nil || len(body) > maxFlagBody {
		http.Error(w, "the body must be a verbosity level", http.StatusBadRequest)
		return
	}
	msg, err := logs.GlogSetter(strings.TrimSpace(string(body)))
	if err != nil {
		http.Error(w, fmt.Sprintf("invalid verbosity: %v", err), http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, msg)
}
