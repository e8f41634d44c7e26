package terraformmachinetemplate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// fakeDNS is a loopback DNS server that answers every A question with a
// and every AAAA question with aaaa (none when invalid), and a resolver
// that asks it alone.
func fakeDNS(t *testing.T, a, aaaa netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
			b.EnableCompression()
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
			switch {
			case q.Type == dnsmessage.TypeA && a.IsValid():
				_ = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
			case q.Type == dnsmessage.TypeAAAA && aaaa.IsValid():
				_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: aaaa.As16()})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// TestInspectionCannotProbeSharedOrNAT64Addresses reproduces a template
// author's probe of the manager's network: an image whose registry is an
// address in the shared address space (100.64.0.0/10, where some clouds
// serve instance metadata) or a NAT64 address carrying a private or
// link-local one, named literally or through a name that resolves to it.
// Without --allow-private-registries each is refused, naming the block,
// and nothing connects.
func TestInspectionCannotProbeSharedOrNAT64Addresses(t *testing.T) {
	ctx := context.Background()
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	refused := func(t *testing.T, err error, block string) {
		t.Helper()
		var ie *InspectError
		if !errors.As(err, &ie) {
			t.Fatalf("error %v, want an InspectError", err)
		}
		for _, want := range []string{"--allow-private-registries", "in " + block + ","} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}

	t.Run("literal addresses are refused before any request", func(t *testing.T) {
		for _, c := range []struct{ registry, block string }{
			{"100.64.0.1", "100.64.0.0/10"},
			{"100.100.100.200:443", "100.64.0.0/10"},
			{"[64:ff9b::a9fe:a9fe]", "169.254.0.0/16"},
			{"[64:ff9b::6440:1]:5000", "100.64.0.0/10"},
			{"[64:ff9b:1::a00:1]", "64:ff9b:1::/48"},
			{"[2002:a9fe:a9fe::1]", "169.254.0.0/16"},
		} {
			in := &Inspector{Platform: platform, Transport: failingTransport{t}}
			_, err := in.Labels(ctx, c.registry+"/machine:v1", authn.NewMultiKeychain())
			refused(t, err, c.block)
			var ie *InspectError
			if errors.As(err, &ie) && ie.Reason != metrics.InspectReference {
				t.Errorf("%s: reason %s, want %s", c.registry, ie.Reason, metrics.InspectReference)
			}
		}
	})

	for _, c := range []struct {
		name    string
		a, aaaa string
		block   string
	}{
		{"a name resolving into the shared address space", "100.64.0.1", "", "100.64.0.0/10"},
		{"a name resolving to a NAT64 address of the metadata service", "", "64:ff9b::a9fe:a9fe", "169.254.0.0/16"},
		{"a name resolving to a NAT64 address of a private address", "", "64:ff9b::a00:1", "10.0.0.0/8"},
	} {
		t.Run(c.name+" is refused when connecting", func(t *testing.T) {
			var a, aaaa netip.Addr
			if c.a != "" {
				a = netip.MustParseAddr(c.a)
			}
			if c.aaaa != "" {
				aaaa = netip.MustParseAddr(c.aaaa)
			}
			// Whatever the check decides, no connection is made: the test
			// must send nothing to these addresses.
			var connects atomic.Int64
			stop := func(_, address string, _ syscall.RawConn) error {
				connects.Add(1)
				return fmt.Errorf("the check let %s through", address)
			}
			in := &Inspector{Platform: platform, resolver: fakeDNS(t, a, aaaa), afterCheck: stop, Timeout: 10 * time.Second}
			defer func() {
				if n := connects.Load(); n > 0 {
					t.Errorf("%d connections passed the address check", n)
				}
			}()
			_, err := in.Labels(ctx, "registry.captf-probe.test/machine:v1", authn.NewMultiKeychain())
			t.Log(err)
			refused(t, err, c.block)
		})
	}
}

// failingTransport fails a test that sends a request through it.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("a refused inspection sent %s %s", r.Method, r.URL)
	return nil, errors.New("no request may be sent")
}

