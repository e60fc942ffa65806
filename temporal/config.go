package temporal

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/porthole-dev/porthole/gateway/tlsclient"

	"github.com/porthole-dev/porthole/redact/quote"
)

// Config says how to reach the one namespace porthole reads. It holds the
// credentials; nothing outside this package ever sees a Config.
type Config struct {
	// Address is host:port of the Temporal frontend. Required: the SDK
	// would silently fall back to localhost:7233.
	Address string
	// Namespace is the only namespace porthole reads. Required: the SDK
	// would silently fall back to "default".
	Namespace string

	// Redactor redacts a value somebody else wrote before quoting cuts it
	// to its cap, so that no cut leaves half a secret (see quote.Quoter).
	// Nil redacts nothing there; every answer is still redacted whole.
	Redactor quote.Redactor
	// TracerProvider, when set, traces each read RPC made within a traced
	// call: a client span under the call's span. Nil traces nothing.
	TracerProvider trace.TracerProvider

	// APIKey authenticates with an API key (Temporal Cloud). It needs TLS:
	// over plaintext the key would travel in the clear.
	APIKey string

	// TLS turns on TLS without a client certificate (server-verified only).
	// A certificate, a CA or an API key implies TLS.
	TLS bool
	// TLSDisabled records that the operator asked for plaintext
	// explicitly (TEMPORAL_TLS=false).
	TLSDisabled bool
	// CertFile and KeyFile are the client certificate for mTLS.
	CertFile string
	KeyFile  string
	// certPEM and keyPEM are the two files' contents, once
	// LoadClientCertificate has read them.
	certPEM, keyPEM []byte
	// CAFile verifies the server instead of the system roots.
	CAFile string
	// ServerName overrides the name the server's certificate must carry.
	ServerName string
	// Compression is what requests to Temporal are compressed with:
	// "gzip" (the SDK's default, and porthole's when empty) or "none". A
	// server that answers as it is asked (the dev server does) answers an
	// uncompressed request uncompressed; a compressed answer is still
	// taken. gzip costs both ends CPU to spare bytes on the network
	// between them (PORTHOLE_TEMPORAL_COMPRESSION).
	Compression string
	// DisableHostVerification is never accepted; it exists so that an
	// operator who sets TEMPORAL_TLS_DISABLE_HOST_VERIFICATION gets a
	// refusal instead of silent acceptance.
	DisableHostVerification bool
}

// ErrConfig wraps every configuration refusal.
var ErrConfig = errors.New("temporal configuration refused")

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// PlaintextBeyondLoopback reports whether the connection will be plaintext
// to an address that is not loopback (a host name other than localhost
// counts as beyond): what porthole reads then crosses a network in the
// clear.
func (c Config) PlaintextBeyondLoopback() bool {
	if c.usesTLS() {
		return false
	}
	host, _, err := net.SplitHostPort(c.Address)
	if err != nil {
		host = c.Address
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// usesTLS reports whether the connection will be TLS.
func (c Config) usesTLS() bool {
	if c.TLSDisabled {
		return false
	}
	return c.TLS || c.APIKey != "" || c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.ServerName != ""
}

// Validate refuses a half-filled configuration with a sentence naming what is
// wrong. It reads no files.
//
// Whole: one case per rule, each with the sentence that names it.
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.Address) == "":
		return configError("no Temporal address: set TEMPORAL_ADDRESS (host:port)")
	case strings.TrimSpace(c.Namespace) == "":
		return configError("no Temporal namespace: set TEMPORAL_NAMESPACE")
	case c.DisableHostVerification:
		return configError("skipping TLS host verification is not supported: unset TEMPORAL_TLS_DISABLE_HOST_VERIFICATION and set TEMPORAL_TLS_CA or TEMPORAL_TLS_SERVER_NAME instead")
	case c.APIKey != "" && c.TLSDisabled:
		return configError("an API key with TLS disabled would be sent in plaintext: enable TLS or remove the API key")
	case c.APIKey != "" && (c.CertFile != "" || c.KeyFile != ""):
		return configError("an API key and a client certificate are both set: choose one way to authenticate")
	case c.CertFile != "" && c.KeyFile == "":
		return configError("a client certificate without its key: set TEMPORAL_TLS_KEY")
	case c.KeyFile != "" && c.CertFile == "":
		return configError("a client key without its certificate: set TEMPORAL_TLS_CERT")
	case c.TLSDisabled && (c.CertFile != "" || c.CAFile != "" || c.ServerName != ""):
		return configError("TLS settings are given but TLS is disabled: remove them or enable TLS")
	case c.Compression != "" && c.Compression != "gzip" && c.Compression != "none":
		return configError("PORTHOLE_TEMPORAL_COMPRESSION=%q: gzip or none", c.Compression)
	}
	if strings.ContainsAny(c.Namespace, " \t\r\n") {
		return configError("the namespace %q contains whitespace", c.Namespace)
	}
	return nil
}

// LoadClientCertificate reads the client certificate and key files, once:
// Dial then uses these bytes, so that the key porthole keeps out of
// everything it sends and logs (ClientKeyPEM) is the key it presents, even
// if the files change between start and dial.
func (c *Config) LoadClientCertificate() error {
	if c.CertFile == "" && c.KeyFile == "" {
		return nil
	}
	var err error
	if c.certPEM, err = os.ReadFile(c.CertFile); err != nil {
		return configError("reading the client certificate: %v", err)
	}
	if c.keyPEM, err = os.ReadFile(c.KeyFile); err != nil {
		return configError("reading the client key: %v", err)
	}
	return nil
}

// ClientKeyPEM is the client key LoadClientCertificate read, or nil.
func (c Config) ClientKeyPEM() []byte { return c.keyPEM }

// tlsConfig builds the TLS configuration, or nil for plaintext.
func (c Config) tlsConfig() (*tls.Config, error) {
	if !c.usesTLS() {
		return nil, nil
	}
	cfg := tlsclient.Config()
	cfg.ServerName = c.ServerName
	if c.CertFile != "" {
		if c.keyPEM == nil {
			if err := c.LoadClientCertificate(); err != nil {
				return nil, err
			}
		}
		cert, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
		if err != nil {
			return nil, configError("loading the client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, configError("reading the CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, configError("the CA file %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
