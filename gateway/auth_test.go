package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

const listToolsBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// newTestFront is a front whose failed-authentication limit never trips:
// many cases here fail authentication from one address on purpose, and the
// limit has tests of its own.
func newTestFront(t *testing.T) (url, token string) {
	t.Helper()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20})
	return f.url, f.alice
}

func post(t *testing.T, url string, header http.Header, body string) (*http.Response, string) {
	return send(t, http.MethodPost, url, header, body)
}

// send makes one request with MCP's content headers, header on top, and
// returns the response with its body read.
func send(t *testing.T, method, url string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBearerAuthenticationIsStrict(t *testing.T) {
	t.Parallel()
	url, token := newTestFront(t)
	cases := []struct {
		name       string
		auth       []string
		wantStatus int
		invalid    bool // error="invalid_token" expected
	}{
		{"the valid token is admitted", []string{"Bearer " + token}, http.StatusOK, false},
		{"no Authorization header is refused", nil, http.StatusUnauthorized, false},
		{"an empty Bearer is refused", []string{"Bearer "}, http.StatusUnauthorized, false},
		{"a lowercase scheme is refused", []string{"bearer " + token}, http.StatusUnauthorized, false},
		{"another scheme is refused", []string{"Basic " + token}, http.StatusUnauthorized, false},
		{"two spaces after the scheme are refused", []string{"Bearer  " + token}, http.StatusUnauthorized, false},
		// RFC 9110 excludes surrounding whitespace from a field value, and
		// Go's parser strips it before porthole sees the header: the
		// request is the valid one.
		{"a trailing space is stripped by HTTP, leaving the valid token", []string{"Bearer " + token + " "}, http.StatusOK, false},
		{"a tab instead of the space is refused", []string{"Bearer\t" + token}, http.StatusUnauthorized, false},
		{"a token off by one byte is refused", []string{"Bearer " + token[:len(token)-1] + flip(token[len(token)-1])}, http.StatusUnauthorized, true},
		{"a token prefix is refused", []string{"Bearer " + token[:len(token)-4]}, http.StatusUnauthorized, true},
		{"a token with a suffix is refused", []string{"Bearer " + token + "x"}, http.StatusUnauthorized, true},
		{"two Authorization headers are refused", []string{"Bearer " + token, "Bearer " + token}, http.StatusUnauthorized, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, a := range tc.auth {
				h.Add("Authorization", a)
			}
			resp, body := post(t, url+"/mcp", h, listToolsBody)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %.200q", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusUnauthorized {
				if !strings.Contains(body, "list_workflows") {
					t.Fatalf("admitted request did not list tools: %q", body)
				}
				return
			}
			if body != unauthorizedBody {
				t.Fatalf("401 body %q, want the fixed %q", body, unauthorizedBody)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(challenge, "Bearer") || strings.Contains(challenge, `error="invalid_token"`) != tc.invalid {
				t.Fatalf("WWW-Authenticate %q, want Bearer with invalid_token=%v", challenge, tc.invalid)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestAuthenticationMatrixHasNoUnexpectedSuccess(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20})
	paths := []string{"/mcp", "//mcp", "/mcp/", "/MCP", "/mcp%2f", "/./mcp", "/healthz/../mcp", "/mcp/..", "/%6dcp", "/mcp?x=1", "/mcp#f", "/metrics", "/healthz"}
	methods := []string{"POST", "GET", "DELETE", "PUT", "OPTIONS", "HEAD"}
	body := callBody("describe_namespace")
	creds := map[string][]string{
		"none":            nil,
		"empty Bearer":    {"Bearer "},
		"wrong scheme":    {"Basic " + f.alice},
		"lowercase":       {"bearer " + f.alice},
		"off by one byte": {"Bearer " + f.alice[:len(f.alice)-1] + flip(f.alice[len(f.alice)-1])},
		"token prefix":    {"Bearer " + f.alice[:20]},
		"two headers":     {"Bearer " + f.alice, "Bearer " + f.bob},
		"valid":           {"Bearer " + f.alice},
	}
	for _, path := range paths {
		for _, method := range methods {
			for name, cred := range creds {
				var b strings.Builder
				fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n", method, path, len(body))
				for _, c := range cred {
					fmt.Fprintf(&b, "Authorization: %s\r\n", c)
				}
				b.WriteString("\r\n" + body)
				status := rawRequest(t, f.url, b.String())
				ok2xx := status >= 200 && status < 300
				expected := name == "valid" && method == "POST" && (path == "/mcp" || path == "/mcp?x=1")
				if ok2xx && !expected {
					t.Errorf("%s %s with %s: status %d, an unexpected success", method, path, name, status)
				}
				if expected && !ok2xx {
					t.Errorf("%s %s with %s: status %d, want success", method, path, name, status)
				}
			}
		}
	}
}

func TestFailedAuthenticationIsLimitedPerAddressWithBoundedMemory(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 3, FailedAuthEvery: time.Hour})
	for i := 0; i < 3; i++ {
		if status, _, _ := f.do(t, "POST", "/mcp", bearer(fmt.Sprintf("ph_guess%d", i)), listToolsBody); status != http.StatusUnauthorized {
			t.Fatalf("guess %d: status %d, want 401", i, status)
		}
	}
	status, h, body := f.do(t, "POST", "/mcp", bearer("ph_guess4"), listToolsBody)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "failed-auth limit") {
		t.Fatalf("after 3 failures a fourth guess gets %d (Retry-After %q, body %q), want 429 with Retry-After naming the limit", status, h.Get("Retry-After"), body)
	}
}

