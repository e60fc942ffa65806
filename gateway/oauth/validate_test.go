package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// These tests use an issuer of their own (an httptest server with an RSA
// key) to hold each rule of Validate; the end-to-end tests hold porthole
// to a real authorization server (oidc-provider).

const resource = "https://porthole.example.com/mcp"

type testIssuer struct {
	srv       *httptest.Server
	key       *rsa.PrivateKey
	kid       string
	keyFetch  atomic.Int32
	extraKeys int
	garbage   atomic.Bool
}

// issuerKey is every test issuer's signing key, and otherKey a second
// one, each made once: a 3072-bit key takes a second or more to make
// under the race detector.
var (
	issuerKey = sync.OnceValue(func() *rsa.PrivateKey { return mustRSAKey(3072) })
	otherKey  = sync.OnceValue(func() *rsa.PrivateKey { return mustRSAKey(3072) })
)

func mustRSAKey(bits int) *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return key
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	ti := &testIssuer{key: issuerKey(), kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if ti.garbage.Load() {
			w.Write([]byte("<html>"))
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.keyFetch.Add(1)
		keys := []map[string]string{ti.jwk()}
		for i := 0; i < ti.extraKeys; i++ {
			k := ti.jwk()
			k["kid"] = fmt.Sprintf("extra-%d", i)
			keys = append(keys, k)
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

func (ti *testIssuer) jwk() map[string]string {
	return map[string]string{"kty": "RSA", "kid": ti.kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(ti.key.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(ti.key.E)).Bytes())}
}

// token signs claims (the defaults a valid token has, overridden) with the
// issuer's key, or with header fields changed.
func (ti *testIssuer) token(t testing.TB, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	c := jwt.MapClaims{"iss": ti.srv.URL, "sub": "alice", "aud": resource, "exp": time.Now().Add(time.Hour).Unix(),
		"scope": "porthole:read other", "azp": "claude", "jti": "t-1", "groups": []string{"sre"}}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"], tok.Header["typ"] = ti.kid, "at+jwt"
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(ti.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newValidator(t *testing.T, ti *testIssuer) *Validator {
	t.Helper()
	v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: ti.srv.URL, Alias: "test"}}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	if p := v.Problem(); p != "" {
		t.Fatal(p)
	}
	return v
}

func TestAValidTokenNamesItsCaller(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	id, err := v.Validate(context.Background(), ti.token(t, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if id.Principal != "oauth:test:alice" || id.ClientID != "claude" || id.TokenID != "t-1" || !id.HasScope("porthole:read") || id.Claims["groups"][0] != "sre" {
		t.Fatalf("identity %+v", id)
	}
}

func TestTokensPortholeMustRefuse(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	other := otherKey()
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": ti.srv.URL, "sub": "alice", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()})
	hs.Header["kid"] = ti.kid
	hsToken, _ := hs.SignedString([]byte("the issuer's public key as an HMAC secret"))
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": ti.srv.URL, "sub": "alice", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()})
	noneToken, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": ti.srv.URL, "sub": "alice", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()})
	forged.Header["kid"] = ti.kid
	forgedToken, _ := forged.SignedString(other)
	cases := map[string]string{
		"another audience":              ti.token(t, jwt.MapClaims{"aud": "https://other.example.com/mcp"}, nil),
		"an audience that only begins":  ti.token(t, jwt.MapClaims{"aud": resource + "/x"}, nil),
		"another issuer":                ti.token(t, jwt.MapClaims{"iss": "https://evil.example.com"}, nil),
		"expired":                       ti.token(t, jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix()}, nil),
		"no exp":                        ti.token(t, jwt.MapClaims{"exp": nil}, nil),
		"not yet valid":                 ti.token(t, jwt.MapClaims{"nbf": time.Now().Add(time.Minute).Unix()}, nil),
		"alg switched to HS256":         hsToken,
		"alg none":                      noneToken,
		"signed by another key":         forgedToken,
		"an embedded jwk":               ti.token(t, nil, map[string]any{"jwk": map[string]string{"kty": "RSA"}}),
		"a jku":                         ti.token(t, nil, map[string]any{"jku": "https://evil.example.com/jwks"}),
		"an id token's typ":             ti.token(t, nil, map[string]any{"typ": "id_token+jwt"}),
		"a sub that is no name":         ti.token(t, jwt.MapClaims{"sub": "auth0|1234"}, nil),
		"no sub and no client":          ti.token(t, jwt.MapClaims{"sub": nil, "azp": nil}, nil),
		"opaque, without introspection": "an-opaque-token-0123456789",
		"oversized":                     strings.Repeat("a", MaxTokenBytes+1),
	}
	for name, token := range cases {
		if id, err := v.Validate(context.Background(), token); err == nil || !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: accepted as %+v (%v)", name, id, err)
		}
	}
}

func TestAnUnknownKidFetchesTheKeysAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	before := ti.keyFetch.Load()
	for i := 0; i < 50; i++ {
		v.Validate(context.Background(), ti.token(t, nil, map[string]any{"kid": fmt.Sprintf("made-up-%d", i)}))
	}
	if n := ti.keyFetch.Load() - before; n > 1 {
		t.Fatalf("50 made-up kids fetched the keys %d times", n)
	}
}

func TestAnIssuerThatAnswersBadlyIsNotUsed(t *testing.T) {
	t.Parallel()
	many := newTestIssuer(t)
	many.extraKeys = MaxKeys + 1
	v, _ := New(Config{Resource: resource, Issuers: []Issuer{{URL: many.srv.URL}}})
	v.Refresh(context.Background())
	if p := v.Problem(); !strings.Contains(p, "key set holds") {
		t.Fatalf("an issuer of %d keys: %q", MaxKeys+2, p)
	}
	if _, err := v.Validate(context.Background(), many.token(t, nil, nil)); err == nil {
		t.Fatal("a token of an issuer with too many keys was accepted")
	}
	garbage := newTestIssuer(t)
	garbage.garbage.Store(true)
	v, _ = New(Config{Resource: resource, Issuers: []Issuer{{URL: garbage.srv.URL}}})
	v.Refresh(context.Background())
	if p := v.Problem(); !strings.Contains(p, "cannot be used") {
		t.Fatalf("an issuer answering garbage: %q", p)
	}
}

func TestConfigurationsPortholeRefuses(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Config{
		"no issuer":             {Resource: resource},
		"an http issuer":        {Resource: resource, Issuers: []Issuer{{URL: "http://login.example.com"}}},
		"a relative resource":   {Resource: "/mcp", Issuers: []Issuer{{URL: "https://login.example.com"}}},
		"an http resource":      {Resource: "http://porthole.example.com/mcp", Issuers: []Issuer{{URL: "https://login.example.com"}}},
		"an alias with a colon": {Resource: resource, Issuers: []Issuer{{URL: "https://login.example.com", Alias: "a:b"}}},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if MetadataPath(resource) != "/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataPath = %s", MetadataPath(resource))
	}
}

