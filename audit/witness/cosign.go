// Package witness is a C2SP tlog-witness: a server, with a key and a
// state of its own, that cosigns a log's checkpoint only when it is
// consistent with the last one it cosigned for that log, so that a
// rewrite, a fork or a cut of an audit trail kept as a Merkle tree needs
// the witness's collusion. Its cosignatures are C2SP cosignature/v1
// signatures, which carry the time they were made. The package also holds
// the log's side, a Sender.
//
// # Trust
//
// The server's requests are not authenticated: anyone who can reach it
// may send anything. What it acts on is only what the log's key signed
// and what the proof it is given shows against its own state; it keeps,
// beside that state, only what proves the log misbehaved (a second
// signed tree of a size it cosigned), bounded, and serves each checkpoint
// with the log's signatures and its own alone. The Sender trusts a
// witness for nothing but its signature: each cosignature is checked over
// the checkpoint's own text with the witness's key before it is kept or
// counted.
package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// The key types of C2SP signed notes: an Ed25519 key, and an Ed25519 key
// that makes cosignature/v1 signatures.
const (
	algEd25519            = 0x01
	algCosignatureV1      = 0x04
	cosignatureTimeLength = 8
)

// Cosigner makes cosignature/v1 signatures: it implements note.Signer, so
// note.Sign appends its signature line to a checkpoint.
type Cosigner struct {
	name string
	priv ed25519.PrivateKey
	hash uint32
	now  func() time.Time
}

// NewCosigner reads a signer key in golang.org/x/mod/sumdb/note's form
// ("PRIVATE+KEY+<name>+<hash>+<base64 of the type byte and the 32-byte
// seed>", of type Ed25519 or cosignature/v1), which the omniwitness takes
// too; now, when not nil, is its clock.
func NewCosigner(skey string, now func() time.Time) (*Cosigner, error) {
	parts := strings.SplitN(strings.TrimSpace(skey), "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, errors.New("not a signer key: PRIVATE+KEY+<name>+<hash>+<key>")
	}
	key, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(key) != 1+ed25519.SeedSize || key[0] != algEd25519 && key[0] != algCosignatureV1 {
		return nil, errors.New("the signer key is not an Ed25519 seed")
	}
	if now == nil {
		now = time.Now
	}
	priv := ed25519.NewKeyFromSeed(key[1:])
	c := &Cosigner{name: parts[2], priv: priv, now: now}
	c.hash = keyHash(c.name, priv.Public().(ed25519.PublicKey))
	return c, nil
}

// GenerateKey makes a witness key named name: its signer key (for
// NewCosigner, and the omniwitness's --private_key_path) and its
// cosignature/v1 verifier key, which logs and reviewers are given.
func GenerateKey(name string) (skey, vkey string, err error) {
	skey, _, err = note.GenerateKey(nil, name)
	if err != nil {
		return "", "", err
	}
	c, err := NewCosigner(skey, nil)
	if err != nil {
		return "", "", err
	}
	return skey, c.VerifierKey(), nil
}

// keyHash is the key hash of a cosignature/v1 key: the first four bytes
// of SHA-256 of the name, a newline, the type byte and the public key.
func keyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{algCosignatureV1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func (c *Cosigner) Name() string    { return c.name }
func (c *Cosigner) KeyHash() uint32 { return c.hash }

// Sign signs a checkpoint's text as cosignature/v1 does: the time, in
// seconds, and the Ed25519 signature of "cosignature/v1", the time and
// the text.
func (c *Cosigner) Sign(text []byte) ([]byte, error) {
	t := uint64(c.now().Unix())
	sig := binary.BigEndian.AppendUint64(make([]byte, 0, cosignatureTimeLength+ed25519.SignatureSize), t)
	return append(sig, ed25519.Sign(c.priv, signedMessage(t, text))...), nil
}

// VerifierKey is the cosigner's verifier key: <name>+<hash>+<base64 of
// 0x04 and the public key>.
func (c *Cosigner) VerifierKey() string {
	pub := c.priv.Public().(ed25519.PublicKey)
	return fmt.Sprintf("%s+%08x+%s", c.name, c.hash, base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, pub...)))
}

