package main

// The CA roots of Mozilla's NSS store, built into the binary: where the
// machine has none (the release image holds nothing but the binary), Go
// verifies TLS peers (Temporal Cloud, an OAuth issuer, an OTLP collector)
// against these; where the machine has roots (SSL_CERT_FILE, SSL_CERT_DIR,
// the system's), those are used instead. They are as current as the
// module's version in go.mod: update it (go get) with each release.
import _ "golang.org/x/crypto/x509roots/fallback"
