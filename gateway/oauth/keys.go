package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// issuerKeys is what porthole knows of one issuer: where its keys are and
// the keys, fetched from its metadata, every minute by porthole's own
// schedule and on an unknown kid.
//
// Security: a fetch runs on a context of its own, never the
// request's, so that a client hanging up cannot fail it; only a fetch that
// completed counts against the minute an unknown kid must wait, and the
// schedule has its own turn, so strangers' made-up kids cannot keep a
// withdrawn key trusted. The keys are read without a lock while a fetch
// runs (one at a time), so a slow issuer holds up no token of a known key.
type issuerKeys struct {
	Issuer
	minRSABits int
	mu         sync.Mutex // guards the fields below but keys
	jwksURI    string
	attempted  time.Time // when the last fetch an unknown kid asked for began
	fetching   bool
	problem    string // why the issuer's tokens are refused now, or ""
	keys       atomic.Pointer[keySet]
}

// keySet is the keys of the last fetch that succeeded, and when.
type keySet struct {
	byKid map[string]jwk // by kid ("" for a set of one key without one)
	at    time.Time
}

// maxKeyAge is how long the keys of the last good fetch stay trusted while
// fetches fail: an issuer that stops answering, or starts answering
// garbage, is not believed to keep the keys it had for ever.
const maxKeyAge = 24 * time.Hour

// jwk is one verification key of an issuer's set.
type jwk struct {
	alg string // the key's own alg, or "" for any the key type allows
	key crypto.PublicKey
}

// allowedAlgs are the signature algorithms porthole accepts, and the key
// type each needs.
var allowedAlgs = map[string]string{"RS256": "RSA", "ES256": "EC", "EdDSA": "OKP"}

// fetchTimeout bounds one fetch of an issuer's metadata and keys.
const fetchTimeout = 10 * time.Second

// refreshForUnknownKid fetches the keys again for a token of a kid not in
// them, unless the last such fetch began less than keyRefresh ago (or one
// is running). It returns when the fetch is done.
func (k *issuerKeys) refreshForUnknownKid(client *http.Client, now time.Time) {
	k.mu.Lock()
	if k.fetching || now.Sub(k.attempted) < keyRefresh {
		k.mu.Unlock()
		return
	}
	k.attempted = now
	k.mu.Unlock()
	k.refresh(client, now)
}

// refresh fetches the issuer's metadata (once) and keys, one fetch at a
// time, on a context of its own, and records the problem or clears it.
func (k *issuerKeys) refresh(client *http.Client, now time.Time) {
	k.mu.Lock()
	if k.fetching {
		k.mu.Unlock()
		return
	}
	k.fetching = true
	uri := k.jwksURI
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	set, uri, err := fetchKeys(ctx, client, k.URL, uri, k.minRSABits)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetching = false
	if err != nil {
		k.problem = fmt.Sprintf("the OAuth issuer %s cannot be used: %v", k.URL, err)
		// The key set may have moved: the next fetch reads the metadata
		// again.
		k.jwksURI = ""
		return
	}
	k.jwksURI, k.problem = uri, ""
	k.keys.Store(&keySet{byKid: set, at: now})
}

// fetchKeys reads the metadata (when jwksURI is not known yet) and the
// keys.
func fetchKeys(ctx context.Context, client *http.Client, issuer, jwksURI string, minRSABits int) (map[string]jwk, string, error) {
	if jwksURI == "" {
		uri, err := discover(ctx, client, issuer)
		if err != nil {
			return nil, "", err
		}
		jwksURI = uri
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, client, jwksURI, &set); err != nil {
		return nil, "", fmt.Errorf("its keys (%s): %w", jwksURI, err)
	}
	if len(set.Keys) > MaxKeys {
		return nil, "", fmt.Errorf("its key set holds %d keys; porthole holds at most %d", len(set.Keys), MaxKeys)
	}
	keys := map[string]jwk{}
	short := 0
	for _, raw := range set.Keys {
		kid, key, err := parseJWK(raw)
		if err != nil {
			continue // a key porthole cannot use (encryption, another type) is no key of its
		}
		if rsaKey, ok := key.key.(*rsa.PublicKey); ok && rsaKey.N.BitLen() < minRSABits {
			short++
			continue
		}
		keys[kid] = key
	}
	if len(keys) == 0 {
		if short > 0 {
			return nil, "", fmt.Errorf("its key set holds no key porthole can verify with: its RSA keys are under %d bits (PORTHOLE_OAUTH_MIN_RSA_BITS=2048 accepts 2048-bit keys, at 112 bits of security)", minRSABits)
		}
		return nil, "", errors.New("its key set holds no key porthole can verify with (RS256, ES256, EdDSA)")
	}
	return keys, jwksURI, nil
}

