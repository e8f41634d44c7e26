package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is the certificate material of one control plane: a CA, the API
// server's serving certificate, client certificates for the admin user and
// the controller manager, and the service-account signing key pair. All keys
// are ECDSA P-256 (fast to generate; the API server signs ES256 tokens).
type PKI struct {
	Dir string // folder holding the PEM files below

	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	KCMCert, KCMKey         string
	SAKey, SAPub            string

	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

// NewPKI generates the control plane's certificates into dir. The serving
// certificate names 127.0.0.1, 10.0.0.1 (the kubernetes Service's address),
// the kubernetes Service's DNS names and servingIPs.
func NewPKI(dir string, servingIPs ...net.IP) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create PKI folder: %w", err)
	}
	p := &PKI{Dir: dir}
	path := func(n string) string { return filepath.Join(dir, n) }
	p.CACert, p.CAKey = path("ca.crt"), path("ca.key")
	p.ServingCert, p.ServingKey = path("apiserver.crt"), path("apiserver.key")
	p.AdminCert, p.AdminKey = path("admin.crt"), path("admin.key")
	p.KCMCert, p.KCMKey = path("controller-manager.crt"), path("controller-manager.key")
	p.SAKey, p.SAPub = path("sa.key"), path("sa.pub")

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate CA key: %w", err)
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "captf-env-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("failed to sign CA certificate: %w", err)
	}
	p.caCert, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("failed to parse CA certificate: %w", err)
	}
	p.caKey = caKey
	if err := writeCert(p.CACert, caDER); err != nil {
		return nil, err
	}
	if err := writeKey(p.CAKey, caKey); err != nil {
		return nil, err
	}

	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, servingIPs...),
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	if err := p.issue(serving, p.ServingCert, p.ServingKey); err != nil {
		return nil, err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "captf-env-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.issue(admin, p.AdminCert, p.AdminKey); err != nil {
		return nil, err
	}
	// The controller manager runs its controllers under its own identity;
	// membership of system:masters spares it the per-controller accounts.
	kcm := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:kube-controller-manager", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.issue(kcm, p.KCMCert, p.KCMKey); err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate service-account key: %w", err)
	}
	if err := writeKey(p.SAKey, saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("failed to encode service-account public key: %w", err)
	}
	if err := os.WriteFile(p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write service-account public key: %w", err)
	}
	return p, nil
}

func (p *PKI) issue(tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("failed to generate key for %s: %w", tmpl.Subject.CommonName, err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return fmt.Errorf("failed to draw a serial number: %w", err)
	}
	tmpl.SerialNumber = sn
	tmpl.NotBefore = p.caCert.NotBefore
	tmpl.NotAfter = p.caCert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return fmt.Errorf("failed to sign certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

// CAData returns the CA certificate in PEM form.
func (p *PKI) CAData() ([]byte, error) { return os.ReadFile(p.CACert) }

func writeCert(path string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("failed to write certificate %s: %w", filepath.Base(path), err)
	}
	return nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("failed to encode key %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("failed to write key %s: %w", filepath.Base(path), err)
	}
	return nil
}
