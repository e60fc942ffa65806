package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// rootsChild marks the run of this test binary that checks the chain with
// no roots on the machine.
const rootsChild = "PORTHOLE_TEST_ROOTS_CHILD"

// TestTheBuiltInRootsVerifyAPublicChainWithNoneOnTheMachine: with no CA
// roots on the machine, as in the release image, the binary still
// verifies a server's chain to a public web-PKI root, the kind of chain
// Temporal Cloud's endpoints present: testdata/roots/public-chain.pem is
// Google's (www.google.com, GTS CA 1C3, to GTS Root R1; from Go's
// crypto/x509 tests), checked at a time it was valid. It runs in a child of this test
// binary, whose environment names no roots before any are loaded. Without
// the built-in roots the chain's authority is unknown.
func TestTheBuiltInRootsVerifyAPublicChainWithNoneOnTheMachine(t *testing.T) {
	if os.Getenv(rootsChild) == "1" {
		verifyPublicChain(t)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("SSL_CERT_FILE and SSL_CERT_DIR name a machine's roots only on Linux (the release image's OS); elsewhere the platform's verifier answers")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTheBuiltInRootsVerifyAPublicChainWithNoneOnTheMachine$", "-test.v")
	cmd.Env = append(os.Environ(), rootsChild+"=1", "SSL_CERT_FILE=/nonexistent", "SSL_CERT_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("with no roots on the machine: %v\n%s", err, out)
	}
}

// verifyPublicChain verifies the public chain against the roots Go finds.
func verifyPublicChain(t *testing.T) {
	b, err := os.ReadFile("testdata/roots/public-chain.pem")
	if err != nil {
		t.Fatal(err)
	}
	var certs []*x509.Certificate
	for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	// Roots left nil: the machine's, or else the built-in ones.
	chains, err := certs[0].Verify(x509.VerifyOptions{Intermediates: intermediates, DNSName: "www.google.com",
		CurrentTime: time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("the public chain: %v", err)
	}
	if root := chains[0][len(chains[0])-1]; root.Subject.CommonName != "GTS Root R1" {
		t.Fatalf("verified to %s", root.Subject)
	}
}
