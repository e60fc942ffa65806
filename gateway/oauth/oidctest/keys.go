package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
)

// newKey makes a signing key of 3072 bits, the least porthole verifies
// with by default.
func newKey() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 3072)
}

// jwk is an RSA key in JSON Web Key form (RFC 7517, RFC 7518 §6.3).
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d,omitempty"`
	P   string `json:"p,omitempty"`
	Q   string `json:"q,omitempty"`
	Dp  string `json:"dp,omitempty"`
	Dq  string `json:"dq,omitempty"`
	Qi  string `json:"qi,omitempty"`
}

func b64(n *big.Int) string { return base64.RawURLEncoding.EncodeToString(n.Bytes()) }

// thumbprint is the key's RFC 7638 thumbprint, which this package uses as
// its kid: two keys share a kid only if they are the same key.
func thumbprint(pub *rsa.PublicKey) string {
	// The required members in lexicographic order, no whitespace (§3.2).
	canonical := fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, b64(big.NewInt(int64(pub.E))), b64(pub.N))
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// privateJWKS is the key set oidc-provider signs with.
func privateJWKS(key *rsa.PrivateKey) ([]byte, error) {
	if len(key.Primes) != 2 {
		return nil, fmt.Errorf("an RSA key of %d primes has no JWK form oidc-provider reads", len(key.Primes))
	}
	key.Precompute()
	k := jwk{
		Kty: "RSA", Kid: thumbprint(&key.PublicKey), Use: "sig", Alg: "RS256",
		N: b64(key.N), E: b64(big.NewInt(int64(key.E))), D: b64(key.D),
		P: b64(key.Primes[0]), Q: b64(key.Primes[1]),
		Dp: b64(key.Precomputed.Dp), Dq: b64(key.Precomputed.Dq), Qi: b64(key.Precomputed.Qinv),
	}
	return json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{[]jwk{k}})
}
