package gateway

import (
	"context"
	"mime"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/gateway/tokens"
)

// wantSecurityHeaders fails t unless resp carries every header
// securityHeaders sets.
func wantSecurityHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for name, want := range map[string]string{
		"Cache-Control":           "no-store",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Content-Security-Policy": "default-src 'none'; base-uri 'none'; frame-ancestors 'none'",
	} {
		got := resp.Header.Get(name)
		if name == "Cache-Control" && got == "no-store, no-transform" {
			continue // an event stream's, or the go-sdk's: no proxy may transform it either
		}
		if got != want {
			t.Errorf("%s (%d): %s is %q; want %q", what, resp.StatusCode, name, got, want)
		}
	}
}

// Every answer, a tool's and a refusal's, the OAuth metadata and the admin
// listener's, tells caches not to keep it, browsers not to sniff, frame or
// run it, and no referrer to leave with a link from it.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20})
	auth := http.Header{"Authorization": {"Bearer " + f.alice}}
	for what, req := range map[string]struct {
		method string
		header http.Header
		body   string
	}{
		"a tool list":               {http.MethodPost, auth, listToolsBody},
		"a refusal without a token": {http.MethodPost, nil, listToolsBody},
		"a malformed body":          {http.MethodPost, auth, "{"},
		"a GET of /mcp":             {http.MethodGet, auth, ""},
	} {
		resp, _ := send(t, req.method, f.url+"/mcp", req.header, req.body)
		if what == "a tool list" && resp.StatusCode != http.StatusOK {
			t.Fatalf("a tool list: %d", resp.StatusCode)
		}
		wantSecurityHeaders(t, what, resp)
	}
	resp, _ := send(t, http.MethodGet, f.url+"/nowhere", nil, "")
	wantSecurityHeaders(t, "a path that is not served", resp)

	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/nowhere"} {
		resp, _ := send(t, http.MethodGet, admin.URL+path, nil, "")
		wantSecurityHeaders(t, "the admin listener's "+path, resp)
	}
	unconfigured := httptest.NewServer(UnconfiguredAdminHandler("no token"))
	t.Cleanup(unconfigured.Close)
	resp, _ = send(t, http.MethodGet, unconfigured.URL+"/readyz", nil, "")
	wantSecurityHeaders(t, "an unconfigured admin listener's /readyz", resp)

	resp, _ = send(t, http.MethodGet, newOAuthFront(t).srv.URL+"/.well-known/oauth-protected-resource/mcp", nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the protected resource metadata: %d", resp.StatusCode)
	}
	wantSecurityHeaders(t, "the protected resource metadata", resp)
}

// With an admin tokens file, /metrics (which names principals, tools and
// upstreams) answers only its tokens; /healthz and /readyz stay open for
// probes; an MCP token is not an admin token.
func TestMetricsRequireAnAdminTokenWhenConfigured(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20})
	adminFile := filepath.Join(t.TempDir(), "admin-tokens")
	scraper, err := tokens.Append(adminFile, "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	store, err := tokens.OpenStore(adminFile, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	f.server.RequireAdminTokens(store)
	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	get := func(path, token string) (*http.Response, string) {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		return send(t, http.MethodGet, admin.URL+path, h, "")
	}
	if resp, _ := get("/metrics", ""); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("/metrics without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ := get("/metrics", f.alice); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics with an MCP token: %d", resp.StatusCode)
	}
	if resp, body := get("/metrics", scraper); resp.StatusCode != http.StatusOK || !strings.Contains(body, "porthole_") {
		t.Errorf("/metrics with the admin token: %d", resp.StatusCode)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, _ := get(path, ""); resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("%s asked for a token", path)
		}
	}
}

// Every answer with a body names its media type, and every text type its
// charset: JSON (RFC 8259 fixes it as UTF-8 and defines no parameter),
// plain-text refusals and probes, and the legacy event stream.
func TestEveryAnswerNamesItsTypeAndCharset(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20, LegacySSE: true})
	auth := http.Header{"Authorization": {"Bearer " + f.alice}}
	check := func(what string, resp *http.Response) {
		t.Helper()
		ct := resp.Header.Get("Content-Type")
		mt, params, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			t.Errorf("%s (%d): Content-Type %q: %v", what, resp.StatusCode, ct, err)
		case mt == "application/json":
		case strings.HasPrefix(mt, "text/") && strings.EqualFold(params["charset"], "utf-8"):
		default:
			t.Errorf("%s (%d): Content-Type %q names no UTF-8 charset", what, resp.StatusCode, ct)
		}
	}
	for what, req := range map[string]struct {
		header http.Header
		body   string
	}{
		"a tool list":               {auth, listToolsBody},
		"a refusal without a token": {nil, listToolsBody},
		"a malformed body":          {auth, "{"},
	} {
		resp, _ := send(t, http.MethodPost, f.url+"/mcp", req.header, req.body)
		check(what, resp)
	}
	resp, _ := send(t, http.MethodGet, f.url+"/nowhere", nil, "")
	check("a path that is not served", resp)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+f.alice)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	check("the legacy event stream", stream)
	stream.Body.Close()

	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/nowhere"} {
		resp, _ := send(t, http.MethodGet, admin.URL+path, nil, "")
		check("the admin listener's "+path, resp)
	}
	resp, _ = send(t, http.MethodGet, newOAuthFront(t).srv.URL+"/.well-known/oauth-protected-resource/mcp", nil, "")
	check("the protected resource metadata", resp)
}

// TestAnswersOverTLSCarryStrictTransportSecurity: over TLS porthole
// serves, every answer (a refusal too) carries HSTS; over plain HTTP none
// does.
func TestAnswersOverTLSCarryStrictTransportSecurity(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	h, err := f.server.Handler(HTTPOptions{Tokens: func() *tokens.Set { set, _ := tokens.Load(f.tokensFile); return set }})
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewTLSServer(h)
	t.Cleanup(tlsSrv.Close)
	req := func(c *http.Client, url string, header http.Header) *http.Response {
		r, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(listToolsBody))
		r.Header = header
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for what, header := range map[string]http.Header{"a call": {"Authorization": {"Bearer " + f.alice}}, "a refusal": {}} {
		if resp := req(tlsSrv.Client(), tlsSrv.URL, header.Clone()); resp.Header.Get("Strict-Transport-Security") != "max-age=31536000; includeSubDomains" {
			t.Errorf("%s over TLS: %d %q", what, resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
		}
		if resp := req(http.DefaultClient, f.url, header.Clone()); resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s over plain HTTP carries HSTS", what)
		}
	}
}
