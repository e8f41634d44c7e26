package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probe runs the startup, readiness and liveness probes of a running main
// container until ctx ends, as the kubelet does: readiness and liveness
// wait for the startup probe; the container is ready once its readiness
// probe passes (at once when it has none) and stops being ready when it
// fails; a startup or liveness probe failing failureThreshold times in a
// row sends the grace period to kill the container with on unhealthy.
// Probes dial the pod's address from the host.
func (w *podWorker) probe(ctx context.Context, pod *corev1.Pod, c *corev1.Container, st *containerState, unhealthy chan<- time.Duration) {
	w.mu.Lock()
	started, host := st.started.Time, w.podIP
	w.mu.Unlock()
	killGrace := func(p *corev1.Probe) time.Duration {
		grace := int64(30)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		if p.TerminationGracePeriodSeconds != nil {
			grace = *p.TerminationGracePeriodSeconds
		}
		return time.Duration(grace) * time.Second
	}
	log := w.k.log.WithValues("pod", w.ns+"/"+w.nm, "container", c.Name)

	if p := c.StartupProbe; p != nil {
		passed := false
		probeLoop(ctx, started, p, func(ctx context.Context) error { return runProbe(ctx, p, c, host) }, func(ok bool, err error) bool {
			passed = ok
			if !ok {
				log.Info("Startup probe failed", "error", err.Error())
			}
			return true
		})
		if !passed {
			if ctx.Err() == nil {
				unhealthy <- killGrace(p)
			}
			return
		}
	}
	w.mu.Lock()
	st.startupDone = true
	st.ready = c.ReadinessProbe == nil
	w.mu.Unlock()
	w.report(ctx)

	done := make(chan struct{})
	if p := c.ReadinessProbe; p != nil {
		go func() {
			defer close(done)
			probeLoop(ctx, started, p, func(ctx context.Context) error { return runProbe(ctx, p, c, host) }, func(ok bool, err error) bool {
				if !ok {
					log.V(1).Info("Readiness probe failed", "error", err.Error())
				}
				w.mu.Lock()
				changed := st.ready != ok
				st.ready = ok
				w.mu.Unlock()
				if changed {
					w.report(ctx)
				}
				return false
			})
		}()
	} else {
		close(done)
	}
	if p := c.LivenessProbe; p != nil {
		probeLoop(ctx, started, p, func(ctx context.Context) error { return runProbe(ctx, p, c, host) }, func(ok bool, err error) bool {
			if ok {
				return false
			}
			log.Info("Liveness probe failed", "error", err.Error())
			unhealthy <- killGrace(p)
			return true
		})
	}
	<-done
}

// probeLoop runs probe every periodSeconds from initialDelaySeconds after
// started until ctx ends or onChange returns true. onChange is called when
// the outcome settles or turns: ok after successThreshold passes in a row,
// not ok (with the last error) after failureThreshold failures in a row.
func probeLoop(ctx context.Context, started time.Time, p *corev1.Probe, probe func(context.Context) error, onChange func(ok bool, err error) bool) {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	successes, failures := max(p.SuccessThreshold, 1), max(p.FailureThreshold, 1)
	next := started.Add(time.Duration(p.InitialDelaySeconds) * time.Second)
	var okRun, failRun int32
	state := 0 // 0 unsettled, 1 ok, -1 failing
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next = time.Now().Add(period)
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			okRun, failRun = okRun+1, 0
			if okRun >= successes && state != 1 {
				state = 1
				if onChange(true, nil) {
					return
				}
			}
		} else {
			okRun, failRun = 0, failRun+1
			if failRun >= failures && state != -1 {
				state = -1
				if onChange(false, err) {
					return
				}
			}
		}
	}
}

// probeClient makes HTTP probes as the kubelet does: no certificate check,
// no connection reuse, redirects followed on the same host only (a
// redirect elsewhere counts as its 3xx answer).
var probeClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes never verify, as the kubelet's
		DisableKeepAlives: true,
		Proxy:             nil,
	},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		return nil
	},
}

// runProbe runs one httpGet or tcpSocket probe of container c against host
// (the pod's address) within ctx. exec and grpc probes are not run: they
// pass.
func runProbe(ctx context.Context, p *corev1.Probe, c *corev1.Container, host string) error {
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := probePort(g.Port, c)
		if err != nil {
			return err
		}
		if g.Host != "" {
			host = g.Host
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		path := g.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "kube-probe/captf-env")
		req.Header.Set("Accept", "*/*")
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				req.Host = h.Value
				continue
			}
			req.Header.Add(h.Name, h.Value)
		}
		res, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 10<<10))
		_ = res.Body.Close()
		if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", res.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := probePort(p.TCPSocket.Port, c)
		if err != nil {
			return err
		}
		if p.TCPSocket.Host != "" {
			host = p.TCPSocket.Host
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return nil
}

// probePort resolves a probe's port: a number, or the name of one of the
// container's ports.
func probePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("invalid probe port %d", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	return 0, fmt.Errorf("probe port %q names no port of container %s", port.StrVal, c.Name)
}
