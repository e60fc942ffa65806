// Package pagetoken seals the page tokens porthole hands out.
//
// # Trust model
//
// A page token is Temporal's bytes: a history token carries a storage
// branch token the server reads without checking the namespace or the
// execution it names, and the SQL visibility store's list token is plain
// JSON holding a run id and times. Handed out raw, a token for one
// workflow's history, sent with another workflowId, read the first
// workflow's events labelled as the second's, and a client could read and
// forge what a token says.
//
// So every token porthole hands out is sealed with AES-256-GCM: encrypted
// (the client learns nothing of Temporal's bytes) and authenticated with
// associated data naming the tool, the namespace, the principal and the
// request's ids or query. A token opens only for the same call by the same
// principal; anything else (another workflow, another principal, a forged
// or altered token, a key no longer accepted) is refused with a sentence,
// before Temporal is asked.
//
// # Keys
//
// The page-token key is derived with HKDF-SHA256 from one secret of 32
// bytes (PORTHOLE_SECRET_KEY_FILE), under a label of its own, so that later
// uses of the secret derive keys of their own; the secret is never an
// audit key (reviewers are handed those). A sealed token names its key's
// id (the first 4 bytes of a SHA-256 over the derived key), so a secret
// can be rotated: a Sealer seals with the current key and opens with it
// and with the previous one while that is still accepted.
//
// # Format
//
//	"p" base32(version 0x01 | key id (4) | nonce (12) | AES-GCM(token))
//
// in lower-case base32 without padding (a to z, 2 to 7). A token travels
// in answers, which the wire redactor reads: in base64url, about one
// sealed token in 100,000 held something a detector takes for a
// credential (ph_ and 43 characters, a porthole token; AIza and 35, a
// Google key), and came back redacted, so paging broke. No credential
// detector's match is made of lower-case letters and digits alone (each
// needs a capital, an underscore, a dash, a dot, a colon, an equals sign
// or white space), nor is a personal-data detector's (a number would have
// to begin a word, and the "p" before the first digit keeps it inside
// one). TestASealedTokenHoldsNothingTheRedactorTakes holds that.
package pagetoken

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// encoding is the text a sealed token is written in, after prefix.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// prefix begins every sealed token.
const prefix = "p"

// SecretSize is the size of the secret keys are derived from.
const SecretSize = 32

// label is the HKDF info of the page-token key: another use of the secret
// takes another label, and so another key.
const label = "porthole page tokens v1"

const (
	version  = 0x01
	idSize   = 4
	overhead = 1 + idSize + 12 + 16 // version, key id, nonce, tag
)

// ErrNotIssued is a token that does not open: not sealed by a key this
// porthole accepts, altered, or issued for another call or principal.
var ErrNotIssued = errors.New("the page token was not issued by porthole for this call: start again from the first page")

// key is one derived page-token key.
type key struct {
	id   [idSize]byte
	aead cipher.AEAD
}

func derive(secret []byte) (*key, error) {
	if len(secret) != SecretSize {
		return nil, fmt.Errorf("a secret key is %d bytes; this one is %d", SecretSize, len(secret))
	}
	k, err := hkdf.Key(sha256.New, secret, nil, label, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	out := &key{aead: aead}
	sum := sha256.Sum256(append([]byte("porthole key id\x00"), k...))
	copy(out.id[:], sum[:])
	return out, nil
}

// Sealer seals tokens with its current key and opens them with the current
// key, or with the previous one until previousUntil.
type Sealer struct {
	current       *key
	previous      *key
	previousUntil time.Time
	now           func() time.Time
}

// New is a Sealer whose keys derive from secret and, when previous is not
// nil, from the previous secret, accepted until previousUntil.
func New(secret, previous []byte, previousUntil time.Time) (*Sealer, error) {
	cur, err := derive(secret)
	if err != nil {
		return nil, err
	}
	s := &Sealer{current: cur, now: time.Now}
	if previous != nil {
		if s.previous, err = derive(previous); err != nil {
			return nil, fmt.Errorf("the previous secret key: %w", err)
		}
		s.previousUntil = previousUntil
	}
	return s, nil
}

// Ephemeral is a Sealer with a key of its own, made now: its tokens die
// with the process and open in no other.
func Ephemeral() (*Sealer, error) {
	secret := make([]byte, SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return New(secret, nil, time.Time{})
}

// AD is the associated data of a token: the parts that name the call it was
// issued for, each length-prefixed so that no two lists of parts encode
// alike.
func AD(parts ...string) []byte {
	var b []byte
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// Seal is token sealed for ad; "" for "".
func (s *Sealer) Seal(token string, ad []byte) string {
	if token == "" {
		return ""
	}
	b := make([]byte, 1+idSize+12, overhead+len(token))
	b[0] = version
	copy(b[1:], s.current.id[:])
	nonce := b[1+idSize:]
	if _, err := rand.Read(nonce); err != nil {
		panic("pagetoken: no randomness: " + err.Error()) // crypto/rand does not fail on the platforms porthole runs on
	}
	b = s.current.aead.Seal(b, nonce, []byte(token), ad)
	return prefix + encoding.EncodeToString(b)
}

// Open is the token sealed in sealed for ad, or ErrNotIssued; "" for "".
func (s *Sealer) Open(sealed string, ad []byte) (string, error) {
	if sealed == "" {
		return "", nil
	}
	text, ok := strings.CutPrefix(sealed, prefix)
	b, err := encoding.DecodeString(text)
	if !ok || err != nil || len(b) < overhead || b[0] != version {
		return "", ErrNotIssued
	}
	var k *key
	switch id := b[1 : 1+idSize]; {
	case bytes.Equal(id, s.current.id[:]):
		k = s.current
	case s.previous != nil && bytes.Equal(id, s.previous.id[:]) && s.now().Before(s.previousUntil):
		k = s.previous
	default:
		return "", ErrNotIssued
	}
	nonce, ct := b[1+idSize:1+idSize+12], b[1+idSize+12:]
	token, err := k.aead.Open(nil, nonce, ct, ad)
	if err != nil {
		return "", ErrNotIssued
	}
	return string(token), nil
}

// Overhead is how many bytes longer, before base64, a sealed token is than
// the token it seals.
const Overhead = overhead
