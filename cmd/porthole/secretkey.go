package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/pagetoken"
)

// secretKeySettings name the secret porthole derives its own keys from
// (today the page-token key), which every replica shares.
type secretKeySettings struct {
	file         string
	previousFile string
	previousFor  time.Duration
}

func (k *secretKeySettings) register(s *settings) {
	s.string(&k.file, "secret-key-file", "PORTHOLE_SECRET_KEY_FILE", "", "file holding 32 random bytes (or 64 hex digits) every replica shares, from which the key sealing page tokens is derived; without it each process makes its own, and its page tokens die with it")
	s.string(&k.previousFile, "previous-secret-key-file", "PORTHOLE_PREVIOUS_SECRET_KEY_FILE", "", "the secret key before the last rotation, whose page tokens are still opened for --previous-secret-key-for")
	numeric(s, &k.previousFor, "previous-secret-key-for", "PORTHOLE_PREVIOUS_SECRET_KEY_FOR", 24*time.Hour, false, "how long from start the previous secret key's page tokens are still opened")
}

// readSecretKey reads a secret key file: 32 bytes, or 64 hex digits with
// an optional newline (openssl rand -hex 32).
func readSecretKey(setting, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, setting, err)
	}
	if len(b) == pagetoken.SecretSize {
		return b, nil
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(h) == pagetoken.SecretSize {
		return h, nil
	}
	return nil, fmt.Errorf("%w: %s: %s holds %d bytes; it must hold %d random bytes or %d hex digits (head -c 32 /dev/urandom, or openssl rand -hex 32)", errUsage, setting, path, len(b), pagetoken.SecretSize, 2*pagetoken.SecretSize)
}

// secrets reads the secret key files named, refusing an audit key in
// their place: reviewers are handed the audit key, and with it they could
// open page tokens. What it returns is for the redactor as well.
func (k *secretKeySettings) secrets(auditKey []byte) (current, previous []byte, err error) {
	if k.file == "" {
		if k.previousFile != "" {
			return nil, nil, fmt.Errorf("%w: PORTHOLE_PREVIOUS_SECRET_KEY_FILE needs PORTHOLE_SECRET_KEY_FILE", errUsage)
		}
		return nil, nil, nil
	}
	if current, err = readSecretKey("PORTHOLE_SECRET_KEY_FILE", k.file); err != nil {
		return nil, nil, err
	}
	if k.previousFile != "" {
		if previous, err = readSecretKey("PORTHOLE_PREVIOUS_SECRET_KEY_FILE", k.previousFile); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range [][]byte{current, previous} {
		if s != nil && auditKey != nil && (bytes.Equal(s, auditKey) || bytes.Equal([]byte(hex.EncodeToString(s)), auditKey)) {
			return nil, nil, fmt.Errorf("%w: a secret key file holds the audit key: reviewers are handed the audit key; give the secret key 32 random bytes of its own", errUsage)
		}
	}
	return current, previous, nil
}

// sealer is the page-token sealer of the secrets read, or, without one, a
// key of this process's own, said at start.
func (k *secretKeySettings) sealer(current, previous []byte, log *zap.Logger) (*pagetoken.Sealer, error) {
	if current == nil {
		log.Warn("WARNING: PORTHOLE_SECRET_KEY_FILE is not set: page tokens are sealed with a key this process made, so they die with it and do not cross replicas")
		return pagetoken.Ephemeral()
	}
	return pagetoken.New(current, previous, time.Now().Add(k.previousFor))
}
