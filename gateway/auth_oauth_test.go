package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/golang-jwt/jwt/v5"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/oauth"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

// A local issuer (an Ed25519 key served as a key set) holds the front's
// handling of OAuth here; cmd/porthole's end-to-end tests hold it to a
// real authorization server.
type localIssuer struct {
	srv  *httptest.Server
	priv ed25519.PrivateKey
}

func newLocalIssuer(t testing.TB) *localIssuer {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	li := &localIssuer{priv: priv}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": li.srv.URL, "jwks_uri": li.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "OKP", "crv": "Ed25519", "kid": "e1", "x": base64.RawURLEncoding.EncodeToString(pub)}}})
	})
	li.srv = httptest.NewServer(mux)
	t.Cleanup(li.srv.Close)
	return li
}

func (li *localIssuer) token(t testing.TB, resource, scope string) string {
	t.Helper()
	return li.tokenExpiring(t, resource, scope, time.Now().Add(time.Hour))
}

func (li *localIssuer) tokenExpiring(t testing.TB, resource, scope string, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"iss": li.srv.URL, "sub": "alice", "aud": resource, "scope": scope,
		"exp": exp.Unix(), "azp": "claude-desktop", "jti": "tok-42"})
	tok.Header["kid"], tok.Header["typ"] = "e1", "at+jwt"
	s, err := tok.SignedString(li.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// oauthResource is the resource the OAuth fronts of these tests serve.
const oauthResource = "http://127.0.0.1/mcp"

// oauthFront is a front that takes OAuth tokens of a local issuer and no
// static token, auditing to a file.
type oauthFront struct {
	issuer    *localIssuer
	server    *Server
	srv       *httptest.Server
	log       *audit.Log
	auditPath string
}

func newOAuthFront(t *testing.T) *oauthFront { return newOAuthFrontWith(t, nil) }

// newOAuthFrontWith is newOAuthFront with the validator's withdrawals.
func newOAuthFrontWith(t *testing.T, withdrawals *oauth.Withdrawals) *oauthFront {
	t.Helper()
	o := &oauthFront{issuer: newLocalIssuer(t), auditPath: filepath.Join(t.TempDir(), "audit.log")}
	v, err := oauth.New(oauth.Config{Resource: oauthResource, Issuers: []oauth.Issuer{{URL: o.issuer.srv.URL, Alias: "corp"}}, Withdrawals: withdrawals})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	if o.log, err = audit.Open(audit.Config{Path: o.auditPath, Key: []byte(strings.Repeat("k", 32))}); err != nil {
		t.Fatal(err)
	}
	if o.server, err = NewServer(&fakeReader{}, Options{Namespace: "default", Audit: o.log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.server.Close)
	none, _ := tokens.Parse(strings.NewReader(""))
	h, err := o.server.Handler(HTTPOptions{Tokens: func() *tokens.Set { return none },
		OAuth: &OAuthOptions{Validator: v, Resource: oauthResource, AuthorizationServers: []string{o.issuer.srv.URL}, Scopes: []string{"porthole:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	o.srv = httptest.NewServer(h)
	t.Cleanup(o.srv.Close)
	return o
}

func TestOAuthTokensAreAdmittedChallengedAndRecorded(t *testing.T) {
	t.Parallel()
	o := newOAuthFront(t)
	li, resource, srv, log, path := o.issuer, oauthResource, o.srv, o.log, o.auditPath
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

	// The metadata, without a token.
	resp, body := send(t, http.MethodGet, srv.URL+"/.well-known/oauth-protected-resource/mcp", nil, "")
	var meta map[string]any
	json.Unmarshal([]byte(body), &meta)
	if resp.StatusCode != 200 || meta["resource"] != resource || meta["authorization_servers"].([]any)[0] != li.srv.URL || meta["bearer_methods_supported"].([]any)[0] != "header" {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	// No token: 401 naming the metadata and the scope.
	resp, _ = post(t, srv.URL+"/mcp", nil, call)
	if c := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(c, `resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"`) || !strings.Contains(c, `scope="porthole:read"`) {
		t.Fatalf("no token: %d %q", resp.StatusCode, c)
	}
	// A token for another resource: 401 invalid_token.
	resp, _ = post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.token(t, "https://other/mcp", "porthole:read")}}, call)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("another audience: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// Without the scope: 403 insufficient_scope.
	resp, _ = post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.token(t, resource, "openid")}}, call)
	if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("no scope: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// A good token: served, and recorded with who called through what.
	resp, body = post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.token(t, resource, "porthole:read")}}, call)
	if resp.StatusCode != 200 || !strings.Contains(body, `"describe_namespace"`) {
		t.Fatalf("a good token: %d %s", resp.StatusCode, body)
	}
	log.Close()
	b, _ := os.ReadFile(path)
	want := `"principal":"\"oauth:corp:alice\"","clientAddr"`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"oauth":{"issuer":"\"`+li.srv.URL+`\"","subject":"\"alice\"","clientId":"\"claude-desktop\"","tokenId":"\"tok-42\""}`) {
		t.Fatalf("the audit log does not name the OAuth caller:\n%s", b)
	}
	// The 403's denial record names who was refused, not only from where.
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"status":403`) && (!strings.Contains(line, `"principal":"\"oauth:corp:alice\""`) || !strings.Contains(line, `"subject":"\"alice\""`)) {
			t.Fatalf("the 403's record does not name the caller:\n%s", line)
		}
	}
	if !strings.Contains(string(b), `"status":403`) {
		t.Fatalf("no 403 record:\n%s", b)
	}
	if strings.Contains(string(b), "eyJ") {
		t.Fatalf("a token is in the audit log:\n%s", b)
	}
}

