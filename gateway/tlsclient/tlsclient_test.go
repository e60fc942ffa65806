package tlsclient

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every suite offered has forward secrecy (ECDHE) and authenticated
// encryption (GCM or ChaCha20-Poly1305), and none is one Go calls insecure.
func TestOnlyForwardSecretAEADSuitesAreOffered(t *testing.T) {
	known := map[uint16]string{}
	for _, s := range tls.CipherSuites() {
		known[s.ID] = s.Name
	}
	for _, id := range Suites {
		name, ok := known[id]
		if !ok {
			t.Errorf("suite %#x is not one of Go's secure suites", id)
			continue
		}
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("%s is offered", name)
		}
	}
}

// A server that speaks TLS 1.2 with CBC suites only finds no suite in
// common with porthole, though Go's defaults would have agreed on one; it
// gets one of porthole's suites where it has any.
func TestAServerOfferingOnlyCBCIsRefused(t *testing.T) {
	serve := func(suites ...uint16) string {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.TLS = &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: suites}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	dial := func(addr string, cfg *tls.Config) (*tls.Conn, error) {
		cfg.InsecureSkipVerify = true // the test server's certificate; suites are what is tested
		return tls.DialWithDialer(&net.Dialer{}, "tcp", addr, cfg)
	}
	cbc := serve(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA)
	if c, err := dial(cbc, &tls.Config{}); err != nil {
		t.Fatalf("Go's defaults do not reach the CBC server, so this test shows nothing: %v", err)
	} else {
		c.Close()
	}
	if c, err := dial(cbc, Config()); err == nil {
		c.Close()
		t.Errorf("porthole's configuration agreed on %s", tls.CipherSuiteName(c.ConnectionState().CipherSuite))
	}
	mixed := serve(tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
	c, err := dial(mixed, Config())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().CipherSuite; got != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("agreed on %s", tls.CipherSuiteName(got))
	}
}
