// Package tlstest makes the certificates the TLS tests use: a CA, and
// server and client certificates it signs (ECDSA P-256, valid for an
// hour), made in the test, never read from the tree.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of a test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA's certificate, as a client or a server trusts it.
	PEM []byte
}

// Pair is a certificate a CA signed, with its key, in PEM.
type Pair struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

// NewCA is a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Server is a server certificate for 127.0.0.1, ::1 and localhost.
func (ca *CA) Server(t testing.TB) Pair {
	t.Helper()
	return ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: "porthole"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
}

// ClientURI is a client certificate with an empty subject and its name
// only in a URI SAN, as a SPIFFE identity carries it.
func (ca *CA) ClientURI(t testing.TB, uri string) Pair {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	return ca.sign(t, &x509.Certificate{URIs: []*url.URL{u}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// Client is a client certificate of the subject CN=cn, O=org.
func (ca *CA) Client(t testing.TB, cn, org string) Pair {
	t.Helper()
	return ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = nextSerial(), time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return Pair{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
}

// TLS is p as a certificate a client presents.
func (p Pair) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Write writes p's certificate and key to cert and key in dir, and
// returns their paths.
func (p Pair) Write(t testing.TB, dir string) (cert, key string) {
	t.Helper()
	cert, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, p.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, p.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// Pool is a pool of the CAs' certificates, as a client trusts them.
func Pool(cas ...*CA) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca.Cert)
	}
	return pool
}

// Load is calls made from several goroutines until Stop, as clients keep
// calling while a certificate is rotated.
type Load struct {
	calls, failures atomic.Int64
	seen            sync.Map // the serials of the certificates served
	stop            chan struct{}
	wg              sync.WaitGroup
}

// StartLoad makes calls from n goroutines, each pausing pause between
// calls; call returns the serial of the certificate served, or an error.
func StartLoad(t testing.TB, n int, pause time.Duration, call func() (string, error)) *Load {
	l := &Load{stop: make(chan struct{})}
	for range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				case <-time.After(pause):
				}
				serial, err := call()
				l.calls.Add(1)
				if err != nil {
					l.failures.Add(1)
					t.Errorf("a call while the certificate was rotated: %v", err)
				}
				l.seen.Store(serial, true)
			}
		}()
	}
	return l
}

// Await waits up to d for a call to be served the certificate of serial.
func (l *Load) Await(serial string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, ok := l.seen.Load(serial); ok {
			return true
		}
	}
	return false
}

// Stop ends the calls and says how many were made and how many failed.
func (l *Load) Stop() (calls, failures int64) {
	close(l.stop)
	l.wg.Wait()
	return l.calls.Load(), l.failures.Load()
}
