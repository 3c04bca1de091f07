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
	"sync"
	"time"
)

// pki is the throw-away certificate authority of one control plane. Every
// certificate it issues uses ECDSA P-256 keys, which are generated in well
// under a millisecond (RSA keys would cost a noticeable part of start-up).
type pki struct {
	dir    string // where the files live (Dir/pki)
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte

	mu     sync.Mutex
	serial int64
}

// certValidity is how long issued certificates stay valid: a local cluster
// is short-lived, but a long-running `local up` must not hit an expiry.
const certValidity = 10 * 365 * 24 * time.Hour

// newPKI creates a fresh CA and writes ca.crt and ca.key into dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dovetail-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("self-signing the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, caCert: cert, caKey: key, caPEM: pemCert(der), serial: 1}
	keyPEM, err := pemKey(key)
	if err != nil {
		return nil, err
	}
	if err := p.write("ca", p.caPEM, keyPEM); err != nil {
		return nil, err
	}
	return p, nil
}

// CAFile is the path of the CA certificate.
func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.crt") }

// issue signs a new key pair for tmpl (serial, validity and issuer are
// filled in) and returns the PEM encoded certificate and key.
func (p *pki) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	p.mu.Unlock()
	now := time.Now()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(certValidity)
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the certificate of %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err = pemKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), keyPEM, nil
}

// servingCert issues the loopback serving certificate shared by every
// component (kube-apiserver, kube-controller-manager, kube-scheduler) and
// writes <name>.crt and <name>.key.
func (p *pki) servingCert(name string, serviceIP net.IP) (certFile, keyFile string, err error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	if serviceIP != nil {
		ips = append(ips, serviceIP)
	}
	certPEM, keyPEM, err := p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return "", "", err
	}
	if err := p.write(name, certPEM, keyPEM); err != nil {
		return "", "", err
	}
	return filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key"), nil
}

// clientCert issues a client certificate for user in groups. The
// kube-apiserver maps the common name to the user name and each
// organization to a group.
func (p *pki) clientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// serviceAccountKeys writes the key pair that signs service-account tokens
// (sa.key, sa.pub).
func (p *pki) serviceAccountKeys() (keyFile, pubFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyFile, pubFile = filepath.Join(p.dir, "sa.key"), filepath.Join(p.dir, "sa.pub")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, nil
}

func (p *pki) write(name string, certPEM, keyPEM []byte) error {
	if err := os.WriteFile(filepath.Join(p.dir, name+".crt"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.dir, name+".key"), keyPEM, 0o600)
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
