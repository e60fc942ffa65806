package tlsserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/tlsserver/tlstest"
)

// serve serves s's TLS on loopback, answering each request with the
// subject of its client certificate, until the test ends.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, Subject(r.TLS))
	}), ErrorLog: nil}
	go srv.Serve(tls.NewListener(ln, s.Config()))
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

// serveSigned serves, until the test ends, a certificate ca signed and,
// when clientCAs is not nil, requires client certificates of the CAs in
// it; it returns the server, its URL and the client CA file.
func serveSigned(t *testing.T, ca *tlstest.CA, clientCAs []byte) (s *Server, url, caFile string) {
	t.Helper()
	dir := t.TempDir()
	files := Files{}
	files.Cert, files.Key = ca.Server(t).Write(t, dir)
	if clientCAs != nil {
		files.ClientCA = filepath.Join(dir, "clients.pem")
		if err := os.WriteFile(files.ClientCA, clientCAs, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(files, zap.NewNop())
	if err != nil || s.RequiresClientCertificates() != (clientCAs != nil) {
		t.Fatal(err)
	}
	return s, serve(t, s), files.ClientCA
}

// client trusts ca and presents certs, on a new connection each request.
func client(ca *tlstest.CA, certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: tlstest.Pool(ca), Certificates: certs}}}
}

// get is the body of a GET of url by c, and the serial of the
// certificate served.
func get(c *http.Client, url string) (string, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.TLS.PeerCertificates[0].SerialNumber.String(), err
}

// TestACertificateRotatedWhileCallsRunFailsNoCall: the certificate and key
// are replaced on disk, one file after the other, while clients make
// calls on new connections; no call fails, and the new certificate is
// served once both are written.
func TestACertificateRotatedWhileCallsRunFailsNoCall(t *testing.T) {
	t.Parallel()
	ca, dir := tlstest.NewCA(t, "porthole test CA"), t.TempDir()
	first, second := ca.Server(t), ca.Server(t)
	certFile, keyFile := first.Write(t, dir)
	s, err := New(Files{Cert: certFile, Key: keyFile}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Watch(ctx, 5*time.Millisecond)
	url, c := serve(t, s), client(ca)
	load := tlstest.StartLoad(t, 4, time.Millisecond, func() (string, error) {
		_, serial, err := get(c, url)
		return serial, err
	})
	time.Sleep(200 * time.Millisecond)
	// One file, then the other, as a hand or a tool that is not
	// cert-manager's atomic swap would write them.
	if err := os.WriteFile(certFile, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := os.WriteFile(keyFile, second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	sawSecond := load.Await(second.Cert.SerialNumber.String(), 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	if calls, failures := load.Stop(); !sawSecond || failures > 0 || calls < 20 {
		t.Fatalf("%d calls, %d failed; the new certificate served: %v", calls, failures, sawSecond)
	}
}

// TestAClientWithoutACertificateIsRefusedWhenOneIsRequired: with a client
// CA, a client with no certificate, or one another CA signed, is refused
// at the handshake; one the CA signed is served, and its subject is what
// the gateway audits.
func TestAClientWithoutACertificateIsRefusedWhenOneIsRequired(t *testing.T) {
	t.Parallel()
	ca, other := tlstest.NewCA(t, "porthole test CA"), tlstest.NewCA(t, "another CA")
	_, url, _ := serveSigned(t, ca, ca.PEM)
	if body, _, err := get(client(ca), url); err == nil {
		t.Errorf("a client without a certificate was served: %q", body)
	}
	if body, _, err := get(client(ca, other.Client(t, "agent", "vendor").TLS(t)), url); err == nil {
		t.Errorf("a certificate of another CA was served: %q", body)
	}
	body, _, err := get(client(ca, ca.Client(t, "agent", "vendor").TLS(t)), url)
	if err != nil || body != "CN=agent,O=vendor" {
		t.Errorf("the CA's client certificate: %q, %v", body, err)
	}
}

// TestOnlyTLS12AndLaterIsServed: a client offering at most TLS 1.1 is
// refused.
func TestOnlyTLS12AndLaterIsServed(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "porthole test CA")
	_, url, _ := serveSigned(t, ca, nil)
	c := client(ca)
	c.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
	if _, _, err := get(c, url); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
}

// TestBadTLSFilesAreRefusedWithASentence: at start, a missing key, a key
// of another certificate, and a client CA file with no certificate are
// each refused, naming the file.
func TestBadTLSFilesAreRefusedWithASentence(t *testing.T) {
	t.Parallel()
	ca, dir := tlstest.NewCA(t, "porthole test CA"), t.TempDir()
	certFile, keyFile := ca.Server(t).Write(t, dir)
	otherKey := filepath.Join(dir, "other.key")
	if err := os.WriteFile(otherKey, ca.Server(t).KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string]Files{
		"no key":            {Cert: certFile},
		"a missing key":     {Cert: certFile, Key: filepath.Join(dir, "absent.key")},
		"another's key":     {Cert: certFile, Key: otherKey},
		"a CA file not PEM": {Cert: certFile, Key: keyFile, ClientCA: notPEM},
	} {
		if _, err := New(files, zap.NewNop()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestAClientOfferingOnlyCBCIsRefused: at TLS 1.2 the listener takes only
// the forward-secret AEAD suites porthole's own links offer.
func TestAClientOfferingOnlyCBCIsRefused(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "porthole test CA")
	_, url, _ := serveSigned(t, ca, nil)
	c := client(ca)
	cfg := c.Transport.(*http.Transport).TLSClientConfig
	cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}
	if _, _, err := get(c, url); err == nil {
		t.Error("a client offering only a CBC suite was served")
	}
	cfg.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	if _, _, err := get(c, url); err != nil {
		t.Errorf("a client offering an AEAD suite: %v", err)
	}
}

// TestTheClientCAsAreReadAgain: a CA added to the file is trusted, and a
// CA taken out of it is not, from the next check on; a certificate whose
// name is only in a URI SAN is named by it.
func TestTheClientCAsAreReadAgain(t *testing.T) {
	t.Parallel()
	first, second := tlstest.NewCA(t, "first CA"), tlstest.NewCA(t, "second CA")
	s, url, caFile := serveSigned(t, first, first.PEM)
	ofFirst, ofSecond := first.Client(t, "a", "first").TLS(t), second.Client(t, "b", "second").TLS(t)
	if _, _, err := get(client(first, ofSecond), url); err == nil {
		t.Fatal("the second CA's client was served before its CA was added")
	}
	if err := os.WriteFile(caFile, append(append([]byte{}, first.PEM...), second.PEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if body, _, err := get(client(first, ofSecond), url); err != nil || body != "CN=b,O=second" {
		t.Errorf("the added CA's client: %q %v", body, err)
	}
	if err := os.WriteFile(caFile, second.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if _, _, err := get(client(first, ofFirst), url); err == nil {
		t.Error("the removed CA's client was served")
	}
	spiffe := second.ClientURI(t, "spiffe://example.org/agent").TLS(t)
	if body, _, err := get(client(first, spiffe), url); err != nil || body != "URI:spiffe://example.org/agent" {
		t.Errorf("a certificate named only by a URI SAN: %q %v", body, err)
	}
	if err := os.WriteFile(caFile, []byte("garbled"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(); err == nil {
		t.Error("a garbled CA file was taken")
	}
	if changed, err := s.Reload(); changed || err != nil {
		t.Errorf("the same garbled file again: %v %v, want it not reported twice", changed, err)
	}
	if _, _, err := get(client(first, spiffe), url); err != nil {
		t.Errorf("the CAs read last stay while the file is garbled: %v", err)
	}
}
