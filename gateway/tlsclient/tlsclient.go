// Package tlsclient is the TLS configuration of every connection porthole
// opens: to Temporal, Redis, upstream MCP servers, OAuth issuers and the
// OTLP collector. It offers TLS 1.2 and 1.3 only and, at TLS 1.2, only
// suites with forward secrecy and authenticated encryption (ECDHE with
// AES-GCM or ChaCha20-Poly1305): Go's defaults would also offer CBC
// suites, which a server that prefers them would pick. Go orders the
// suites itself. TLS 1.3 suites are all of that kind and are not
// configurable in Go.
package tlsclient

import (
	"crypto/tls"
	"slices"
)

// Suites are the TLS 1.2 cipher suites porthole offers.
var Suites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
}

// Config is a new client configuration with porthole's versions and
// suites; the caller adds its roots, name and certificates.
func Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: slices.Clone(Suites)}
}

// Restrict sets porthole's versions and suites on c, keeping the rest.
func Restrict(c *tls.Config) {
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	c.CipherSuites = slices.Clone(Suites)
}