// key finds the key for a token's kid and alg, among the keys of the last
// good fetch, unless those are older than maxKeyAge.
func (k *issuerKeys) key(kid, alg string, now time.Time) (crypto.PublicKey, bool) {
	set := k.keys.Load()
	if set == nil || now.Sub(set.at) > maxKeyAge {
		return nil, false
	}
	j, ok := set.byKid[kid]
	if !ok && kid == "" && len(set.byKid) == 1 {
		for _, only := range set.byKid {
			j, ok = only, true
		}
	}
	if !ok || j.alg != "" && j.alg != alg {
		return nil, false
	}
	return j.key, true
}

func (k *issuerKeys) problemNow() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.problem
}

// discover reads the issuer's metadata, RFC 8414 first and then OpenID
// Connect discovery, and returns its jwks_uri. The metadata's issuer must
// be the issuer exactly (RFC 8414 §3.3): metadata served for another
// issuer names another issuer's keys.
func discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, client, c, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c, err))
			continue
		}
		if meta.Issuer != issuer {
			return "", fmt.Errorf("its metadata (%s) names the issuer %q, not %q", c, meta.Issuer, issuer)
		}
		ju, err := url.Parse(meta.JWKSURI)
		if err != nil || !ju.IsAbs() || ju.Scheme != "https" && !(ju.Scheme == "http" && isLoopback(ju.Hostname())) {
			return "", fmt.Errorf("its metadata names the key set %q, which is not an https URL", meta.JWKSURI)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("no metadata: %w", errors.Join(errs...))
}

// getJSON fetches a JSON document of at most maxDocumentBytes.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return decodeBounded(resp.Body, v)
}

// decodeBounded decodes one JSON value of at most maxDocumentBytes.
func decodeBounded(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxDocumentBytes {
		return fmt.Errorf("the answer is larger than %d bytes", maxDocumentBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the answer is not the JSON expected: %w", err)
	}
	return nil
}

// parseJWK reads a signature key: RSA (2048 bits or more), EC P-256 or
// Ed25519.
func parseJWK(raw json.RawMessage) (string, jwk, error) {
	var k jwkFields
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", jwk{}, err
	}
	if k.Use != "" && k.Use != "sig" {
		return "", jwk{}, errors.New("not a signature key")
	}
	if k.Alg != "" && allowedAlgs[k.Alg] == "" {
		return "", jwk{}, fmt.Errorf("alg %q", k.Alg)
	}
	var key crypto.PublicKey
	var err error
	switch k.Kty {
	case "RSA":
		key, err = k.rsaKey()
	case "EC":
		key, err = k.p256Key()
	case "OKP":
		key, err = k.ed25519Key()
	default:
		err = fmt.Errorf("key type %q", k.Kty)
	}
	if err != nil {
		return "", jwk{}, err
	}
	return k.Kid, jwk{alg: k.Alg, key: key}, nil
}

// jwkFields are the members of a JSON Web Key porthole reads.
type jwkFields struct {
	Kty, Kid, Use, Alg, Crv, N, E, X, Y string
}

// b64 decodes a key member: base64url, its padding tolerated.
func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// rsaKey is the RSA key, 2048 bits or more (fetchKeys asks for more).
func (k jwkFields) rsaKey() (*rsa.PublicKey, error) {
	n, err1 := b64(k.N)
	e, err2 := b64(k.E)
	if err := errors.Join(err1, err2); err != nil || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("an RSA key that does not decode")
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	if pub.N.BitLen() < 2048 {
		return nil, errors.New("an RSA key under 2048 bits")
	}
	return pub, nil
}

// p256Key is the EC key, on P-256: a point off the curve is refused.
func (k jwkFields) p256Key() (*ecdsa.PublicKey, error) {
	x, err1 := b64(k.X)
	y, err2 := b64(k.Y)
	if err := errors.Join(err1, err2); err != nil || k.Crv != "P-256" || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("not a P-256 key")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, errors.New("a point off the curve")
	}
	return pub, nil
}

// ed25519Key is the OKP key, Ed25519.
func (k jwkFields) ed25519Key() (ed25519.PublicKey, error) {
	x, err := b64(k.X)
	if err != nil || k.Crv != "Ed25519" || len(x) != ed25519.PublicKeySize {
		return nil, errors.New("not an Ed25519 key")
	}
	return ed25519.PublicKey(x), nil
}