// countingTransport counts the response body bytes the manager reads.
type countingTransport struct {
	next http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// hugeManifestRegistry speaks just enough of the OCI distribution API for
// an inspection (the /v2/ probe and a manifest GET) and serves a manifest
// of size bytes, declaring its length or not; it counts what it wrote.
func hugeManifestRegistry(t *testing.T, size int64, declare bool) (host string, served *atomic.Int64) {
	t.Helper()
	served = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.HasPrefix(r.URL.Path, "/v2/machine/manifests/"):
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			if declare {
				w.Header().Set("Content-Length", fmt.Sprint(size))
			}
			w.WriteHeader(http.StatusOK)
			chunk := []byte(strings.Repeat(" ", 32<<10))
			for left := size; left > 0; {
				n := min(left, int64(len(chunk)))
				written, err := w.Write(chunk[:n])
				served.Add(int64(written))
				if err != nil {
					return
				}
				left -= n
				if f, ok := w.(http.Flusher); ok && !declare {
					f.Flush()
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), served
}

// TestOversizedManifestIsNotRead reproduces a registry that answers with
// a manifest far over MaxManifestBytes (the library alone would read up
// to 100 MiB): declared, it is refused with its size and never read;
// undeclared (chunked), reading stops one byte past the cap. The registry
// never gets to send it whole.
func TestOversizedManifestIsNotRead(t *testing.T) {
	const size = 64 << 20
	for _, declare := range []bool{true, false} {
		t.Run(fmt.Sprintf("length declared %v", declare), func(t *testing.T) {
			host, served := hugeManifestRegistry(t, size, declare)
			ct := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
			in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true, Transport: ct}
			_, err := in.Labels(context.Background(), host+"/machine:v1", authn.NewMultiKeychain())
			var ie *InspectError
			if !errors.As(err, &ie) || ie.Reason != metrics.InspectRegistry {
				t.Fatalf("error %v, want a registry InspectError", err)
			}
			want := fmt.Sprintf("more than %d bytes", MaxManifestBytes)
			if declare {
				want = fmt.Sprintf("declares a manifest of %d bytes, more than the %d bytes", size, MaxManifestBytes)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			read := ct.read.Load()
			if declare && read != 0 {
				t.Errorf("the manager read %d bytes of a manifest it refused by its declared size", read)
			}
			if read > MaxManifestBytes+1 {
				t.Errorf("the manager read %d bytes, more than the %d-byte cap", read, MaxManifestBytes)
			}
			// What the registry got to write is what it read plus the
			// sockets' buffers, nowhere near the whole manifest.
			time.Sleep(100 * time.Millisecond)
			t.Logf("%v; the manager read %d bytes, the registry wrote %d", err, read, served.Load())
			if s := served.Load(); s >= size/2 {
				t.Errorf("the registry served %d of the manifest's %d bytes", s, size)
			}
		})
	}
}

// TestManifestWithinTheCapIsRead: the cap refuses nothing a registry
// would hold for a module image.
func TestManifestWithinTheCapIsRead(t *testing.T) {
	reg := startRegistry(t, false)
	ref := reg.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"2"}`})
	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}
	labels, err := in.Labels(context.Background(), ref, authn.NewMultiKeychain())
	if err != nil || labels[contract.LabelCapacity] == "" {
		t.Fatalf("labels %v, error %v", labels, err)
	}
}

// TestInspectionsAreBounded: however many reconciles inspect at once, at
// most MaxConcurrentInspections read from registries; the rest wait for a
// slot.
func TestInspectionsAreBounded(t *testing.T) {
	release := make(chan struct{})
	var inFlight, peak atomic.Int64
	var holding atomic.Bool
	reg := startCountingRegistry(t, func(w http.ResponseWriter, r *http.Request) bool {
		if !holding.Load() {
			return false
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		return false
	})
	ref := reg.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"2"}`})
	before := len(reg.requests())
	holding.Store(true)

	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}
	const inspections = 3 * MaxConcurrentInspections
	var wg sync.WaitGroup
	errs := make(chan error, inspections)
	for range inspections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := in.Labels(context.Background(), ref, authn.NewMultiKeychain())
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inFlight.Load() < MaxConcurrentInspections && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // room for any extra inspection to start
	if got := inFlight.Load(); got != MaxConcurrentInspections {
		t.Errorf("%d requests in flight while the registry holds them, want %d", got, MaxConcurrentInspections)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p > MaxConcurrentInspections {
		t.Errorf("%d inspections read from the registry at once, want at most %d", p, MaxConcurrentInspections)
	}
	if n := len(reg.requests()) - before; n < inspections {
		t.Errorf("%d requests for %d inspections", n, inspections)
	}
}
