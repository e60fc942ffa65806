package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/oauth"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

// TestAnExpiredTokenIsAnsweredAsAnUnknownOneButAuditedAsExpired: a client
// whose token expired gets the very 401 a stranger gets, while the audit
// record and the metric say it was the expired token of a named principal,
// so a reviewer can tell a stale agent from a stranger.
func TestAnExpiredTokenIsAnsweredAsAnUnknownOneButAuditedAsExpired(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	expired, err := tokens.AppendExpiring(file, "bob", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	current, err := tokens.AppendExpiring(file, "carol", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	g, a := newTestServer(t, &fakeReader{})
	h, err := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set }, FailedAuthBurst: 100})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	if resp, body := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + current}}, listToolsBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("a token an hour from its expiry: %d %s", resp.StatusCode, body)
	}
	unknownResp, unknownBody := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer ph_unknown"}}, listToolsBody)
	expiredResp, expiredBody := post(t, srv.URL+"/mcp", http.Header{"Authorization": {"Bearer " + expired}}, listToolsBody)
	if expiredResp.StatusCode != http.StatusUnauthorized || expiredBody != unknownBody {
		t.Errorf("an expired token got %d %q; an unknown one %d %q", expiredResp.StatusCode, expiredBody, unknownResp.StatusCode, unknownBody)
	}
	for _, h := range []http.Header{unknownResp.Header, expiredResp.Header} {
		h.Del("Date")
		h.Del("X-Request-Id")
	}
	if !equalHeaders(expiredResp.Header, unknownResp.Header) {
		t.Errorf("an expired token's headers %v differ from an unknown one's %v", expiredResp.Header, unknownResp.Header)
	}

	var reasons []string
	for _, rec := range a.all() {
		if rec.Kind == audit.KindDenial {
			if rec.Outcome != audit.OutcomeUnauthenticated || rec.Status != http.StatusUnauthorized || rec.Principal != "" {
				t.Errorf("denial record %+v", rec)
			}
			reasons = append(reasons, rec.Reason)
		}
	}
	want := []string{
		"a bearer token that matches no principal",
		"an expired bearer token (principal bob, expired 2001-01-01T00:00:00Z)",
	}
	if strings.Join(reasons, "\n") != strings.Join(want, "\n") {
		t.Errorf("denial reasons %q; want %q", reasons, want)
	}

	admin := httptest.NewServer(g.AdminHandler())
	defer admin.Close()
	_, metrics := send(t, http.MethodGet, admin.URL+"/metrics", nil, "")
	for _, series := range []string{
		`porthole_auth_failures_total{reason="expired-token"} 1`,
		`porthole_auth_failures_total{reason="unknown-token"} 1`,
	} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b.Values(k), "\n") {
			return false
		}
	}
	return true
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
