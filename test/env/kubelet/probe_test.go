package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := net.ResolveTCPAddr("tcp", rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.IP.String(), u.Port
}

func TestRunProbe(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("X-Probe") != "yes" || r.Host != "probe.example" {
			http.Error(w, "unexpected request "+r.URL.Path+" "+r.Host, http.StatusTeapot)
			return
		}
		w.WriteHeader(int(status.Load()))
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler) // a certificate nobody trusts
	defer secure.Close()

	ctx := context.Background()
	headers := []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "probe.example"}}
	for _, tc := range []struct {
		name   string
		srv    *httptest.Server
		scheme corev1.URIScheme
	}{{"HTTP", plain, corev1.URISchemeHTTP}, {"HTTPS without verification", secure, corev1.URISchemeHTTPS}} {
		t.Run(tc.name, func(t *testing.T) {
			host, port := hostPort(t, tc.srv.Listener.Addr().String())
			c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
			p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "healthz", Port: intstr.FromString("web"), Scheme: tc.scheme, HTTPHeaders: headers}}}
			status.Store(http.StatusOK)
			if err := runProbe(ctx, p, c, host); err != nil {
				t.Fatalf("200: %v", err)
			}
			status.Store(http.StatusFound)
			if err := runProbe(ctx, p, c, host); err != nil {
				t.Fatalf("302 without a location counts as success: %v", err)
			}
			status.Store(http.StatusServiceUnavailable)
			if err := runProbe(ctx, p, c, host); err == nil {
				t.Fatal("503 passed")
			}
			p.HTTPGet.Port = intstr.FromString("nope")
			if err := runProbe(ctx, p, c, host); err == nil {
				t.Fatal("an unknown port name passed")
			}
		})
	}

	t.Run("tcpSocket", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port := hostPort(t, ln.Addr().String())
		p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
		if err := runProbe(ctx, p, &corev1.Container{}, "127.0.0.1"); err != nil {
			t.Fatalf("open port: %v", err)
		}
		_ = ln.Close()
		if err := runProbe(ctx, p, &corev1.Container{}, "127.0.0.1"); err == nil {
			t.Fatal("closed port " + strconv.Itoa(port) + " passed")
		}
	})
}

func TestProbeLoopThresholds(t *testing.T) {
	// A probe that fails twice, passes three times, then fails for good.
	results := []bool{false, false, true, true, true, false, false, false, false}
	var i atomic.Int32
	probe := func(context.Context) error {
		n := int(i.Add(1)) - 1
		if n < len(results) && results[n] {
			return nil
		}
		return context.DeadlineExceeded
	}
	p := &corev1.Probe{PeriodSeconds: 1, SuccessThreshold: 2, FailureThreshold: 3}
	type change struct {
		ok    bool
		after int32
	}
	var changes []change
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A start in the past makes the first probe due at once; the others
	// follow a second apart (the shortest period).
	start := time.Now().Add(-time.Hour)
	probeLoop(ctx, start, p, probe, func(ok bool, _ error) bool {
		changes = append(changes, change{ok, i.Load()})
		return !ok
	})
	// Two failures are not three: the outcome stays unsettled until the
	// second pass in a row (4th probe), then fails on the third failure
	// in a row (8th probe), where onChange stops the loop.
	want := []change{{true, 4}, {false, 8}}
	if len(changes) != len(want) || changes[0] != want[0] || changes[1] != want[1] {
		t.Fatalf("changes %+v, want %+v", changes, want)
	}
}
