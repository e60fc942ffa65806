package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/tlsserver/tlstest"
)

// tlsCall posts tools/list to endpoint on a new connection of a client
// that trusts ca and presents certs, with token when it is not "". It
// returns the status, the answer's header and the serial of the
// certificate porthole served.
func tlsCall(ca *tlstest.CA, endpoint, token string, certs ...tls.Certificate) (int, http.Header, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: tlstest.Pool(ca), Certificates: certs}}}
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, resp.TLS.PeerCertificates[0].SerialNumber.String(), err
}

// TestPortholeServesTLSWithClientCertificatesAndRotatesItsCertificate:
// porthole's binary, against the real Temporal dev server, serves its MCP
// endpoint over TLS with certificates made here and a client CA: a client
// that trusts the CA and presents a certificate is served, with HSTS, and
// the certificate's subject is in the audit records; a client without a
// certificate is refused at the handshake; a certificate without a token
// is refused 401 (a second factor, not a replacement). The certificate and
// key are replaced on disk while calls run: no call fails, and new
// connections get the new certificate.
func TestPortholeServesTLSWithClientCertificatesAndRotatesItsCertificate(t *testing.T) {
	t.Parallel()
	ca, dir := tlstest.NewCA(t, "porthole e2e CA"), t.TempDir()
	first, second := ca.Server(t), ca.Server(t)
	certFile, keyFile := first.Write(t, dir)
	caFile := filepath.Join(dir, "clients.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint, token, p, auditLog := serveHTTP(t, "PORTHOLE_TLS_CERT_FILE="+certFile, "PORTHOLE_TLS_KEY_FILE="+keyFile, "PORTHOLE_TLS_CLIENT_CA_FILE="+caFile)
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("the endpoint is %s", endpoint)
	}
	agent := ca.Client(t, "vendor-agent", "vendor").TLS(t)
	code, header, serial, err := tlsCall(ca, endpoint, token, agent)
	if err != nil || code != http.StatusOK || serial != first.Cert.SerialNumber.String() ||
		header.Get("Strict-Transport-Security") != "max-age=31536000; includeSubDomains" {
		t.Fatalf("a client with a certificate and a token: %d %v %v", code, header, err)
	}
	if code, _, _, err := tlsCall(ca, endpoint, token); err == nil {
		t.Errorf("a client without a certificate was served: %d", code)
	}
	if code, _, _, err := tlsCall(ca, endpoint, "", agent); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a certificate without a token: %d %v", code, err)
	}

	load := tlstest.StartLoad(t, 3, 20*time.Millisecond, func() (string, error) {
		code, _, serial, err := tlsCall(ca, endpoint, token, agent)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d", code)
		}
		return serial, err
	})
	time.Sleep(time.Second)
	if err := os.WriteFile(certFile, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past a check between the two writes
	if err := os.WriteFile(keyFile, second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	sawSecond := load.Await(second.Cert.SerialNumber.String(), 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	if calls, failures := load.Stop(); !sawSecond || failures > 0 {
		t.Fatalf("%d calls during the rotation, %d failed; the new certificate served: %v", calls, failures, sawSecond)
	}
	// A check between the writes read a certificate and a key that did not
	// match, and kept the previous pair.
	if !strings.Contains(p.logs.String(), "the previous certificate stays") {
		t.Errorf("no check fell between the two writes:\n%s", p.logs.String())
	}

	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{`"kind":"call"`, `"kind":"result"`, `"kind":"denial"`} {
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			found = found || strings.Contains(line, kind) && strings.Contains(line, `"clientCert":"\"CN=vendor-agent,O=vendor\""`)
		}
		if !found {
			t.Errorf("no %s record names the client certificate:\n%.2000s", kind, b)
		}
	}
	verify := exec.Command(portholeBin(t), "audit", "verify", "--key-file", auditKeyOf(auditLog), auditLog)
	verify.Env = baseEnv()
	if out, err := verify.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK:") {
		t.Fatalf("porthole audit verify: %v\n%s", err, out)
	}
}
