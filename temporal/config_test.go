package temporal

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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/porthole-dev/porthole/gateway/tlsclient"
)

func TestConfigValidateRefusesHalfFilledConfiguration(t *testing.T) {
	t.Parallel()
	ok := Config{Address: "localhost:7233", Namespace: "default"}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string // a phrase the refusal must contain; empty means accepted
	}{
		{"a plain local configuration is accepted", func(c *Config) {}, ""},
		{"an API key over TLS is accepted", func(c *Config) { c.APIKey = "k"; c.TLS = true }, ""},
		{"an API key alone implies TLS and is accepted", func(c *Config) { c.APIKey = "k" }, ""},
		{"mTLS with certificate and key is accepted", func(c *Config) { c.CertFile = "c.pem"; c.KeyFile = "k.pem" }, ""},
		{"no address is refused", func(c *Config) { c.Address = "" }, "no Temporal address"},
		{"a blank address is refused", func(c *Config) { c.Address = "  " }, "no Temporal address"},
		{"no namespace is refused", func(c *Config) { c.Namespace = "" }, "no Temporal namespace"},
		{"an API key with TLS disabled is refused", func(c *Config) { c.APIKey = "k"; c.TLSDisabled = true }, "plaintext"},
		{"an API key and a client certificate together are refused", func(c *Config) { c.APIKey = "k"; c.CertFile = "c.pem"; c.KeyFile = "k.pem" }, "choose one"},
		{"a certificate without its key is refused", func(c *Config) { c.CertFile = "c.pem" }, "without its key"},
		{"a key without its certificate is refused", func(c *Config) { c.KeyFile = "k.pem" }, "without its certificate"},
		{"skipped host verification is refused", func(c *Config) { c.TLS = true; c.DisableHostVerification = true }, "host verification"},
		{"TLS files with TLS disabled are refused", func(c *Config) { c.TLSDisabled = true; c.CAFile = "ca.pem" }, "TLS is disabled"},
		{"a namespace with whitespace is refused", func(c *Config) { c.Namespace = "de fault" }, "whitespace"},
		{"gzip is accepted", func(c *Config) { c.Compression = "gzip" }, ""},
		{"no compression is accepted", func(c *Config) { c.Compression = "none" }, ""},
		{"another compression is refused", func(c *Config) { c.Compression = "zstd" }, "gzip or none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want a refusal containing %q", tc.want)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want ErrConfig containing %q", err, tc.want)
			}
		})
	}
}

func TestAPIKeyNeverTravelsInPlaintext(t *testing.T) {
	t.Parallel()
	c := Config{Address: "a:1", Namespace: "n", APIKey: "k"}
	if !c.usesTLS() {
		t.Fatal("an API key without an explicit TLS setting must turn TLS on")
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil || tlsCfg == nil {
		t.Fatalf("tlsConfig() = %v, %v; want a TLS configuration", tlsCfg, err)
	}
}

// The client certificate and key are read once: what porthole redacts is
// what it presents, even if the files change or go before it dials.
func TestClientCertificateIsReadOnce(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "porthole client"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Config{Address: "temporal:7233", Namespace: "n", CertFile: certFile, KeyFile: keyFile}
	if err := c.LoadClientCertificate(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.ClientKeyPEM(), keyPEM) {
		t.Error("ClientKeyPEM is not the key file's content")
	}
	os.Remove(certFile)
	os.Remove(keyFile)
	tc, err := c.tlsConfig()
	if err != nil || len(tc.Certificates) != 1 {
		t.Fatalf("tlsConfig after the files went: %v, %v", tc, err)
	}
	missing := Config{Address: "temporal:7233", Namespace: "n", CertFile: certFile, KeyFile: keyFile}
	if err := missing.LoadClientCertificate(); !errors.Is(err, ErrConfig) {
		t.Errorf("loading files that are gone: %v, want ErrConfig", err)
	}
}

func TestPlaintextBeyondLoopbackIsTold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want bool
	}{
		{Config{Address: "127.0.0.1:7233"}, false},
		{Config{Address: "[::1]:7233"}, false},
		{Config{Address: "localhost:7233"}, false},
		{Config{Address: "temporal.internal:7233"}, true},
		{Config{Address: "10.0.0.5:7233", TLSDisabled: true}, true},
		{Config{Address: "10.0.0.5:7233", TLS: true}, false},
		{Config{Address: "temporal.internal:7233", APIKey: "k"}, false},
	} {
		if got := tc.cfg.PlaintextBeyondLoopback(); got != tc.want {
			t.Errorf("%+v: PlaintextBeyondLoopback = %v, want %v", tc.cfg, got, tc.want)
		}
	}
}

// The Temporal link offers porthole's TLS versions and suites: forward
// secrecy and authenticated encryption only.
func TestTheTemporalLinkOffersOnlyPortholesSuites(t *testing.T) {
	cfg, err := Config{TLS: true}.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || !slices.Equal(cfg.CipherSuites, tlsclient.Suites) {
		t.Errorf("min version %x, suites %v", cfg.MinVersion, cfg.CipherSuites)
	}
}

// TestRequestsAreCompressedAsConfigured: by default porthole's requests to
// Temporal are gzipped (the SDK's default); with Compression "none" they
// are not, so neither are the answers.
func TestRequestsAreCompressedAsConfigured(t *testing.T) {
	t.Parallel()
	for _, compression := range []string{"", "none"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var encodings []string
		srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			// gRPC keeps the request's encoding off its metadata; the
			// transport's stream knows it.
			enc := "unknown"
			if s, ok := grpc.ServerTransportStreamFromContext(stream.Context()).(interface{ RecvCompress() string }); ok {
				enc = s.RecvCompress()
			}
			mu.Lock()
			encodings = append(encodings, enc)
			mu.Unlock()
			return status.Error(codes.Unavailable, "not a Temporal")
		}))
		go func() { _ = srv.Serve(ln) }()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err = Dial(ctx, Config{Address: ln.Addr().String(), Namespace: "default", Compression: compression}, nil)
		cancel()
		srv.Stop()
		if err == nil {
			t.Fatal("a server that is not Temporal was dialled")
		}
		mu.Lock()
		got := encodings
		mu.Unlock()
		want := "gzip"
		if compression == "none" {
			want = ""
		}
		if len(got) == 0 || got[0] != want {
			t.Errorf("compression %q: requests encoded %q, want %q", compression, got, want)
		}
	}
}