// TestARequestWithoutATokenIsNeverCountedNorBlocked: a request that sends
// no bearer token in porthole's form guesses nothing. A hundred of them
// from one address leave its failed-authentication count where it was,
// and after the address is blocked for guessing, such a request still gets
// the 401 with its challenge (an MCP connector's first request, from which
// it begins OAuth discovery), not the 429.
func TestARequestWithoutATokenIsNeverCountedNorBlocked(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 3, FailedAuthEvery: time.Hour})
	tokenless := []http.Header{nil, {"Authorization": {"Basic " + f.alice}}, {"Authorization": {"bearer " + f.alice}}, {"Authorization": {"Bearer "}}}
	challenged := func(what string) {
		t.Helper()
		for _, h := range tokenless {
			status, got, _ := f.do(t, "POST", "/mcp", h, listToolsBody)
			if status != http.StatusUnauthorized || !strings.HasPrefix(got.Get("WWW-Authenticate"), `Bearer realm="porthole"`) {
				t.Fatalf("%s, a request with Authorization %q: status %d, WWW-Authenticate %q; want 401 with the challenge", what, h.Get("Authorization"), status, got.Get("WWW-Authenticate"))
			}
		}
	}
	for i := 0; i < 25; i++ {
		challenged("among a hundred token-less requests")
	}
	for i := 0; i < 3; i++ {
		if status, _, _ := f.do(t, "POST", "/mcp", bearer(fmt.Sprintf("ph_guess%d", i)), listToolsBody); status != http.StatusUnauthorized {
			t.Fatalf("guess %d after a hundred token-less requests: status %d, want 401 (they were counted)", i, status)
		}
	}
	if status, _, _ := f.do(t, "POST", "/mcp", bearer("ph_guess3"), listToolsBody); status != http.StatusTooManyRequests {
		t.Fatalf("a fourth guess: status %d, want 429", status)
	}
	challenged("from an address blocked for guessing")
}

// TestFailuresFromAnAddressDoNotLockOutAValidToken: strangers failing from
// an address (behind an ingress without trusted proxies, every client
// shares one) once made even a valid token from it get 429.
func TestFailuresFromAnAddressDoNotLockOutAValidToken(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 3, FailedAuthEvery: time.Hour})
	for i := 0; i < 10; i++ {
		f.do(t, "POST", "/mcp", bearer(fmt.Sprintf("ph_guess%d", i)), listToolsBody)
	}
	for _, who := range []string{f.alice, f.bob} {
		if status, _, body := f.do(t, "POST", "/mcp", bearer(who), listToolsBody); status != http.StatusOK {
			t.Fatalf("a valid token after 10 failures from its address: status %d %q, want 200", status, body)
		}
	}

}

func TestRevokedTokensStopWorkingAfterAReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	alice, _ := tokens.Append(file, "alice")
	bob, _ := tokens.Append(file, "bob")
	store, err := tokens.OpenStore(file, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{Tokens: store.Current})
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(bob), listToolsBody); status != 200 {
		t.Fatalf("bob before revocation: %d", status)
	}
	writeFile(t, file, "alice "+tokens.Digest(alice)+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go store.Watch(ctx, 20*time.Millisecond)
	waitFor(t, func() bool {
		status, _, _ := f.do(t, "POST", "/mcp", bearer(bob), listToolsBody)
		return status == http.StatusUnauthorized
	})
	writeFile(t, file, "this is not a tokens file\n")
	time.Sleep(100 * time.Millisecond)
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(alice), listToolsBody); status != 200 {
		t.Fatalf("a malformed file replaced the tokens in force: alice gets %d", status)
	}
	if changed, err := store.Reload(); changed || err == nil {
		t.Fatalf("Reload of a malformed file = %v, %v; want an error and no change", changed, err)
	}
}

// TestTheTokensFileReservesTheGatewaysOwnPrincipals: the names the gateway
// gives callers without a token are the ones the tokens file refuses.
func TestTheTokensFileReservesTheGatewaysOwnPrincipals(t *testing.T) {
	t.Parallel()
	for _, p := range []string{PrincipalLocal, PrincipalAnonymous} {
		if !slices.Contains(tokens.Reserved, p) {
			t.Errorf("%q is not among tokens.Reserved %v", p, tokens.Reserved)
		}
	}
}

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