// A JWT that expired less than the leeway ago is porthole's to admit or
// refuse, once: the go-sdk's middleware, which allows no skew, must not
// refuse it again with an unchallenged, unaudited 401. One that expired
// past the leeway gets porthole's own challenged 401.
func TestAJWTWithinTheLeewayIsDecidedOnce(t *testing.T) {
	t.Parallel()
	o := newOAuthFront(t)
	li, resource, srv, g, log, path := o.issuer, oauthResource, o.srv, o.server, o.log, o.auditPath
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	resp, body := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.tokenExpiring(t, resource, "porthole:read", time.Now().Add(-10*time.Second))}}, call)
	if resp.StatusCode != 200 {
		t.Fatalf("a token 10 s past its expiry, within the 30 s leeway: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	resp, _ = post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.tokenExpiring(t, resource, "porthole:read", time.Now().Add(-time.Minute))}}, call)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a token a minute past its expiry: %d %q; want porthole's challenged 401", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	g.Close()
	log.Close()
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), `"status":401`); n != 1 {
		t.Fatalf("%d 401 records in the audit log, want 1:\n%s", n, b)
	}
}

// TestFailuresFromASharedAddressDoNotLockOutAnOAuthCaller: the failed-auth
// block ran before OAuth validation, so strangers failing from an address
// a valid caller shares locked the caller out (found by review). A token
// porthole can decide on without the network is decided before it.
func TestFailuresFromASharedAddressDoNotLockOutAnOAuthCaller(t *testing.T) {
	t.Parallel()
	li := newLocalIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	v, _ := oauth.New(oauth.Config{Resource: resource, Issuers: []oauth.Issuer{{URL: li.srv.URL, Alias: "corp"}}})
	v.Refresh(context.Background())
	g := mustServer(t, &fakeReader{})
	h, err := g.Handler(HTTPOptions{OAuth: &OAuthOptions{Validator: v, Resource: resource, Scopes: []string{"porthole:read"}}, FailedAuthBurst: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for i := 0; i < 5; i++ {
		post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer ph_stranger-guess-" + strings.Repeat("x", i)}}, call)
	}
	if resp, _ := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer ph_another-guess"}}, call); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the address is not blocked: %d", resp.StatusCode)
	}
	if resp, body := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + li.token(t, resource, "porthole:read")}}, call); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid OAuth token from the blocked address: %d %s", resp.StatusCode, body)
	}
}

