package kubelet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"time"
)

// logServer is the part of a kubelet's HTTPS endpoint the API server
// proxies pod logs to (GET /containerLogs/<ns>/<pod>/<container>), so that
// `kubectl logs` and the pods/log subresource work against the process
// kubelet. It serves the container's log file as it is now (no follow) and
// authenticates nobody: it listens on the Node's address only (127.0.0.1,
// or the pod network's host address, which only the host and the
// environment's pods reach).
type logServer struct {
	srv  *http.Server
	port int
}

func (k *Kubelet) startLogServer() (*logServer, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(k.HostIP(), "0"))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		path, err := k.LogPath(r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		defer func() { _ = f.Close() }()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, f)
	})
	s := &logServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}},
		port: ln.Addr().(*net.TCPAddr).Port,
	}
	go func() {
		if err := s.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			k.log.Error(err, "The log server stopped")
		}
	}()
	return s, nil
}

func (s *logServer) stop() {
	if s != nil {
		_ = s.srv.Close()
	}
}

// selfSigned is a throwaway serving certificate for 127.0.0.1 (the API
// server does not verify a kubelet's certificate without
// --kubelet-certificate-authority).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "captf-env-kubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
