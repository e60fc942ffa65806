package oauth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzOnlyWhatTheIssuerSignedIsAccepted: whatever a client sends as a
// token (a JWT with any header and claims, any bytes), Validate accepts it
// only when it is the token the issuer signed, and never panics. The seeds
// hold the shapes of the review's attempts; the issuer's own token is the
// one input that may pass.
func FuzzOnlyWhatTheIssuerSignedIsAccepted(f *testing.F) {
	ti := newTestIssuer(f)
	v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: ti.srv.URL, Alias: "test"}}})
	if err != nil {
		f.Fatal(err)
	}
	v.Refresh(context.Background())
	good := ti.token(f, nil, nil)
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(parts[0] + "." + parts[1] + "." + parts[2] + "=")
	f.Add(`eyJhbGciOiJub25lIn0.` + parts[1] + `.`)
	f.Add("opaque-token")
	f.Add(strings.Repeat("a.", 5000))
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Validate(context.Background(), token)
		if err == nil && token != good {
			b, _ := json.Marshal(id)
			t.Fatalf("accepted %q as %s", token, b)
		}
	})
}

// FuzzKeysAndIssuersParseOrRefuse: a JWK or an issuer list of any bytes
// is read or refused, never panics, and a key read is of a type porthole
// verifies with.
func FuzzKeysAndIssuersParseOrRefuse(f *testing.F) {
	f.Add(`{"kty":"RSA","n":"AQAB","e":"AQAB"}`)
	f.Add(`{"kty":"EC","crv":"P-256","x":"","y":""}`)
	f.Add(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`)
	f.Add(`corp=https://login.example.com,https://other.example.com/`)
	f.Fuzz(func(t *testing.T, s string) {
		if _, k, err := parseJWK(json.RawMessage(s)); err == nil && k.key == nil {
			t.Fatalf("parseJWK(%q) gave no key and no error", s)
		}
		issuers, _ := ParseIssuers(s)
		for _, is := range issuers {
			if strings.Contains(is.Alias, "/") {
				t.Fatalf("ParseIssuers(%q) read an alias with a slash: %q", s, is.Alias)
			}
		}
	})
}
