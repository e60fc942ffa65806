package temporaltest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// TLSProxy terminates TLS on loopback and forwards the plaintext to a dev
// server, so that tests can dial Temporal the way production does: over TLS,
// with an API key that the plaintext dev server accepts and ignores.
type TLSProxy struct {
	// Addr is host:port of the TLS side.
	Addr string
	// CAFile verifies the proxy's certificate, issued for "localhost" and
	// 127.0.0.1.
	CAFile string

	ln   net.Listener
	wg   sync.WaitGroup
	dir  string
	stop chan struct{}
}

// StartTLSProxy listens on a free loopback port and forwards to target.
func StartTLSProxy(target string) (*TLSProxy, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "porthole test proxy"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "porthole-tls-proxy-")
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	// gRPC insists on ALPN h2.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, err
	}
	p := &TLSProxy{Addr: ln.Addr().String(), CAFile: caFile, ln: ln, dir: dir, stop: make(chan struct{})}
	p.wg.Add(1)
	go p.serve(target)
	return p, nil
}

func (p *TLSProxy) serve(target string) {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			up, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, c); done <- struct{}{} }()
			go func() { io.Copy(c, up); done <- struct{}{} }()
			select {
			case <-done:
			case <-p.stop:
			}
		}()
	}
}

// Close stops the proxy and removes its certificate.
func (p *TLSProxy) Close() {
	close(p.stop)
	p.ln.Close()
	p.wg.Wait()
	os.RemoveAll(p.dir)
}
