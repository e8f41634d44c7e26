package terraformmachinetemplate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/captf-io/cluster-api-provider-terraform/internal/contract"
	"github.com/captf-io/cluster-api-provider-terraform/internal/metrics"
)

// TestCheckRegistryHost: a template's image may not make the manager reach
// loopback, private or link-local registry hosts (Security Model: the
// manager's outbound traffic is to the registries it reads module image
// metadata from).
func TestCheckRegistryHost(t *testing.T) {
	for _, host := range []string{
		"127.0.0.1:5000", "localhost", "localhost:5000", "registry.localhost", "[::1]:5000", "10.1.2.3", "172.16.0.1:443",
		"192.168.150.10", "169.254.169.254", "[fe80::1]:5000", "0.0.0.0:80", "[fd00::1]", "[::ffff:127.0.0.1]:5000",
	} {
		if err := CheckRegistryHost(host); err == nil || !strings.Contains(err.Error(), "--allow-private-registries") {
			t.Errorf("%s: %v, want a refusal naming the flag", host, err)
		}
	}
	for _, host := range []string{"ghcr.io", "registry.example:5000", "8.8.8.8", "[2606:4700:4700::1111]:443", "index.docker.io"} {
		if err := CheckRegistryHost(host); err != nil {
			t.Errorf("%s refused: %v", host, err)
		}
	}
}

// countingRegistry is a loopback registry that counts the requests it
// gets, by path.
type countingRegistry struct {
	*testRegistry
	mu    sync.Mutex
	paths []string
}

func startCountingRegistry(t *testing.T, override func(w http.ResponseWriter, r *http.Request) bool) *countingRegistry {
	t.Helper()
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	c := &countingRegistry{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.paths = append(c.paths, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		if override != nil && override(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.testRegistry = &testRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
	return c
}

func (c *countingRegistry) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// TestLoopbackRegistryNeedsTheFlag: without --allow-private-registries an
// inspection of an image on a loopback registry is refused before any
// request; with it, the labels are read.
func TestLoopbackRegistryNeedsTheFlag(t *testing.T) {
	ctx := context.Background()
	reg := startCountingRegistry(t, nil)
	ref := reg.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"2"}`})
	before := len(reg.requests())

	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}}
	_, err := in.Labels(ctx, ref, authn.NewMultiKeychain())
	var ie *InspectError
	if !errors.As(err, &ie) || ie.Reason != metrics.InspectReference || !strings.Contains(err.Error(), "--allow-private-registries") {
		t.Fatalf("error %v, want a refusal naming --allow-private-registries", err)
	}
	if got := reg.requests()[before:]; len(got) > 0 {
		t.Fatalf("the refused inspection reached the registry: %v", got)
	}

	in.AllowPrivate = true
	labels, err := in.Labels(ctx, ref, authn.NewMultiKeychain())
	if err != nil || labels[contract.LabelCapacity] != `{"cpu":"2"}` {
		t.Fatalf("with the flag: labels %v, error %v", labels, err)
	}
}

// TestPublicOnlyTransportRefusesAResolvedLoopbackAddress: a name that
// resolves to loopback is refused when connecting.
func TestPublicOnlyTransportRefusesAResolvedLoopbackAddress(t *testing.T) {
	reg := startCountingRegistry(t, nil)
	port := reg.host[strings.LastIndex(reg.host, ":"):]
	req, _ := http.NewRequest(http.MethodGet, "http://localhost"+port+"/v2/", nil)
	resp, err := publicOnlyTransport(nil, nil).RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the transport connected to a loopback address")
	}
	if !strings.Contains(err.Error(), "--allow-private-registries") {
		t.Fatalf("error %v does not name the flag", err)
	}
	if n := len(reg.requests()); n > 0 {
		t.Fatalf("the registry got %d requests", n)
	}
}

// rawManifest is a manifest pushed as is.
type rawManifest struct {
	body []byte
	mt   types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.body, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// TestOversizedConfigIsNotFetched: a manifest that declares a config blob
// larger than MaxConfigBytes is refused without the blob being requested.
func TestOversizedConfigIsNotFetched(t *testing.T) {
	ctx := context.Background()
	reg := startCountingRegistry(t, nil)
	ref := reg.push(t, "machine:v1", map[string]string{contract.LabelCapacity: `{"cpu":"2"}`})
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	m.Config.Size = MaxConfigBytes + 1
	body, err := jsonMarshal(m)
	if err != nil {
		t.Fatal(err)
	}
	big, err := name.ParseReference(reg.host + "/machine:big")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(big, rawManifest{body: body, mt: m.MediaType}); err != nil {
		t.Fatal(err)
	}
	before := len(reg.requests())

	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}
	_, err = in.Labels(ctx, big.String(), authn.NewMultiKeychain())
	if err == nil || !strings.Contains(err.Error(), "config blob") {
		t.Fatalf("error %v, want the oversized config refused", err)
	}
	for _, p := range reg.requests()[before:] {
		if strings.Contains(p, "/blobs/"+m.Config.Digest.String()) {
			t.Fatalf("the oversized config blob was requested: %s", p)
		}
	}
}

// TestRegistryBodiesStayOutOfMessages: what a registry answers in a failed
// response's body never reaches the error (a condition and an event carry
// it).
func TestRegistryBodiesStayOutOfMessages(t *testing.T) {
	const sentinel = "registry-body-sentinel-4d2a"
	reg := startCountingRegistry(t, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/manifests/") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "internal failure: "+sentinel)
			return true
		}
		return false
	})
	in := &Inspector{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, AllowPrivate: true}
	_, err := in.Labels(context.Background(), reg.host+"/machine:v1", authn.NewMultiKeychain())
	if err == nil {
		t.Fatal("the failing registry was read")
	}
	if strings.Contains(err.Error(), sentinel) {
		t.Fatalf("the error carries the registry's response body: %v", err)
	}
	if !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("the error %v does not say what the registry answered", err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
