package oidctest

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// resource stands for porthole's public URL; nothing listens there.
const resource = "http://127.0.0.1:8080/mcp"

// jwtParts splits a compact JWS and decodes its header and claims. It does
// not verify: verified checks the signature.
func jwtParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a compact JWS", token)
	}
	for i, into := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

// publicKeys fetches the provider's JWKS, by kid.
func publicKeys(t *testing.T, p *Provider) map[string]*rsa.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct{ Kty, Kid, Alg, Use, N, E string }
	}
	if err := p.getJSON(p.JWKSURL(), &set); err != nil {
		t.Fatal(err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if k.Kty != "RSA" || err1 != nil || err2 != nil {
			t.Fatalf("the JWKS holds a key this test cannot read: %+v", k)
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys
}

// verified checks token's RS256 signature with the JWKS key its kid names.
func verified(t *testing.T, token string, keys map[string]*rsa.PublicKey) {
	t.Helper()
	header, _ := jwtParts(t, token)
	key, ok := keys[header["kid"].(string)]
	if !ok {
		t.Fatalf("kid %v is not in the provider's JWKS", header["kid"])
	}
	i := strings.LastIndex(token, ".")
	sig, err := base64.RawURLEncoding.DecodeString(token[i+1:])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(token[:i]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		t.Fatalf("the signature does not verify with the JWKS key: %v", err)
	}
}

func TestAClientCredentialsTokenIsAnRS256AtJWTForTheResourceAskedFor(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	tok, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	header, claims := jwtParts(t, tok)
	if header["alg"] != "RS256" || header["typ"] != "at+jwt" {
		t.Errorf("header %v: want alg RS256, typ at+jwt", header)
	}
	if _, kid := p.SigningKey(); header["kid"] != kid {
		t.Errorf("kid %v, want the signing key's %s", header["kid"], kid)
	}
	verified(t, tok, publicKeys(t, p))
	want := map[string]any{"aud": resource, "iss": p.Issuer(), "scope": "porthole:read", "client_id": AgentClientID, "sub": AgentClientID}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s is %v, want %v", k, claims[k], v)
		}
	}
	exp, _ := claims["exp"].(float64)
	if ttl := time.Until(time.Unix(int64(exp), 0)); ttl < 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("the token expires in %v, want the default ten minutes", ttl)
	}
}

func TestOnlyTheScopesTheProviderGrantsAreGranted(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{Scopes: []string{"porthole:write"}})
	tok, err := p.ClientCredentialsToken("http://127.0.0.1:9/elsewhere", "porthole:write")
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := jwtParts(t, tok); claims["scope"] != "porthole:write" || claims["aud"] != "http://127.0.0.1:9/elsewhere" {
		t.Errorf("claims %v: want scope porthole:write for the other resource", claims)
	}
	// A scope the provider does not grant is dropped, not refused: the
	// token comes without it, as from an authorization server that never
	// grants porthole:read.
	tok, err = p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := jwtParts(t, tok); claims["scope"] != nil {
		t.Errorf("a token asked for with a scope the provider does not grant has scope %v", claims["scope"])
	}
	tok, err = p.ClientCredentialsToken(resource)
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := jwtParts(t, tok); claims["scope"] != nil {
		t.Errorf("a token asked for with no scope has scope %v", claims["scope"])
	}
}

func TestIntrospectionSaysActiveThenInactiveAfterRevocation(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	tok, err := p.OpaqueToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("the opaque client got a JWT: %s", tok)
	}
	in, err := p.Introspect(tok)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Active || in.Aud != resource || in.Scope != "porthole:read" || in.ClientID != OpaqueAgentClientID || in.Iss != p.Issuer() {
		t.Fatalf("introspection of a fresh token: %+v", in)
	}
	if err := p.Revoke(tok); err != nil {
		t.Fatal(err)
	}
	if in, err = p.Introspect(tok); err != nil || in.Active {
		t.Fatalf("introspection after revocation: %+v, %v; want inactive", in, err)
	}
}

func TestAJWTIsNeitherIntrospectedNorRevoked(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	tok, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	var oauthErr *Error
	if _, err := p.Introspect(tok); !errors.As(err, &oauthErr) || oauthErr.Code != "unsupported_token_type" {
		t.Errorf("introspecting a JWT: %v, want unsupported_token_type", err)
	}
	if err := p.Revoke(tok); !errors.As(err, &oauthErr) || oauthErr.Code != "unsupported_token_type" {
		t.Errorf("revoking a JWT: %v, want unsupported_token_type", err)
	}
}

func TestAfterARestartWithNewKeysTheJWKSHoldsANewKid(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	_, before := p.SigningKey()
	if keys := publicKeys(t, p); len(keys) != 1 || keys[before] == nil {
		t.Fatalf("the JWKS holds %v, want only %s", keys, before)
	}
	issuer := p.Issuer()
	p.Restart(true)
	_, after := p.SigningKey()
	keys := publicKeys(t, p)
	if after == before || len(keys) != 1 || keys[after] == nil {
		t.Fatalf("after the restart the JWKS holds %v, want only a new kid (was %s)", keys, before)
	}
	if p.Issuer() != issuer {
		t.Errorf("the issuer moved from %s to %s", issuer, p.Issuer())
	}
	tok, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	if header, _ := jwtParts(t, tok); header["kid"] != after {
		t.Errorf("a token after the restart names kid %v, want %s", header["kid"], after)
	}
	verified(t, tok, keys)

	p.Restart(false)
	if _, kid := p.SigningKey(); kid != after || publicKeys(t, p)[after] == nil {
		t.Errorf("a restart without new keys changed the kid from %s to %s", after, kid)
	}
}