func signedMessage(t uint64, text []byte) []byte {
	return append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), text...)
}

// Verifier checks a witness's cosignature/v1 signatures, and reads the
// time each carries.
type Verifier struct {
	name string
	pub  ed25519.PublicKey
	hash uint32
}

// NewVerifier reads a cosignature/v1 verifier key (VerifierKey's form).
func NewVerifier(vkey string) (*Verifier, error) {
	parts := strings.SplitN(strings.TrimSpace(vkey), "+", 3)
	if len(parts) != 3 {
		return nil, errors.New("not a verifier key: <name>+<hash>+<key>")
	}
	key, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(key) != 1+ed25519.PublicKeySize || key[0] != algCosignatureV1 {
		return nil, errors.New("the verifier key is not a cosignature/v1 Ed25519 key")
	}
	v := &Verifier{name: parts[0], pub: key[1:]}
	v.hash = keyHash(v.name, v.pub)
	if h, err := strconv.ParseUint(parts[1], 16, 32); err != nil || len(parts[1]) != 8 || uint32(h) != v.hash {
		return nil, errors.New("the verifier key's hash is not its key's")
	}
	return v, nil
}

func (v *Verifier) Name() string    { return v.name }
func (v *Verifier) KeyHash() uint32 { return v.hash }

// Verify checks a cosignature/v1 signature of text.
func (v *Verifier) Verify(text, sig []byte) bool {
	if len(sig) != cosignatureTimeLength+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	return ed25519.Verify(v.pub, signedMessage(t, text), sig[cosignatureTimeLength:])
}

// PublicKey is the witness's Ed25519 public key: two verifier keys of one
// public key are one witness, whatever their names.
func (v *Verifier) PublicKey() ed25519.PublicKey { return v.pub }

// Cosignature is a witness's cosignature of a checkpoint: which witness,
// when, and its signature line.
type Cosignature struct {
	Witness *Verifier
	Time    time.Time
	Line    string
}

// Cosignatures are the cosignatures among a signed checkpoint's signature
// lines that one of vs made over its text, each line checked on its own
// (a line of a key not given is passed over). A line that names a key
// given but does not verify is an error: it was forged or altered.
func Cosignatures(signed []byte, vs []*Verifier) (text string, cs []Cosignature, err error) {
	split := bytes.LastIndex(signed, []byte("\n\n"))
	if split < 0 || !bytes.HasSuffix(signed, []byte("\n")) {
		return "", nil, errors.New("not a signed note: no empty line before its signatures")
	}
	text = string(signed[:split+1])
	for _, line := range strings.SplitAfter(string(signed[split+2:]), "\n") {
		if line == "" {
			continue
		}
		c, ok, err := cosignatureOf(text, line, vs)
		if err != nil {
			return text, nil, err
		}
		if ok {
			cs = append(cs, c)
		}
	}
	return text, cs, nil
}

// cosignatureOf reads one signature line: ok when one of vs made it over
// text.
func cosignatureOf(text, line string, vs []*Verifier) (Cosignature, bool, error) {
	rest, found := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "— ")
	name, b64, _ := strings.Cut(rest, " ")
	sig, err := base64.StdEncoding.DecodeString(b64)
	if !found || err != nil || len(sig) < 4 {
		return Cosignature{}, false, errors.New("a signature line is malformed")
	}
	hash := binary.BigEndian.Uint32(sig)
	for _, v := range vs {
		if v.name != name || v.hash != hash {
			continue
		}
		if !v.Verify([]byte(text), sig[4:]) {
			return Cosignature{}, false, fmt.Errorf("the cosignature of witness %s does not verify: it was forged or altered", strconv.QuoteToASCII(name))
		}
		return Cosignature{Witness: v, Time: time.Unix(int64(binary.BigEndian.Uint64(sig[4:])), 0).UTC(), Line: line}, true, nil
	}
	return Cosignature{}, false, nil
}
