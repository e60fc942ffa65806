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
	"github.com/porthole-dev/porthole/gateway/pseudonym"
)

// secretKeySettings name the secret porthole derives its own keys from
// (today the page-token key), which every replica shares.
type secretKeySettings struct {
	file         string
	previousFile string
	previousFor  time.Duration
}

func (k *secretKeySettings) register(s *settings) {
	s.string(&k.file, "secret-key-file", "PORTHOLE_SECRET_KEY_FILE", "", "file holding 32 random bytes (or 64 hex digits) every replica shares, from which the key sealing page tokens and the disclosure profiles' pseudonym keys are derived; without it each process makes its own, and its page tokens and pseudonyms die with it")
	s.string(&k.previousFile, "previous-secret-key-file", "PORTHOLE_PREVIOUS_SECRET_KEY_FILE", "", "the secret key before the last rotation, whose page tokens and pseudonyms are still opened for --previous-secret-key-for")
	numeric(s, &k.previousFor, "previous-secret-key-for", "PORTHOLE_PREVIOUS_SECRET_KEY_FOR", 24*time.Hour, false, "how long from start the previous secret key's page tokens and pseudonyms are still opened")
}

// readSecretKey reads a secret key file: 32 bytes, or 64 hex digits with
// an optional newline (openssl rand -hex 32). It returns the key and the
// file as it was read.
func readSecretKey(setting, path string) (key, file []byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", errUsage, setting, err)
	}
	if len(b) == pagetoken.SecretSize {
		return b, b, nil
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(h) == pagetoken.SecretSize {
		return h, b, nil
	}
	return nil, nil, fmt.Errorf("%w: %s: %s holds %d bytes; it must hold %d random bytes or %d hex digits (head -c 32 /dev/urandom, or openssl rand -hex 32)", errUsage, setting, path, len(b), pagetoken.SecretSize, 2*pagetoken.SecretSize)
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
	var currentFile, previousFile []byte
	if current, currentFile, err = readSecretKey("PORTHOLE_SECRET_KEY_FILE", k.file); err != nil {
		return nil, nil, err
	}
	if k.previousFile != "" {
		if previous, previousFile, err = readSecretKey("PORTHOLE_PREVIOUS_SECRET_KEY_FILE", k.previousFile); err != nil {
			return nil, nil, err
		}
	}
	if auditKey != nil {
		for _, s := range [][]byte{current, currentFile, previous, previousFile} {
			if sameKey(s, auditKey) {
				return nil, nil, fmt.Errorf("%w: a secret key file holds the audit key: reviewers are handed the audit key; give the secret key 32 random bytes of its own", errUsage)
			}
		}
	}
	return current, previous, nil
}

// sameKey reports whether a and b hold the same key in any of the forms
// a key file may take: as written, trimmed of white space, or as the bytes
// its hex digits (of either case) spell.
func sameKey(a, b []byte) bool {
	if a == nil || b == nil {
		return false
	}
	forms := func(x []byte) [][]byte {
		t := bytes.TrimSpace(x)
		out := [][]byte{x, t}
		if h, err := hex.DecodeString(string(t)); err == nil {
			out = append(out, h)
		}
		return out
	}
	for _, x := range forms(a) {
		for _, y := range forms(b) {
			if len(x) > 0 && bytes.Equal(x, y) {
				return true
			}
		}
	}
	return false
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

// pseudonyms is the pseudonym maker of the secrets read, or, without one, a
// key of this process's own; a policy file whose profiles pseudonymise
// then hears of it at start.
func (k *secretKeySettings) pseudonyms(current, previous []byte, pseudonymising bool, log *zap.Logger) (*pseudonym.Maker, error) {
	if current == nil {
		if pseudonymising {
			log.Warn("WARNING: PORTHOLE_SECRET_KEY_FILE is not set: the policy file's profiles pseudonymise with a key this process made, so pseudonyms change when it restarts and do not cross replicas")
		}
		return pseudonym.Ephemeral()
	}
	return pseudonym.New(current, previous, time.Now().Add(k.previousFor))
}