// TestAnECKeyVerifiesAndAPointOffTheCurveIsRefused: ES256 keys are read
// from their JWK, and one whose point is not on P-256 is no key.
func TestAnECKeyVerifiesAndAPointOffTheCurveIsRefused(t *testing.T) {
	t.Parallel()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	raw, _ := priv.PublicKey.Bytes() // uncompressed: 0x04 || X || Y
	x, y := raw[1:33], raw[33:]
	jwkOf := func(x, y []byte) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"kty": "EC", "crv": "P-256", "kid": "ec1", "x": base64.RawURLEncoding.EncodeToString(x), "y": base64.RawURLEncoding.EncodeToString(y)})
		return b
	}
	_, k, err := parseJWK(jwkOf(x, y))
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "a"})
	s, _ := tok.SignedString(priv)
	if _, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return k.key, nil }); err != nil {
		t.Fatalf("an ES256 token does not verify with its JWK: %v", err)
	}
	off := append([]byte{}, y...)
	off[31] ^= 1
	if _, _, err := parseJWK(jwkOf(x, off)); err == nil {
		t.Fatal("a point off the curve was taken for a key")
	}
}

// TestAFetchOutlivesTheRequestThatAskedForIt: a stranger's made-up kid
// started a key fetch on its request's context; hanging up failed the
// fetch and spent the minute, and a key the issuer withdrew stayed trusted
// (found by review).
func TestAFetchOutlivesTheRequestThatAskedForIt(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v.Validate(ctx, ti.token(t, nil, map[string]any{"kid": "made-up"}))
	if p := v.Problem(); p != "" {
		t.Fatalf("a request's cancelled context failed the issuer: %q", p)
	}
}

// TestASlowFetchHoldsUpNoTokenOfAKeyHeld: the issuer's lock was held for
// the whole fetch, and every token of that issuer waited behind it.
func TestASlowFetchHoldsUpNoTokenOfAKeyHeld(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	slow := make(chan struct{})
	ti.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-slow })
	defer close(slow)
	go v.Refresh(context.Background())
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if _, err := v.ValidateHeld(ti.token(t, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a token of a key held waited %s behind a slow fetch", d)
	}
}

// TestTokensPortholeRefusesSinceReview: a sender-bound token (cnf), an
// unknown crit header, an iat ahead, a second spelling of the same token
// (loose base64), and a person named like a client.
func TestTokensPortholeRefusesSinceReview(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	v := newValidator(t, ti)
	for name, token := range map[string]string{
		"sender-bound":     ti.token(t, jwt.MapClaims{"cnf": map[string]string{"jkt": "abc"}}, nil),
		"an unknown crit":  ti.token(t, nil, map[string]any{"crit": []string{"b64"}, "b64": false}),
		"issued in future": ti.token(t, jwt.MapClaims{"iat": time.Now().Add(time.Hour).Unix()}, nil),
	} {
		if _, err := v.Validate(context.Background(), token); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	client, err := v.Validate(context.Background(), ti.token(t, jwt.MapClaims{"sub": nil, "azp": "alice"}, nil))
	if err != nil || client.Principal != "oauth:test:client:alice" {
		t.Fatalf("a token without sub: %+v, %v", client, err)
	}
	scp, err := v.Validate(context.Background(), ti.token(t, jwt.MapClaims{"scope": nil, "scp": "porthole:read other"}, nil))
	if err != nil || !scp.HasScope("porthole:read") {
		t.Fatalf("scp as a string (Entra): %+v, %v", scp, err)
	}
}
