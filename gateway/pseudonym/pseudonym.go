// Package pseudonym makes the pseudonyms a disclosure profile shows in
// place of identifiers, and opens them when a caller hands them back.
//
// # What a pseudonym is
//
// A pseudonym is a deterministic AEAD of the value: AES-SIV (RFC 5297,
// tink-go's daead/subtle.AESSIV, AES-256 in SIV mode with a 64-byte key),
// with the class of the value and the namespace as associated data, so a
// task queue's pseudonym never opens as a workflow id, nor one of another
// namespace's. The same value, class, namespace and key always give the
// same pseudonym: across calls, replicas and restarts, so an agent can
// list, then describe, then read a history by it.
//
// # Keys
//
// Each profile's key is derived with HKDF-SHA256 from the secret of 32
// bytes (PORTHOLE_SECRET_KEY_FILE) under a label naming the profile, so
// two profiles' pseudonyms of one id cannot be linked, and no other use of
// the secret (page tokens) shares a key with them. A pseudonym names its
// key's id (the first byte of a SHA-256 over the derived key): a Maker
// makes pseudonyms with the current secret's key and opens them with it
// and, until a time, with the previous secret's. One byte tells the two
// keys apart but once in 256 rotations; then both are tried, and AES-SIV
// opens under the right one alone.
//
// # What it hides, and what it does not
//
// Without the key a pseudonym reveals nothing of its value but its length
// class: values are padded (ISO/IEC 7816-4: 0x80, then zeros) to 16, 24,
// 32, 48, 64, 96, 128, 192 or 256 bytes, or a multiple of 256: each class
// at most half again the one below it, so a pseudonym stays short (every
// byte of it is carried twice in an answer, and redacted twice). It does
// reveal equality: one value is one pseudonym for one profile, which is
// what lets an agent follow a workflow.
//
// # Format
//
//	"ps" base32(version 0x01 | key id (1) | AES-SIV(padded value))
//
// in lower-case base32 without padding, for the reason page tokens are
// (gateway/pagetoken): no credential or personal-data detector matches a
// run of lower-case letters and digits after a letter.
package pseudonym

import (
	"bytes"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tink-crypto/tink-go/v2/daead/subtle"
)

// Prefix begins every pseudonym.
const Prefix = "ps"

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// SecretSize is the size of the secret keys are derived from.
const SecretSize = 32

const (
	version = 0x01
	idSize  = 1
	header  = 1 + idSize
	sivSize = 16
)

// ErrNotOurs is a value that is not a pseudonym this porthole made for
// the caller's profile, class and namespace (or one of a key no longer
// accepted).
var ErrNotOurs = errors.New("not a pseudonym porthole made for you")

// label is the HKDF info of a profile's key.
func label(profile string) string { return "porthole pseudonyms v1\x00" + profile }

// key is one profile's derived key.
type key struct {
	id  [idSize]byte
	siv *subtle.AESSIV
}

func derive(secret []byte, profile string) (*key, error) {
	k, err := hkdf.Key(sha256.New, secret, nil, label(profile), 64)
	if err != nil {
		return nil, err
	}
	siv, err := subtle.NewAESSIV(k)
	if err != nil {
		return nil, err
	}
	out := &key{siv: siv}
	sum := sha256.Sum256(append([]byte("porthole key id\x00"), k...))
	copy(out.id[:], sum[:])
	return out, nil
}

// Maker makes and opens pseudonyms with the keys of one secret (and of the
// previous one, until previousUntil).
type Maker struct {
	secret, previous []byte
	previousUntil    time.Time
	now              func() time.Time
	keys             sync.Map // "c"|"p" + profile -> *key
	// made holds the pseudonyms made lately, both ways, so that a value
	// an agent follows is encrypted once, not on every answer: by a value
	// (a madeKey with open false), its pseudonym; by a pseudonym (open
	// true), its value. At most maxMade entries; past it, the map starts
	// again empty.
	made  sync.Map
	count atomic.Int64
}

// madeKey is a key of Maker.made: s is a value, or a pseudonym when open.
type madeKey struct {
	open                         bool
	profile, class, namespace, s string
}

// maxMade bounds Maker.made: 4096 entries, each a value and its
// pseudonym (under 4 KiB together for the longest values an answer holds).
const maxMade = 4096

func (m *Maker) remember(made madeKey, pseudonym string) {
	if m.count.Add(2) > maxMade {
		m.made.Clear()
		m.count.Store(2)
	}
	value := made.s
	m.made.Store(made, pseudonym)
	made.open, made.s = true, pseudonym
	m.made.Store(made, value)
}

