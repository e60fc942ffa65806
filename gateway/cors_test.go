package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/gateway/oauth"
)

// corsRequest sends method to url with header, and returns the answer's
// status and header; an answer that allows credentials fails the test.
func corsRequest(t *testing.T, method, url string, header http.Header, body string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("%s %s allowed credentials", method, url)
	}
	return resp.StatusCode, resp.Header
}

// corsHeaders are an answer's Access-Control-* headers.
func corsHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

// TestAnAllowedOriginsPageGetsCORSAndAnotherGetsNone: for an origin in the
// list, a preflight is answered before authentication with the methods
// and headers an MCP client sends, and every answer (a 401 too) names the
// origin and exposes WWW-Authenticate, Mcp-Protocol-Version and
// Retry-After; no answer allows credentials. An origin not in the list
// gets no CORS header and is refused, preflight or not.
func TestAnAllowedOriginsPageGetsCORSAndAnotherGetsNone(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	f := newFront(t, HTTPOptions{Hosts: HostPolicy{Hosts: []string{"127.0.0.1"}, Origins: []string{app}}})
	preflight := http.Header{"Origin": {app}, "Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"authorization,content-type,mcp-protocol-version"}}
	code, h := corsRequest(t, http.MethodOptions, f.url+"/mcp", preflight, "")
	if code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app || h.Get("Access-Control-Allow-Methods") != "GET, POST, DELETE" ||
		h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Mcp-Protocol-Version, Last-Event-ID" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Errorf("the preflight: %d %v", code, h)
	}
	json := http.Header{"Origin": {app}, "Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	code, h = corsRequest(t, http.MethodPost, f.url+"/mcp", json, listToolsBody)
	if code != http.StatusUnauthorized || h.Get("Access-Control-Allow-Origin") != app || h.Get("WWW-Authenticate") == "" ||
		h.Get("Access-Control-Expose-Headers") != "WWW-Authenticate, Mcp-Protocol-Version, Retry-After" {
		t.Errorf("a call without a token: %d %v", code, h)
	}
	withToken := json.Clone()
	withToken.Set("Authorization", "Bearer "+f.alice)
	if code, h = corsRequest(t, http.MethodPost, f.url+"/mcp", withToken, listToolsBody); code != http.StatusOK || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a call with a token: %d %v", code, h)
	}
	for name, header := range map[string]http.Header{
		"a foreign preflight": {"Origin": {"https://evil.example"}, "Access-Control-Request-Method": {"POST"}},
		"a foreign call":      {"Origin": {"https://evil.example"}, "Authorization": {"Bearer " + f.alice}, "Content-Type": {"application/json"}},
	} {
		method := http.MethodPost
		if header.Get("Access-Control-Request-Method") != "" {
			method = http.MethodOptions
		}
		if code, h := corsRequest(t, method, f.url+"/mcp", header, listToolsBody); code != http.StatusForbidden || len(corsHeaders(h)) > 0 {
			t.Errorf("%s: %d %v", name, code, corsHeaders(h))
		}
	}
	if code, h := corsRequest(t, http.MethodPost, f.url+"/mcp", withToken.Clone(), listToolsBody); code != http.StatusOK || h.Get("Vary") == "" {
		t.Errorf("vary: %d %v", code, h)
	}
	noOrigin := withToken.Clone()
	noOrigin.Del("Origin")
	if code, h := corsRequest(t, http.MethodPost, f.url+"/mcp", noOrigin, listToolsBody); code != http.StatusOK || len(corsHeaders(h)) > 0 {
		t.Errorf("a call without Origin: %d %v", code, corsHeaders(h))
	}
}

// TestTheResourceMetadataAnswersAnyOrigin: the protected-resource metadata
// is public; a page of an origin not in the list reads it and may
// preflight it, while the MCP endpoint still refuses that origin.
func TestTheResourceMetadataAnswersAnyOrigin(t *testing.T) {
	t.Parallel()
	li := newLocalIssuer(t)
	const resource = "http://127.0.0.1/mcp"
	v, _ := oauth.New(oauth.Config{Resource: resource, Issuers: []oauth.Issuer{{URL: li.srv.URL, Alias: "corp"}}})
	v.Refresh(context.Background())
	g := mustServer(t, &fakeReader{})
	h, err := g.Handler(HTTPOptions{OAuth: &OAuthOptions{Validator: v, Resource: resource, AuthorizationServers: []string{li.srv.URL}, Scopes: []string{"porthole:read"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	foreign := http.Header{"Origin": {"https://vendor.example"}}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		if code, h := corsRequest(t, http.MethodGet, srv.URL+path, foreign, ""); code != http.StatusOK || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s: %d %v", path, code, corsHeaders(h))
		}
		pre := foreign.Clone()
		pre.Set("Access-Control-Request-Method", "GET")
		if code, h := corsRequest(t, http.MethodOptions, srv.URL+path, pre, ""); code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("OPTIONS %s: %d %v", path, code, corsHeaders(h))
		}
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, "/mcp"},
		{http.MethodPost, "/.well-known/oauth-protected-resource"},
		{http.MethodGet, "/.well-known/oauth-protected-resource/../mcp"},
		{http.MethodGet, "/.well-known/oauth-protected-resource/other"},
	} {
		if code, _ := corsRequest(t, req.method, srv.URL+req.path, foreign, listToolsBody); code != http.StatusForbidden {
			t.Errorf("%s %s from a foreign origin: %d", req.method, req.path, code)
		}
	}
}

// TestCORSIsAnsweredOnlyOnTheMCPEndpoints: an allowed origin's preflight
// of a path porthole does not serve gets no CORS; a page on this machine
// (a loopback origin, allowed by default) gets CORS while calls need a
// token, and none when authentication is off, where only a listed origin
// does.
func TestCORSIsAnsweredOnlyOnTheMCPEndpoints(t *testing.T) {
	t.Parallel()
	const app, local = "https://app.example.com", "http://localhost:5173"
	preflight := func(origin string) http.Header {
		return http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"}}
	}
	hosts := HostPolicy{Hosts: []string{"127.0.0.1"}, Origins: []string{app}, LoopbackOrigins: true}
	f := newFront(t, HTTPOptions{Hosts: hosts})
	if code, h := corsRequest(t, http.MethodOptions, f.url+"/nowhere", preflight(app), ""); code == http.StatusNoContent || len(corsHeaders(h)) > 0 {
		t.Errorf("a preflight of a path not served: %d %v", code, corsHeaders(h))
	}
	if code, h := corsRequest(t, http.MethodOptions, f.url+"/mcp", preflight(local), ""); code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != local {
		t.Errorf("a loopback page's preflight with authentication on: %d %v", code, corsHeaders(h))
	}
	open := newFront(t, HTTPOptions{Hosts: hosts, DangerouslyServeWithoutAuthentication: true})
	if code, h := corsRequest(t, http.MethodOptions, open.url+"/mcp", preflight(local), ""); code == http.StatusNoContent || len(corsHeaders(h)) > 0 {
		t.Errorf("a loopback page's preflight with authentication off: %d %v", code, corsHeaders(h))
	}
	if code, h := corsRequest(t, http.MethodOptions, open.url+"/mcp", preflight(app), ""); code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a listed origin's preflight with authentication off: %d %v", code, corsHeaders(h))
	}
}
