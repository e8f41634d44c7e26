package framework

import (
	"reflect"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// Object names one reconciled object.
type Object struct {
	Kind, Namespace, Name string
}

// Passes counts, per object, the reconcile passes a manager finished and the
// operations its passes decided, from what the manager logs: controller-
// runtime's end-of-reconcile messages and CAPTF's "Decided" message (both
// below the log level the manager writes at; Passes sees them all).
type Passes struct {
	mu      sync.Mutex
	done    map[Object]int
	decided map[Object]map[string]int
}

// NewPasses returns an empty counter.
func NewPasses() *Passes {
	return &Passes{done: map[Object]int{}, decided: map[Object]map[string]int{}}
}

// Logger returns a logger writing through to inner and counting passes.
func (p *Passes) Logger(inner logr.Logger) logr.Logger {
	return logr.New(&passSink{inner: inner.GetSink(), p: p})
}

// Done is the number of passes over o that returned (with or without an
// error).
func (p *Passes) Done(o Object) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[o]
}

// Decided is the number of passes over o that decided op ("" for any).
func (p *Passes) Decided(o Object, op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op == "" {
		n := 0
		for _, c := range p.decided[o] {
			n += c
		}
		return n
	}
	return p.decided[o][op]
}

// InNamespace is the number of passes that returned over any object in ns.
func (p *Passes) InNamespace(ns string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for o, c := range p.done {
		if o.Namespace == ns {
			n += c
		}
	}
	return n
}

func (p *Passes) note(values []any, msg string, kv []any) {
	var o Object
	for i := 0; i+1 < len(values); i += 2 {
		k, _ := values[i].(string)
		v, _ := values[i+1].(string)
		switch k {
		case "controllerKind":
			o.Kind = v
		case "namespace":
			o.Namespace = v
		case "name":
			o.Name = v
		}
	}
	if o.Kind == "" || o.Name == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case msg == "Decided":
		op := ""
		for i := 0; i+1 < len(kv); i += 2 {
			if k, _ := kv[i].(string); k == "op" {
				op = fmtValue(kv[i+1])
			}
		}
		if p.decided[o] == nil {
			p.decided[o] = map[string]int{}
		}
		p.decided[o][op]++
	case msg == "Reconcile successful", msg == "Reconciler error", strings.HasPrefix(msg, "Reconcile done"):
		p.done[o]++
	}
}

// fmtValue renders a value whose underlying type is string (CAPTF's
// operations), "" for anything else.
func fmtValue(v any) string {
	if r := reflect.ValueOf(v); r.Kind() == reflect.String {
		return r.String()
	}
	return ""
}

// passSink is a logr.LogSink passing everything to inner and every message
// of every level to Passes.
type passSink struct {
	inner  logr.LogSink
	p      *Passes
	values []any
}

func (s *passSink) Init(info logr.RuntimeInfo) { s.inner.Init(info) }

// Enabled is true at every level, so that the messages below the inner
// sink's level reach Info; they go no further.
func (s *passSink) Enabled(int) bool { return true }

func (s *passSink) Info(level int, msg string, kv ...any) {
	s.p.note(s.values, msg, kv)
	if s.inner.Enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s *passSink) Error(err error, msg string, kv ...any) {
	s.p.note(s.values, msg, kv)
	s.inner.Error(err, msg, kv...)
}

func (s *passSink) WithValues(kv ...any) logr.LogSink {
	return &passSink{inner: s.inner.WithValues(kv...), p: s.p, values: append(append([]any(nil), s.values...), kv...)}
}

func (s *passSink) WithName(name string) logr.LogSink {
	return &passSink{inner: s.inner.WithName(name), p: s.p, values: s.values}
}
