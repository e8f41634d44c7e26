// Package admission serves admission webhooks of in-process managers on the
// local environment: a generated CA and a serving certificate for
// 127.0.0.1, the webhook configurations of a manifest pointed at that
// loopback server (url clientConfig with the CA as caBundle), and their
// installation. Cluster API's and CAPTF's webhooks are served this way.
package admission

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Certs writes a CA and a serving certificate for 127.0.0.1 into dir
// (tls.crt, tls.key, as controller-runtime's webhook server reads them) and
// returns the CA in PEM form for the webhook configurations' caBundle.
func Certs(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create webhook certificate folder: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate webhook CA key: %w", err)
	}
	notBefore := time.Now().Add(-time.Hour)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "captf-env-webhook-ca"},
		NotBefore: notBefore, NotAfter: notBefore.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign webhook CA: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, fmt.Errorf("failed to parse webhook CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate webhook key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: ca.NotBefore, NotAfter: ca.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode webhook key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write webhook certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write webhook key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func NewServer(certDir string, port int) webhook.Server {
	return webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
}

func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("failed to find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitServer waits until the manager's webhook server answers TLS.
func WaitServer(ctx context.Context, srv webhook.Server, name string) error {
	check := srv.StartedChecker()
	for {
		if err := check(nil); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the %s webhook server did not start", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitTLS waits until a webhook server in another process answers TLS on
// 127.0.0.1:port with a certificate signed by the CA in caPEM.
func WaitTLS(ctx context.Context, port int, caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate to check the webhook server against")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	d := &tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no webhook server answered TLS on %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Configs reads a provider's webhook manifests (as generated for an
// in-cluster Service) and points every webhook at the loopback server
// instead; configurations get the provider's name as prefix.
func Configs(manifest, prefix string, port int, caBundle []byte) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	b, err := os.ReadFile(manifest)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to read webhook manifests: %w", err)
	}
	clientConfig := func(svc *admissionregistrationv1.ServiceReference) (admissionregistrationv1.WebhookClientConfig, error) {
		if svc == nil || svc.Path == nil {
			return admissionregistrationv1.WebhookClientConfig{}, errors.New("webhook without a service path")
		}
		u := (&url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", port), Path: *svc.Path}).String()
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}, nil
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("failed to parse %s: %w", manifest, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
				return nil, nil, fmt.Errorf("failed to decode %s: %w", u.GetName(), err)
			}
			c.Name = prefix + "-" + c.Name
			for i := range c.Webhooks {
				if c.Webhooks[i].ClientConfig, err = clientConfig(c.Webhooks[i].ClientConfig.Service); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", c.Webhooks[i].Name, err)
				}
			}
			mutating = append(mutating, &c)
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
				return nil, nil, fmt.Errorf("failed to decode %s: %w", u.GetName(), err)
			}
			c.Name = prefix + "-" + c.Name
			for i := range c.Webhooks {
				if c.Webhooks[i].ClientConfig, err = clientConfig(c.Webhooks[i].ClientConfig.Service); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", c.Webhooks[i].Name, err)
				}
			}
			validating = append(validating, &c)
		}
	}
	return mutating, validating, nil
}

// Install creates (or replaces) the configurations and returns a
// function that deletes them.
func Install(ctx context.Context, cfg *rest.Config, mutating []*admissionregistrationv1.MutatingWebhookConfiguration,
	validating []*admissionregistrationv1.ValidatingWebhookConfiguration) (func(), error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to build client: %w", err)
	}
	api := cs.AdmissionregistrationV1()
	for _, c := range mutating {
		_ = api.MutatingWebhookConfigurations().Delete(ctx, c.Name, metav1.DeleteOptions{})
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to install webhook configuration %s: %w", c.Name, err)
		}
	}
	for _, c := range validating {
		_ = api.ValidatingWebhookConfigurations().Delete(ctx, c.Name, metav1.DeleteOptions{})
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to install webhook configuration %s: %w", c.Name, err)
		}
	}
	return func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, c := range mutating {
			_ = api.MutatingWebhookConfigurations().Delete(dctx, c.Name, metav1.DeleteOptions{})
		}
		for _, c := range validating {
			_ = api.ValidatingWebhookConfigurations().Delete(dctx, c.Name, metav1.DeleteOptions{})
		}
	}, nil
}

// InstallWhenServing waits until srv (the manager's webhook server, named
// name in errors) answers, then installs the validating configurations of
// manifest (config/webhook's, say) rewritten by Configs to call 127.0.0.1:port
// with caBundle, and returns the function that deletes them.
func InstallWhenServing(ctx context.Context, cfg *rest.Config, srv webhook.Server, name, manifest string, port int, caBundle []byte) (func(), error) {
	if err := WaitServer(ctx, srv, name); err != nil {
		return nil, err
	}
	_, validating, err := Configs(manifest, strings.ToLower(name), port, caBundle)
	if err != nil {
		return nil, err
	}
	return Install(ctx, cfg, nil, validating)
}