// New is a Maker whose keys derive from secret and, when previous is not
// nil, from the previous secret, whose pseudonyms open until
// previousUntil.
func New(secret, previous []byte, previousUntil time.Time) (*Maker, error) {
	if len(secret) != SecretSize || previous != nil && len(previous) != SecretSize {
		return nil, fmt.Errorf("a secret key is %d bytes", SecretSize)
	}
	return &Maker{secret: bytes.Clone(secret), previous: bytes.Clone(previous), previousUntil: previousUntil, now: time.Now}, nil
}

// Ephemeral is a Maker with a secret of its own, made now: its pseudonyms
// open in no other process, and change when it restarts.
func Ephemeral() (*Maker, error) {
	secret := make([]byte, SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return New(secret, nil, time.Time{})
}

func (m *Maker) key(previous bool, profile string) *key {
	tag, secret := "c", m.secret
	if previous {
		tag, secret = "p", m.previous
	}
	if k, ok := m.keys.Load(tag + profile); ok {
		return k.(*key)
	}
	k, err := derive(secret, profile)
	if err != nil {
		panic("pseudonym: deriving a key of the right size failed: " + err.Error())
	}
	actual, _ := m.keys.LoadOrStore(tag+profile, k)
	return actual.(*key)
}

// ad is the associated data of a value of class in namespace.
func ad(class, namespace string) []byte { return []byte(class + "\x00" + namespace) }

// bucket is the length a value of n bytes is padded to (with at least one
// byte of padding).
func bucket(n int) int {
	for _, b := range []int{16, 24, 32, 48, 64, 96, 128, 192, 256} {
		if n < b {
			return b
		}
	}
	return (n/256 + 1) * 256
}

// Make is the pseudonym of value, of class in namespace, for profile.
func (m *Maker) Make(profile, class, namespace, value string) string {
	mk := madeKey{false, profile, class, namespace, value}
	if p, ok := m.made.Load(mk); ok {
		return p.(string)
	}
	k := m.key(false, profile)
	padded := make([]byte, bucket(len(value)))
	copy(padded, value)
	padded[len(value)] = 0x80
	ct, err := k.siv.EncryptDeterministically(padded, ad(class, namespace))
	if err != nil {
		panic("pseudonym: AES-SIV refused a plaintext: " + err.Error())
	}
	b := make([]byte, 0, header+len(ct))
	b = append(append(append(b, version), k.id[:]...), ct...)
	p := Prefix + encoding.EncodeToString(b)
	m.remember(mk, p)
	return p
}

// keysOf are profile's keys whose id is id: the current secret's, and the
// previous one's while it is accepted.
func (m *Maker) keysOf(profile string, id []byte) []*key {
	var keys []*key
	if k := m.key(false, profile); bytes.Equal(id, k.id[:]) {
		keys = append(keys, k)
	}
	if m.previous != nil && m.now().Before(m.previousUntil) {
		if k := m.key(true, profile); bytes.Equal(id, k.id[:]) {
			keys = append(keys, k)
		}
	}
	return keys
}

// maxOpened bounds the pseudonyms Open reads: those of values up to 2 KiB,
// longer than any identifier or quoted identity an answer holds, so that
// a caller cannot make porthole decode and decrypt a megabyte a call.
var maxOpened = len(Prefix) + encoding.EncodedLen(header+sivSize+bucket(2<<10))

// Open is the value p is the pseudonym of, of class in namespace, for
// profile, or ErrNotOurs.
func (m *Maker) Open(profile, class, namespace, p string) (string, error) {
	if len(p) > maxOpened {
		return "", ErrNotOurs
	}
	// What this Maker made lately, with the current key, opens from made.
	if v, ok := m.made.Load(madeKey{true, profile, class, namespace, p}); ok {
		return v.(string), nil
	}
	text, ok := strings.CutPrefix(p, Prefix)
	if !ok {
		return "", ErrNotOurs
	}
	b, err := encoding.DecodeString(text)
	// Only the one spelling Make writes opens: base32's last character can
	// carry bits the decoder drops, and a second spelling of one pseudonym
	// would be a second name for one value.
	if err != nil || len(b) < header+sivSize+16 || b[0] != version || encoding.EncodeToString(b) != text {
		return "", ErrNotOurs
	}
	for _, k := range m.keysOf(profile, b[1:header]) {
		if padded, err := k.siv.DecryptDeterministically(b[header:], ad(class, namespace)); err == nil {
			return unpad(padded)
		}
	}
	return "", ErrNotOurs
}

// unpad is the value padded holds, or ErrNotOurs where its padding is not
// the one Make writes.
func unpad(padded []byte) (string, error) {
	end := bytes.LastIndexByte(padded, 0x80)
	if end < 0 || len(bytes.Trim(padded[end+1:], "\x00")) != 0 || bucket(end) != len(padded) {
		return "", ErrNotOurs
	}
	return string(padded[:end]), nil
}
