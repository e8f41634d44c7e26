package envtest

import (
	"bytes"
	"io"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 100 ms until it holds; once timeout has
// passed the test fails, naming what it waited for and cond's last detail.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

// TestLog is a writer for a manager's log that keeps it and shows it only
// if the test fails; what goroutines still stopping write after the test
// ends is dropped.
func TestLog(t testing.TB) io.Writer {
	l := &testLog{}
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.closed = true
		if t.Failed() {
			t.Log(l.buf.String())
		}
	})
	return l
}

type testLog struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.buf.Write(p)
	}
	return len(p), nil
}
