package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces a sensitive value in the runtime's output.
const Redacted = "(sensitive value)"

// minRedactLen is the shortest sensitive string the runner redacts: shorter
// ones ("a", "on", "1") would garble every line they occur in by chance.
const minRedactLen = 4

// maxRedactLine bounds what the redactor holds back waiting for a newline.
const maxRedactLine = 1 << 20

// SensitiveValues returns the string values the generated root declares
// sensitive (bootstrap data, Secret-sourced user variables): every string
// leaf of each such variable's value in terraform.tfvars.json, at least
// minRedactLen long, longest first. The runtime redacts these from its plan
// and apply output, but not where a provider echoes a value into an
// attribute it does not mark sensitive; the runner redacts them from the
// output it relays as well.
func SensitiveValues(mainTF, tfvars []byte) ([]string, error) {
	var root struct {
		Variable map[string]struct {
			Sensitive bool `json:"sensitive"`
		} `json:"variable"`
	}
	if err := json.Unmarshal(mainTF, &root); err != nil {
		return nil, fmt.Errorf("reading the variable declarations of %s: %w", MainFile, err)
	}
	var values map[string]any
	if err := json.Unmarshal(tfvars, &values); err != nil {
		return nil, fmt.Errorf("reading %s: %w", TFVarsFile, err)
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			if len(t) >= minRedactLen {
				seen[t] = true
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	for name, decl := range root.Variable {
		if decl.Sensitive {
			walk(values[name])
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out, nil
}

// sensitiveValuesOf reads SensitiveValues from a generated root directory.
func sensitiveValuesOf(root string) ([]string, error) {
	mainTF, err := os.ReadFile(filepath.Join(root, MainFile))
	if err != nil {
		return nil, err
	}
	tfvars, err := os.ReadFile(filepath.Join(root, TFVarsFile))
	if err != nil {
		return nil, err
	}
	return SensitiveValues(mainTF, tfvars)
}

// redactor is a line-buffered writer that replaces every sensitive value in
// what it relays: a value split across two writes is still found, since a
// line is written on only once it is complete (or on Flush).
type redactor struct {
	mu   sync.Mutex
	next io.Writer
	r    *strings.Replacer
	line []byte
}

// newRedactor relays to next with values replaced; with no value it is
// next itself.
func newRedactor(next io.Writer, values []string) io.Writer {
	if len(values) == 0 {
		return next
	}
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Redacted)
	}
	return &redactor{next: next, r: strings.NewReplacer(pairs...)}
}

func (w *redactor) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	i := bytes.LastIndexByte(w.line, '\n')
	if i < 0 && len(w.line) > maxRedactLine {
		// A runaway line without a newline is relayed whole.
		i = len(w.line) - 1
	}
	if i >= 0 {
		if _, err := io.WriteString(w.next, w.r.Replace(string(w.line[:i+1]))); err != nil {
			return 0, err
		}
		w.line = append(w.line[:0], w.line[i+1:]...)
	}
	return len(p), nil
}

// Flush writes out a last line that has no newline.
func (w *redactor) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) == 0 {
		return nil
	}
	_, err := io.WriteString(w.next, w.r.Replace(string(w.line)))
	w.line = w.line[:0]
	return err
}

// flush flushes w when it buffers.
func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
}