func TestTheAuthorizationCodeFlowWithPKCEYieldsATokenForTheLoggedInAccount(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := p.AuthorizationCodeToken(ctx, CodeRequest{
		Account:  "alice@example.test",
		Resource: resource,
		Scopes:   []string{"porthole:read"},
		// Any port of the registered loopback redirect (RFC 8252 §7.3).
		RedirectURI: "http://127.0.0.1:53682/callback",
	})
	if err != nil {
		t.Fatal(err)
	}
	header, claims := jwtParts(t, tok.AccessToken)
	if header["typ"] != "at+jwt" {
		t.Errorf("typ %v, want at+jwt", header["typ"])
	}
	verified(t, tok.AccessToken, publicKeys(t, p))
	want := map[string]any{"sub": "alice@example.test", "aud": resource, "client_id": PublicClientID, "scope": "porthole:read", "iss": p.Issuer()}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s is %v, want %v", k, claims[k], v)
		}
	}
}

func TestTheAuthorizationCodeFlowRefusesAnUnregisteredRedirect(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	_, err := p.AuthorizationCodeToken(context.Background(), CodeRequest{
		Account: "alice", Resource: resource, Scopes: []string{"porthole:read"},
		RedirectURI: "http://127.0.0.1/elsewhere",
	})
	if err == nil || !strings.Contains(err.Error(), "redirect_uri") {
		t.Errorf("an unregistered redirect URI: %v, want the provider's refusal naming redirect_uri", err)
	}
}

func TestExpiredAndNotYetValidTokensCarryTheProvidersSignature(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	keys := publicKeys(t, p)
	now := time.Now()

	expired, err := p.ExpiredToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	verified(t, expired, keys)
	_, claims := jwtParts(t, expired)
	if exp := time.Unix(int64(claims["exp"].(float64)), 0); now.Sub(exp) < 90*time.Second {
		t.Errorf("the expired token's exp %v is within 90s of now", exp)
	}

	early, err := p.NotYetValidToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	verified(t, early, keys)
	_, claims = jwtParts(t, early)
	nbf, ok := claims["nbf"].(float64)
	if !ok || time.Unix(int64(nbf), 0).Sub(now) < 90*time.Second {
		t.Errorf("the early token's nbf %v is not 90s or more ahead", claims["nbf"])
	}
}

func TestTwoProvidersGivenOneKeyDifferOnlyInIssuer(t *testing.T) {
	t.Parallel()
	a := Start(t, Options{})
	key, kid := a.SigningKey()
	b := Start(t, Options{Key: key})
	if a.Issuer() == b.Issuer() {
		t.Fatal("two providers share an issuer")
	}
	tok, err := b.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	verified(t, tok, publicKeys(t, a))
	if header, claims := jwtParts(t, tok); header["kid"] != kid || claims["iss"] != b.Issuer() {
		t.Errorf("b's token: kid %v, iss %v; want a's kid %s and b's issuer", header["kid"], claims["iss"], kid)
	}
}

func TestTheKidIsTheRFC7638Thumbprint(t *testing.T) {
	t.Parallel()
	// RFC 7638 §3.1's example key and its thumbprint.
	n, err := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	if err != nil {
		t.Fatal(err)
	}
	key := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537}
	if got := thumbprint(key); got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Errorf("thumbprint %s, want RFC 7638's NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", got)
	}
}

func TestAMissingInstallNamesTheCommandThatInstalls(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	_, _, err := install()
	if err == nil || !strings.Contains(err.Error(), "make oidc-provider") {
		t.Errorf("install() with nothing installed: %v, want the install command", err)
	}
}

func TestTokenTTLSetsTheTokensLifetime(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{TokenTTL: 5 * time.Second})
	tok, err := p.ClientCredentialsToken(resource, "porthole:read")
	if err != nil {
		t.Fatal(err)
	}
	_, claims := jwtParts(t, tok)
	if life := claims["exp"].(float64) - claims["iat"].(float64); life != 5 {
		t.Errorf("exp - iat = %v s, want 5", life)
	}
}

func TestADynamicallyRegisteredPublicClientRunsTheAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	p := Start(t, Options{})
	meta := `{"redirect_uris":["http://127.0.0.1/mcp-client/callback"],"application_type":"native",` +
		`"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"]}`
	resp, err := p.client.Post(p.RegistrationURL(), "application/json", strings.NewReader(meta))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != 201 || reg.ClientID == "" {
		t.Fatalf("registration answered %s, %+v, %v", resp.Status, reg, err)
	}
	tok, err := p.AuthorizationCodeToken(context.Background(), CodeRequest{
		Account: "bob", Resource: resource, Scopes: []string{"porthole:read"},
		ClientID: reg.ClientID, RedirectURI: "http://127.0.0.1:40000/mcp-client/callback",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := jwtParts(t, tok.AccessToken); claims["sub"] != "bob" || claims["client_id"] != reg.ClientID || claims["aud"] != resource {
		t.Errorf("claims %v: want bob through the registered client, for the resource", claims)
	}
}
