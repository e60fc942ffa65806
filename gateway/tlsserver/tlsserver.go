// Package tlsserver is the TLS of porthole's MCP listener, for deployments
// with no ingress to terminate it: a certificate and key read again when
// their files change, without a restart, and, when a CA bundle is given,
// client certificates required and verified against it (read again too).
//
// It offers TLS 1.2 and 1.3, and at TLS 1.2 the suites porthole's clients
// offer (gateway/tlsclient: forward secrecy and authenticated encryption
// only). A client certificate is a second factor beside the bearer token:
// the gateway asks for the token whatever the certificate.
package tlsserver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/tlsclient"
)

// Files are the PEM files the listener's TLS is read from. ClientCA, when
// set, makes a client certificate signed by one of its CAs required.
type Files struct {
	Cert, Key, ClientCA string
}

// Server holds the listener's TLS configuration as last read.
type Server struct {
	files Files
	log   *zap.Logger
	// config is what a handshake takes: the one last read whole.
	config atomic.Pointer[tls.Config]
	// mu orders reloads; digest is the SHA-256 of the files config was
	// read from, so that a check that finds them unchanged parses nothing,
	// and failed that of files that did not read whole, so that they are
	// reported once, not at every check.
	mu             sync.Mutex
	digest, failed [sha256.Size]byte
}

// New reads files; an unreadable or mismatched certificate and key, or a
// CA bundle with no certificate in it, is an error.
func New(files Files, log *zap.Logger) (*Server, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("TLS needs both a certificate file and a key file")
	}
	s := &Server{files: files, log: log}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Config is the listener's configuration: each handshake takes the
// certificate, key and client CAs last read.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.config.Load(), nil
		},
	}
}

// RequiresClientCertificates reports whether a client certificate is
// required.
func (s *Server) RequiresClientCertificates() bool { return s.files.ClientCA != "" }

// Reload reads the files again and, when they changed and read whole,
// makes them what the next handshake takes; it reports whether they did.
// On an error the previous configuration stays: a certificate and its key
// are replaced by two writes, and a check between them reads a pair that
// does not match. So does a client CA file that cannot be read whole: the
// CAs read last stay trusted until a file that reads whole replaces them.
// Files that failed are not reported again until they change.
func (s *Server) Reload() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []byte
	contents := map[string][]byte{}
	for _, name := range []string{s.files.Cert, s.files.Key, s.files.ClientCA} {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", name, err)
		}
		contents[name] = b
		all = append(append(all, b...), 0)
	}
	digest := sha256.Sum256(all)
	if s.config.Load() != nil && (digest == s.digest || digest == s.failed) {
		return false, nil
	}
	cfg, err := s.build(contents)
	if err != nil {
		s.failed = digest
		return false, err
	}
	s.config.Store(cfg)
	s.digest = digest
	return true, nil
}

// build is the configuration of the files' contents.
func (s *Server) build(contents map[string][]byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(contents[s.files.Cert], contents[s.files.Key])
	if err != nil {
		return nil, fmt.Errorf("the TLS certificate %s and key %s: %w", s.files.Cert, s.files.Key, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		CipherSuites: tlsclient.Suites,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if s.files.ClientCA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(contents[s.files.ClientCA]) {
			return nil, fmt.Errorf("the client CA file %s holds no PEM certificate", s.files.ClientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Watch reads the files again every interval until ctx ends, logging each
// change taken and each failure (the previous configuration then stays).
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			changed, err := s.Reload()
			switch {
			case err != nil:
				s.log.Error("the TLS files could not be read again; the previous certificate stays", zap.Error(err))
			case changed:
				s.log.Info("the TLS files changed; new connections take them", s.Fields()...)
			}
		}
	}
}

// Fields name the certificate served, for the log: its subject and when it
// ends.
func (s *Server) Fields() []zap.Field {
	certs := s.config.Load().Certificates
	if len(certs) == 0 || certs[0].Leaf == nil {
		return nil
	}
	leaf := certs[0].Leaf
	return []zap.Field{zap.String("subject", leaf.Subject.String()), zap.Time("notAfter", leaf.NotAfter)}
}

// Subject names the client certificate a connection verified: its
// subject, or where that is empty (a SPIFFE identity carries its name only
// in a SAN) its first URI, DNS or e-mail SAN; "" for no certificate.
func Subject(state *tls.ConnectionState) string {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return ""
	}
	leaf := state.VerifiedChains[0][0]
	switch {
	case len(leaf.Subject.Names) > 0:
		return leaf.Subject.String()
	case len(leaf.URIs) > 0:
		return "URI:" + leaf.URIs[0].String()
	case len(leaf.DNSNames) > 0:
		return "DNS:" + leaf.DNSNames[0]
	case len(leaf.EmailAddresses) > 0:
		return "email:" + leaf.EmailAddresses[0]
	}
	return ""
}
