package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// KeyID names an HMAC key in the records it keys, so that a verifier
// holding several keys (before and after a rotation) knows which one a
// record needs. It is the first 8 bytes of a SHA-256 of the key, in hex,
// under a label of its own: it says nothing about the key that a guess of
// the key would not.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("porthole audit hmac key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// SigningKeyID names an Ed25519 public key in the checkpoints it signs.
func SigningKeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(append([]byte("porthole audit signing key id\x00"), pub...))
	return hex.EncodeToString(sum[:8])
}

// Keyring is what a verifier holds: HMAC keys and signing public keys, by
// their ids.
type Keyring struct {
	hmac    map[string][]byte
	signing map[string]ed25519.PublicKey
}

// NewKeyring is a keyring of the given HMAC keys and public keys.
func NewKeyring(hmacKeys [][]byte, public []ed25519.PublicKey) *Keyring {
	k := &Keyring{hmac: map[string][]byte{}, signing: map[string]ed25519.PublicKey{}}
	for _, key := range hmacKeys {
		k.hmac[KeyID(key)] = key
	}
	for _, pub := range public {
		k.signing[SigningKeyID(pub)] = pub
	}
	return k
}

// With is a copy of the ring (nil: an empty one) that holds key and pub
// too.
func (k *Keyring) With(key []byte, pub ed25519.PublicKey) *Keyring {
	out := NewKeyring([][]byte{key}, []ed25519.PublicKey{pub})
	if k != nil {
		for id, v := range k.hmac {
			out.hmac[id] = v
		}
		for id, v := range k.signing {
			out.signing[id] = v
		}
	}
	return out
}

// HasHMAC reports whether the ring holds any HMAC key; a nil ring holds none.
func (k *Keyring) HasHMAC() bool { return k != nil && len(k.hmac) > 0 }

// HasSigning reports whether the ring holds any signing key; a nil ring
// holds none.
func (k *Keyring) HasSigning() bool { return k != nil && len(k.signing) > 0 }

// ErrKeyFile is a key file that does not hold what it should.
var ErrKeyFile = errors.New("not an Ed25519 key file")

// GenerateSigningKey makes an Ed25519 key pair as PEM: the private key as
// PKCS #8, the public key as PKIX, the forms openssl reads too.
func GenerateSigningKey() (privatePEM, publicPEM []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), nil
}

// ParseSigningKey reads a PEM PKCS #8 Ed25519 private key.
func ParseSigningKey(b []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%w: no PEM PRIVATE KEY block", ErrKeyFile)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: the key is a %T", ErrKeyFile, k)
	}
	return priv, nil
}

// ParsePublicKey reads a PEM PKIX Ed25519 public key.
func ParsePublicKey(b []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%w: no PEM PUBLIC KEY block", ErrKeyFile)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKeyFile, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: the key is a %T", ErrKeyFile, k)
	}
	return pub, nil
}