// While the withdrawals file cannot be read, a valid OAuth token is refused
// with 503 (porthole's fault, retried), never counted as a failed
// authentication: an address full of valid callers is not blocked by it.
func TestAnUnreadableWithdrawalsFileRefusesWith503AndBlocksNoAddress(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "withdrawn")
	os.WriteFile(path, []byte("# none\n"), 0o600)
	w, err := oauth.OpenWithdrawals(path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	o := newOAuthFrontWith(t, w)
	good := http.Header{"Authorization": {"Bearer " + o.issuer.token(t, oauthResource, "porthole:read")}}
	if resp, body := post(t, o.srv.URL+"/mcp", good, listToolsBody); resp.StatusCode != 200 {
		t.Fatalf("with the file readable: %d %s", resp.StatusCode, body)
	}
	os.Remove(path)
	w.Reload()
	for i := 0; i < 30; i++ { // three times the default failed-authentication burst
		if resp, _ := post(t, o.srv.URL+"/mcp", good, listToolsBody); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("call %d with the file gone: %d", i, resp.StatusCode)
		}
	}
	os.WriteFile(path, []byte("# none\n"), 0o600)
	w.Reload()
	if resp, _ := post(t, o.srv.URL+"/mcp", good, listToolsBody); resp.StatusCode != 200 {
		t.Fatalf("with the file back: %d", resp.StatusCode)
	}
}

// TestAnExpiredStaticTokenIsNeverSentToIntrospection: with OAuth on, a
// token that is no static token goes to the issuer's introspection
// endpoint; an expired static token must not, since it is a porthole secret
// the authorization server has no business seeing.
func TestAnExpiredStaticTokenIsNeverSentToIntrospection(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	introspection := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		asked = append(asked, r.PostForm.Get("token"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"active":false}`))
	}))
	defer introspection.Close()
	li := newLocalIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	v, err := oauth.New(oauth.Config{Resource: resource, Issuers: []oauth.Issuer{{URL: li.srv.URL, Alias: "corp"}},
		Introspection: &oauth.Introspection{URL: introspection.URL, ClientID: "porthole", ClientSecret: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())

	file := filepath.Join(t.TempDir(), "tokens")
	expired, err := tokens.AppendExpiring(file, "bob", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	g, a := newTestServer(t, &fakeReader{})
	h, err := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set }, FailedAuthBurst: 100,
		OAuth: &OAuthOptions{Validator: v, Resource: resource, AuthorizationServers: []string{li.srv.URL}, Scopes: []string{"porthole:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, token := range []string{expired, "opaque-and-unknown"} {
		if resp, body := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + token}}, listToolsBody); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%d %s; want 401", resp.StatusCode, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "opaque-and-unknown" {
		t.Fatalf("the introspection endpoint was asked about %q; want only the opaque token", asked)
	}
	var reasons []string
	for _, rec := range a.all() {
		reasons = append(reasons, rec.Reason)
	}
	if len(reasons) != 2 || !strings.HasPrefix(reasons[0], "an expired bearer token (principal bob") {
		t.Errorf("denial reasons %q; want the expired token's first", reasons)
	}
}

// TestTokensPastTheIntrospectionBoundGet503: opaque tokens past the bound
// on introspection calls (from one address, its quota comes first) are
// answered 503 with Retry-After, as porthole could not ask about them, not
// 401 as if they were refused.
func TestTokensPastTheIntrospectionBoundGet503(t *testing.T) {
	t.Parallel()
	li := newLocalIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	introspection := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"active":false}`))
	}))
	defer introspection.Close()
	v, err := oauth.New(oauth.Config{Resource: resource, Issuers: []oauth.Issuer{{URL: li.srv.URL, Alias: "corp"}},
		Introspection: &oauth.Introspection{URL: introspection.URL, ClientID: "porthole", ClientSecret: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	v.Refresh(context.Background())
	g, _ := newTestServer(t, &fakeReader{})
	h, err := g.Handler(HTTPOptions{FailedAuthBurst: 1000, OAuth: &OAuthOptions{Validator: v, Resource: resource, Scopes: []string{"porthole:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	statuses := map[int]int{}
	for i := range oauth.IntrospectionBurst + 20 {
		resp, _ := post(t, srv.URL+"/mcp", http.Header{"Authorization": {fmt.Sprintf("Bearer opaque-%04d-token-abcdefgh", i)}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Fatal("a 503 without Retry-After")
		}
	}
	if statuses[http.StatusServiceUnavailable] == 0 || statuses[http.StatusUnauthorized] < introspectionPerAddressBurst ||
		statuses[http.StatusUnauthorized] > introspectionPerAddressBurst+2 {
		t.Fatalf("statuses %v: want the address's quota (%d, and one a second more) refused by the endpoint (401) and the rest 503", statuses, introspectionPerAddressBurst)
	}
}
