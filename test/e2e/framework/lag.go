package framework

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// LaggingWatch returns a transport wrapper under which every watch of
// resource (e.g. "jobs") delivers its events d late: a manager built on it
// has a cache of that resource that is always d behind the API server, as a
// manager on a slow or partitioned connection has.
func LaggingWatch(resource string, d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return lagTransport{next: next, resource: resource, d: d}
	}
}

type lagTransport struct {
	next     http.RoundTripper
	resource string
	d        time.Duration
}

func (t lagTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || r.URL.Query().Get("watch") != "true" || !strings.HasSuffix(r.URL.Path, "/"+t.resource) {
		return resp, err
	}
	resp.Body = newLaggingBody(resp.Body, t.d)
	return resp, nil
}

type chunk struct {
	data []byte
	err  error
	at   time.Time
}

// laggingBody hands out what src delivered, each chunk d after it arrived.
type laggingBody struct {
	src    io.ReadCloser
	d      time.Duration
	chunks chan chunk
	done   chan struct{}
	once   sync.Once
	cur    []byte
	err    error
}

func newLaggingBody(src io.ReadCloser, d time.Duration) *laggingBody {
	b := &laggingBody{src: src, d: d, chunks: make(chan chunk, 1024), done: make(chan struct{})}
	go b.pump()
	return b
}

func (b *laggingBody) pump() {
	for {
		buf := make([]byte, 32*1024)
		n, err := b.src.Read(buf)
		c := chunk{data: buf[:n], err: err, at: time.Now()}
		select {
		case b.chunks <- c:
		case <-b.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *laggingBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var c chunk
		select {
		case c = <-b.chunks:
		case <-b.done:
			return 0, io.EOF
		}
		select {
		case <-time.After(time.Until(c.at.Add(b.d))):
		case <-b.done:
			return 0, io.EOF
		}
		b.cur, b.err = c.data, c.err
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *laggingBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.src.Close()
}
