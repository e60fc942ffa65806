package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/tlsclient"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"
)

func withdrawalsFile(t *testing.T, text string) (*Withdrawals, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "withdrawn")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWithdrawals(path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}

// A JWT is good until its exp by its signature alone; the withdrawals file
// ends it sooner: every token of a principal issued before a time, or one
// token by its jti, held ones too, at the next reload.
func TestWithdrawnTokensAreRefusedBeforeTheirExp(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	w, path := withdrawalsFile(t, "# none yet\n")
	v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: ti.srv.URL, Alias: "test"}}, Withdrawals: w})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	ctx := context.Background()
	cut := time.Now().Add(-time.Minute).Truncate(time.Second)
	before := ti.token(t, jwt.MapClaims{"iat": cut.Add(-time.Hour).Unix()}, nil)
	after := ti.token(t, jwt.MapClaims{"iat": cut.Unix(), "jti": "t-2"}, nil)
	noIat := ti.token(t, jwt.MapClaims{"jti": "t-3"}, nil)
	bob := ti.token(t, jwt.MapClaims{"sub": "bob", "iat": cut.Add(-time.Hour).Unix(), "jti": "t-4"}, nil)
	for _, tok := range []string{before, after, noIat, bob} {
		if _, err := v.Validate(ctx, tok); err != nil {
			t.Fatalf("before any withdrawal: %v", err)
		}
	}
	os.WriteFile(path, []byte("oauth:test:alice  "+cut.Format(time.RFC3339)+"\noauth:test:bob jti:t-4\n"), 0o600)
	if changed, err := w.Reload(); !changed || err != nil {
		t.Fatalf("Reload = %v, %v", changed, err)
	}
	for what, c := range map[string]struct {
		token string
		want  string
	}{
		"alice's token issued before the cut": {before, "issued before " + cut.UTC().Format(time.RFC3339)},
		"alice's token without iat":           {noIat, "issued before"},
		"bob's listed token":                  {bob, "its jti is listed"},
		"alice's token issued at the cut":     {after, ""},
	} {
		_, err := v.Validate(ctx, c.token)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", what, err)
		case c.want != "" && (!errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want a refusal saying %q", what, err, c.want)
		}
	}
	if _, err := v.ValidateHeld(before); err == nil {
		t.Error("a held identity outlived its withdrawal")
	}

	// A file that does not parse leaves the list in force; one that cannot
	// be read refuses every token until it can.
	os.WriteFile(path, []byte("oauth:test:alice yesterday\n"), 0o600)
	if _, err := w.Reload(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a malformed file: %v", err)
	}
	if _, err := v.Validate(ctx, before); err == nil {
		t.Error("a malformed file lifted the withdrawals")
	}
	os.Remove(path)
	w.Reload()
	if _, err := v.Validate(ctx, after); !errors.Is(err, ErrWithdrawalsUnknown) {
		t.Errorf("with the file gone: %v", err)
	}
	// Back, but not parsing: the last good list is in force again.
	os.WriteFile(path, []byte("oauth:test:alice yesterday\n"), 0o600)
	w.Reload()
	if _, err := v.Validate(ctx, after); err != nil {
		t.Errorf("after the outage, with a malformed file: %v", err)
	}
	if _, err := v.Validate(ctx, before); err == nil {
		t.Error("after the outage, a malformed file lifted the withdrawals")
	}
}

func TestWithdrawalsFilesPortholeRefuses(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"alice 2026-12-06T05:00:00Z\n",
		"oauth:test:alice\n",
		"oauth:test:alice 2026-12-06\n",
		"oauth:test:alice jti:\n",
		"oauth:test:alice 2026-12-06T05:00:00Z extra\n",
	} {
		path := filepath.Join(t.TempDir(), "withdrawn")
		os.WriteFile(path, []byte(text), 0o600)
		if _, err := OpenWithdrawals(path, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", text, err)
		}
	}
	if _, err := OpenWithdrawals(filepath.Join(t.TempDir(), "absent"), zap.NewNop()); err == nil {
		t.Error("an absent file was taken for an empty list")
	}
}

// An identity is held only while the issuer publishes the key it was
// verified with: when the issuer withdraws that key, its tokens go too,
// whether the new key has a kid of its own, the old one's, or (in a set of
// one key) none.
func TestAHeldTokenGoesWithItsKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ what, oldKid, newKid string }{
		{"a new kid", "k1", "k2"},
		{"the same kid", "k1", "k1"},
		{"no kid", "", ""},
	} {
		ti := newTestIssuer(t)
		ti.kid = c.oldKid
		v := newValidator(t, ti)
		tok := ti.token(t, nil, nil)
		if _, err := v.Validate(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		ti.key, ti.kid = otherKey(), c.newKid
		v.Refresh(context.Background())
		if _, err := v.ValidateHeld(tok); err == nil {
			t.Errorf("%s: a token of a withdrawn key was still held", c.what)
		}
		if _, err := v.Validate(context.Background(), tok); err == nil {
			t.Errorf("%s: a token of a withdrawn key was accepted", c.what)
		}
	}
}

// RSA keys give 128 bits of security from 3072 bits: an issuer whose keys
// are shorter is refused, saying which setting accepts 2048-bit keys, and
// used once that setting says so; nothing under 2048 is ever accepted.
func TestRSAKeysUnder3072BitsAreRefusedUnlessAccepted(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	short, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ti.key = short
	tok := ti.token(t, nil, nil)
	v := func(bits int) *Validator {
		v, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: ti.srv.URL, Alias: "test"}}, MinRSABits: bits})
		if err != nil {
			t.Fatal(err)
		}
		v.Refresh(context.Background())
		return v
	}
	strict := v(0)
	if p := strict.Problem(); !strings.Contains(p, "under 3072 bits") || !strings.Contains(p, "PORTHOLE_OAUTH_MIN_RSA_BITS=2048") {
		t.Errorf("a 2048-bit issuer by default: problem %q", p)
	}
	if _, err := strict.Validate(context.Background(), tok); err == nil {
		t.Error("a token of a 2048-bit key was accepted by default")
	}
	if _, err := v(2048).Validate(context.Background(), tok); err != nil {
		t.Errorf("with 2048 accepted: %v", err)
	}
	if _, err := New(Config{Resource: resource, Issuers: []Issuer{{URL: ti.srv.URL}}, MinRSABits: 1024}); err == nil {
		t.Error("a minimum of 1024 bits was accepted")
	}
}

// The issuers' metadata, keys and introspection are fetched offering
// porthole's TLS versions and suites only.
func TestTheOAuthLinksOfferOnlyPortholesSuites(t *testing.T) {
	c := Config{Resource: resource, Issuers: []Issuer{{URL: "https://login.example.com"}}}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	tr, ok := c.Client.Transport.(*http.Transport)
	if !ok || tr.TLSClientConfig == nil || !slices.Equal(tr.TLSClientConfig.CipherSuites, tlsclient.Suites) || tr.Proxy == nil {
		t.Errorf("the default client's transport: %#v", c.Client.Transport)
	}
}
