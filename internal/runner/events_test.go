package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
)

// recordingSink is a narrow fake for the event POST: it records events and
// fails or stalls on demand.
type recordingSink struct {
	mu     sync.Mutex
	events []*eventsv1.Event
	fail   bool
	stall  time.Duration
	calls  int
}

func (s *recordingSink) Create(ctx context.Context, ev *eventsv1.Event) error {
	s.mu.Lock()
	s.calls++
	fail, stall := s.fail, s.stall
	s.mu.Unlock()
	if stall > 0 {
		select {
		case <-time.After(stall):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return errors.New("connection refused")
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	return nil
}

func TestRecorder(t *testing.T) {
	ref := ObjectRef{APIVersion: "infrastructure.cluster.x-k8s.io/v1alpha1", Kind: "TerraformCluster", Namespace: "ns", Name: "c1", UID: "u-1"}

	t.Run("events go out in order on the object, related to the Job", func(t *testing.T) {
		sink := &recordingSink{}
		r := newAsyncRecorder(sink, ref, "job-1")
		r.Emit(EventNormal, "RunStarted", "apply", "one")
		r.Emit(EventNormal, "StepStarted", "init", "two")
		r.Emit(EventWarning, "RunFinished", "apply", "three")
		r.Close()
		if len(sink.events) != 3 {
			t.Fatalf("%d events", len(sink.events))
		}
		names := map[string]bool{}
		for i, want := range []string{"one", "two", "three"} {
			ev := sink.events[i]
			if ev.Note != want {
				t.Errorf("event %d note %q, want %q", i, ev.Note, want)
			}
			if ev.Regarding.Kind != "TerraformCluster" || ev.Regarding.UID != "u-1" || ev.Namespace != "ns" {
				t.Errorf("regarding %+v", ev.Regarding)
			}
			if ev.Related == nil || ev.Related.Kind != "Job" || ev.Related.Name != "job-1" {
				t.Errorf("related %+v", ev.Related)
			}
			if ev.ReportingController != ReportingController || ev.ReportingInstance == "" || ev.Action == "" || ev.EventTime.IsZero() {
				t.Errorf("incomplete event %+v", ev)
			}
			if names[ev.Name] {
				t.Errorf("duplicate event name %s", ev.Name)
			}
			names[ev.Name] = true
		}
	})

	t.Run("after a few consecutive failures it gives up for the rest of the run", func(t *testing.T) {
		sink := &recordingSink{fail: true}
		r := newAsyncRecorder(sink, ref, "")
		for range 10 {
			r.Emit(EventNormal, "StepStarted", "init", "x")
		}
		r.Close()
		if sink.calls != eventMaxFailures {
			t.Errorf("%d requests, want %d", sink.calls, eventMaxFailures)
		}
	})

	t.Run("emitting never blocks the run, even when the API server stalls", func(t *testing.T) {
		sink := &recordingSink{stall: time.Hour}
		r := newAsyncRecorder(sink, ref, "")
		done := make(chan struct{})
		go func() {
			for range eventQueue * 3 {
				r.Emit(EventNormal, "StepStarted", "init", "x")
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Emit blocked")
		}
		// Close waits a bounded time (each request has its own timeout).
		r.Close()
		// The recorder left behind still logs as its requests time out;
		// let it finish before another test reconfigures the global logger.
		select {
		case <-r.done:
		case <-time.After(time.Duration(eventMaxFailures+1) * eventRequestTimeout):
			t.Fatal("the recorder's requests did not time out")
		}
	})

	t.Run("notes are capped at 1 KiB", func(t *testing.T) {
		sink := &recordingSink{}
		r := newAsyncRecorder(sink, ref, "")
		long := make([]byte, 3000)
		for i := range long {
			long[i] = 'n'
		}
		r.Emit(EventNormal, "StepFailed", "apply", string(long))
		r.Close()
		if len(sink.events[0].Note) > eventNoteMax {
			t.Errorf("note %d bytes", len(sink.events[0].Note))
		}
	})

	t.Run("no --event-object means no events", func(t *testing.T) {
		if _, ok := NewRecorder(&Options{}).(nopRecorder); !ok {
			t.Error("events on without --event-object")
		}
	})
}
