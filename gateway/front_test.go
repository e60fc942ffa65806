package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/policy"
)

// front is an httptest server running the whole HTTP chain over a fake
// reader, with tokens for alice and bob.
type front struct {
	url        string
	alice, bob string
	tokensFile string
	auditor    *fakeAuditor
	reader     *fakeReader
	srv        *httptest.Server
	server     *Server
}

func newFront(t *testing.T, opts HTTPOptions, sopts ...func(*Options)) *front {
	t.Helper()
	f := &front{tokensFile: filepath.Join(t.TempDir(), "tokens"), reader: &fakeReader{}, auditor: &fakeAuditor{}}
	var err error
	if f.alice, err = tokens.Append(f.tokensFile, "alice"); err != nil {
		t.Fatal(err)
	}
	if f.bob, err = tokens.Append(f.tokensFile, "bob"); err != nil {
		t.Fatal(err)
	}
	o := Options{Namespace: "default", Audit: f.auditor}
	for _, s := range sopts {
		s(&o)
	}
	g, err := NewServer(f.reader, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	f.server = g
	if opts.Tokens == nil && !opts.DangerouslyServeWithoutAuthentication {
		set, err := tokens.Load(f.tokensFile)
		if err != nil {
			t.Fatal(err)
		}
		opts.Tokens = func() *tokens.Set { return set }
	}
	h, err := g.Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	f.url = f.srv.URL
	return f
}

func callBody(tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, tool)
}

func (f *front) do(t *testing.T, method, path string, header http.Header, body string) (int, http.Header, string) {
	t.Helper()
	resp, b := send(t, method, f.url+path, header, body)
	return resp.StatusCode, resp.Header, b
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// rawRequest sends bytes as they are, for paths net/http would clean.
func rawRequest(t *testing.T, url, raw string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	resp.Body.Close()
	return resp.StatusCode
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

func TestSpoofedForwardingHeadersChangeNeitherIdentityNorLimitKey(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 2, FailedAuthEvery: time.Hour})
	for i := 0; i < 2; i++ {
		f.do(t, "POST", "/mcp", http.Header{"Authorization": {"Bearer ph_nope"}, "X-Forwarded-For": {fmt.Sprintf("203.0.113.%d", i)}, "X-Real-Ip": {"198.51.100.7"}}, listToolsBody)
	}
	status, _, _ := f.do(t, "POST", "/mcp", http.Header{"Authorization": {"Bearer ph_nope"}, "X-Forwarded-For": {"203.0.113.99"}}, listToolsBody)
	if status != http.StatusTooManyRequests {
		t.Fatalf("a new X-Forwarded-For escaped the failure limit: status %d", status)
	}
	for _, r := range f.auditor.all() {
		if r.ClientAddr != "127.0.0.1" {
			t.Fatalf("audit names client %q; a spoofed header must not change it", r.ClientAddr)
		}
	}
}

func TestForwardedForIsBelievedOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	trusted, _ := ParseTrustedProxies("10.0.0.0/8, 127.0.0.1")
	cases := []struct {
		name, remote, xff, want string
	}{
		{"an untrusted peer's header is ignored", "192.0.2.5:1234", "203.0.113.1", "192.0.2.5"},
		{"a trusted proxy's last hop is the client", "127.0.0.1:1", "203.0.113.1", "203.0.113.1"},
		{"a client cannot prepend an address", "127.0.0.1:1", "198.51.100.66, 203.0.113.1", "203.0.113.1"},
		{"chains of trusted proxies are walked", "127.0.0.1:1", "203.0.113.1, 10.1.2.3", "203.0.113.1"},
		{"garbage stops the walk at the last trusted hop", "127.0.0.1:1", "203.0.113.1, not-an-ip", "127.0.0.1"},
		{"IPv4 in IPv6 is one address", "[::ffff:192.0.2.5]:1", "", "192.0.2.5"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := resolveClient(r, trusted).String(); got != tc.want {
			t.Errorf("%s: client %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/33"); err == nil {
		t.Error("a bad CIDR was accepted")
	}
}

func TestHostAndOriginAllowlists(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Hosts: HostPolicy{Hosts: []string{"localhost", "127.0.0.1", "mcp.example.com"}, Origins: []string{"https://app.example.com"}, LoopbackOrigins: true}})
	cases := []struct {
		name   string
		host   string
		origin []string
		want   int
	}{
		{"loopback without Origin", "127.0.0.1", nil, 200},
		{"localhost with a port", "localhost:8082", nil, 200},
		{"the public name behind a same-pod proxy", "mcp.example.com", nil, 200},
		{"a rebinding name", "evil.example", nil, 403},
		{"a rebinding name with a port", "evil.example:8082", nil, 403},
		{"a listed name as a suffix", "mcp.example.com.evil.example", nil, 403},
		{"an allowed origin", "127.0.0.1", []string{"https://app.example.com"}, 200},
		{"an allowed origin with a slash", "127.0.0.1", []string{"https://app.example.com/"}, 200},
		{"a foreign origin", "127.0.0.1", []string{"https://evil.example"}, 403},
		{"the allowed origin over http", "127.0.0.1", []string{"http://app.example.com"}, 403},
		{"a null origin", "127.0.0.1", []string{"null"}, 403},
		{"two origins", "127.0.0.1", []string{"https://app.example.com", "https://evil.example"}, 403},
		{"a page on this machine", "127.0.0.1", []string{"http://localhost:6274"}, 200},
		{"a page on this machine by address", "127.0.0.1:8082", []string{"http://127.0.0.1:8082"}, 200},
		{"a look-alike of this machine", "127.0.0.1", []string{"http://localhost.evil.example"}, 403},
	}
	for _, tc := range cases {
		var b strings.Builder
		fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n", tc.host, f.alice, len(listToolsBody))
		for _, o := range tc.origin {
			fmt.Fprintf(&b, "Origin: %s\r\n", o)
		}
		b.WriteString("\r\n" + listToolsBody)
		if got := rawRequest(t, f.url, b.String()); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestStrictDecodingRefusesAmbiguousBodies(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	cases := []struct {
		name, body, contentType string
		want                    int
	}{
		{"a duplicate key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","name":"list_workflows","arguments":{}}}`, "application/json", 400},
		{"a case variant", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","NAME":"list_workflows","arguments":{}}}`, "application/json", 400},
		{"the tool's name in another case", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"describe_namespace","arguments":{}}}`, "application/json", 400},
		{"a Kelvin-sign variant", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{"\u212aey":1,"key":2}}}`, "application/json", 400},
		{"a nested duplicate", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"a","workflowId":"b"}}}`, "application/json", 400},
		{"a batch", `[` + callBody("describe_namespace") + `]`, "application/json", 400},
		{"trailing data", callBody("describe_namespace") + `{}`, "application/json", 400},
		{"trailing garbage", callBody("describe_namespace") + ` x`, "application/json", 400},
		{"not JSON", `{"jsonrpc":`, "application/json", 400},
		{"a response instead of a request", `{"jsonrpc":"2.0","id":1,"result":{}}`, "application/json", 400},
		{"an unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":1}`, "application/json", 400},
		{"a wrong version", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, "application/json", 400},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}}`, "application/json", 400},
		{"a wrong content type", callBody("describe_namespace"), "text/plain", 415},
		{"no content type", callBody("describe_namespace"), "", 415},
		{"a body over the cap", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`, "application/json", 413},
	}
	for _, tc := range cases {
		h := bearer(f.alice)
		h.Set("Content-Type", tc.contentType)
		status, hdr, body := f.do(t, "POST", "/mcp", h, tc.body)
		if status != tc.want {
			t.Errorf("%s: status %d, want %d (%.200s)", tc.name, status, tc.want, body)
		}
		if status >= 400 && status != 413 && strings.HasPrefix(hdr.Get("Content-Type"), "application/json") && !strings.Contains(body, `"error"`) {
			t.Errorf("%s: refusal %q is not a JSON-RPC error", tc.name, body)
		}
	}
	if n := f.reader.count(); n != 0 {
		t.Fatalf("%d refused bodies reached Temporal", n)
	}
	for _, r := range f.auditor.all() {
		if r.Kind != audit.KindDenial {
			t.Fatalf("a refused body left a %s record; each should be a denial", r.Kind)
		}
	}
}

// TestHeadersThatDisagreeWithTheBodyAreRefusedAtTheDecoder: a 2026-07-28
// request whose Mcp-Method or Mcp-Name says one thing and whose body
// another is refused with 400 and the go-sdk's header-mismatch code by
// porthole's decoder, with a denial record, before the rate limiter
// charges the body's tool or the call is recorded; agreeing headers pass.
func TestHeadersThatDisagreeWithTheBodyAreRefusedAtTheDecoder(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	for _, tc := range []struct {
		name, method, tool string
		want               int
	}{
		{"another tool in Mcp-Name", "tools/call", "describe_workflow", 400},
		{"another method in Mcp-Method", "tools/list", "describe_namespace", 400},
		{"no Mcp-Name", "tools/call", "", 400},
		// A value long enough that a refusal quoting it cut to fit would
		// cut inside the token (found by review): refusals quote no value.
		{"a secret in Mcp-Name", "tools/call", strings.Repeat("x", 240) + " ghp_" + strings.Repeat("a1B2", 9), 400},
		{"agreeing headers", "tools/call", "describe_namespace", 200},
	} {
		h := bearer(f.alice)
		h.Set("Content-Type", "application/json")
		h.Set("Mcp-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", tc.method)
		if tc.tool != "" {
			h.Set("Mcp-Name", tc.tool)
		}
		status, _, body := f.do(t, "POST", "/mcp", h, call)
		if status != tc.want || (tc.want == 400 && !strings.Contains(body, `"code":-32020`)) || strings.Contains(body, "ghp_") {
			t.Errorf("%s: status %d, want %d (%.300s)", tc.name, status, tc.want, body)
		}
	}
	var denials, calls int
	for _, r := range f.auditor.all() {
		switch r.Kind {
		case audit.KindDenial:
			denials++
			if !strings.Contains(r.Reason, "standard headers disagree") || strings.Contains(r.Reason, "ghp_") {
				t.Errorf("denial reason %q", r.Reason)
			}
		case audit.KindCall:
			calls++
		}
	}
	if denials != 4 || calls != 1 {
		t.Errorf("%d denials and %d call records, want 4 and 1", denials, calls)
	}
}

// discoverBody is a 2026-07-28 server/discover request, with the _meta
// such a request carries.
const discoverBody = `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`

// TestServerDiscoverPassesTheChainLikeAnyMethod: server/discover, new in
// 2026-07-28, is authenticated, strictly decoded, held to its headers and
// rate-limited like every method, and, like initialize and ping, answered
// without a call record (it reveals nothing of Temporal; docs/audit.md).
func TestServerDiscoverPassesTheChainLikeAnyMethod(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 2, Global: 1000, GlobalBurst: 1000}})
	discover := func(token, method, body string) (int, string) {
		h := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		status, _, b := f.do(t, "POST", "/mcp", h, body)
		return status, b
	}
	if status, _ := discover("", "server/discover", discoverBody); status != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", status)
	}
	if status, b := discover(f.alice, "server/discover", discoverBody); status != http.StatusOK || !strings.Contains(b, `"supportedVersions"`) {
		t.Errorf("discover: %d %.300s", status, b)
	}
	if status, _ := discover(f.alice, "server/discover", strings.Replace(discoverBody, `"id":7`, `"id":7,"ID":8`, 1)); status != http.StatusBadRequest {
		t.Errorf("an ambiguous body: %d, want 400", status)
	}
	if status, _ := discover(f.alice, "server/discover", discoverBody); status != http.StatusTooManyRequests {
		t.Errorf("past the burst of 2 (a discover and a refused body): %d, want 429", status)
	}
	if status, _ := discover(f.bob, "tools/list", discoverBody); status != http.StatusBadRequest {
		t.Errorf("an Mcp-Method that is not the body's: %d, want 400", status)
	}
	for _, r := range f.auditor.all() {
		if r.Kind == audit.KindCall || r.Kind == audit.KindResult {
			t.Errorf("server/discover left a %s record", r.Kind)
		}
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("a principal's burst is honoured within its cost, then 429 with Retry-After", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 1, PerPrincipalBurst: 6, Global: 1000, GlobalBurst: 1000}})
		accepted := 0
		var last http.Header
		for i := 0; i < 10; i++ {
			status, h, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("get_workflow_history")) // cost 3
			switch status {
			case http.StatusOK:
				accepted++
			case http.StatusTooManyRequests:
				last = h
				if !strings.Contains(body, "principal limit") {
					t.Errorf("429 body %q does not name the limit", body)
				}
			default:
				t.Fatalf("status %d", status)
			}
		}
		if accepted != 2 {
			t.Fatalf("accepted %d history calls of cost 3 from a burst of 6, want 2", accepted)
		}
		if ra, err := strconv.Atoi(last.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
			t.Fatalf("Retry-After %q, want 1..3 s for 3 units at 1/s", last.Get("Retry-After"))
		}
	})
	t.Run("one principal's flood does not raise another's refusals", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 2, PerPrincipalBurst: 5, Global: 1000, GlobalBurst: 1000}})
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 30; j++ {
					f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace"))
				}
			}()
		}
		wg.Wait()
		for i := 0; i < 5; i++ {
			if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.bob), callBody("describe_namespace")); status != http.StatusOK {
				t.Fatalf("bob's call %d after alice's flood: status %d", i, status)
			}
		}
	})
	t.Run("the global limit protects the namespace across principals", func(t *testing.T) {
		t.Parallel()
		f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 1000, PerPrincipalBurst: 1000, Global: 1, GlobalBurst: 4}})
		for _, who := range []string{f.alice, f.bob} {
			f.do(t, "POST", "/mcp", bearer(who), callBody("list_workflows")) // cost 2 each
		}
		status, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace"))
		if status != http.StatusTooManyRequests || !strings.Contains(body, "global limit") {
			t.Fatalf("after the global burst: status %d body %q", status, body)
		}
	})
}

func TestGrantsShapeTheToolListAndRefuseCalls(t *testing.T) {
	t.Parallel()
	pf, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["describe_namespace","list_workflows"]},"bob":{"tools":["*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{}, func(o *Options) { o.Grants = pf.Grants() })
	_, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
	if strings.Count(body, `"name":"`) != 2 || !strings.Contains(body, "describe_namespace") || strings.Contains(body, "get_workflow_history") {
		t.Fatalf("alice's tools/list = %.300s", body)
	}
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.bob), listToolsBody)
	if strings.Count(body, `"name":"`) != len(policy.Tools) {
		t.Fatalf("bob's tools/list has %d tools", strings.Count(body, `"name":"`))
	}
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.alice), callBody("get_workflow_history"))
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "not one you may call") {
		t.Fatalf("alice calling an ungranted tool: %s", body)
	}
	if n := f.reader.count(); n != 0 {
		t.Fatalf("an ungranted call reached Temporal")
	}
	var denied bool
	for _, r := range f.auditor.all() {
		denied = denied || r.Kind == audit.KindResult && r.Tool == "get_workflow_history" && r.Outcome == audit.OutcomeDenied && r.Principal == "alice"
	}
	if !denied {
		t.Fatal("the ungranted call was not audited as a denial")
	}
	for _, bad := range []string{`{"principals":{"a":{"tools":["terminate_workflow"]}}}`, `{"principals":{},"extra":1}`, `{}`} {
		if _, err := policy.ParseFile([]byte(bad)); err == nil {
			t.Errorf("policy %s was accepted", bad)
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

func TestSlowAndOversizedClients(t *testing.T) {
	g, _ := newTestServer(t, &fakeReader{})
	h, _ := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	srv := NewHTTPServer(h, nopLogger())
	srv.ReadHeaderTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	t.Run("a client that trickles its headers is cut off while a good one is served", func(t *testing.T) {
		slow, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		io.WriteString(slow, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
		done := make(chan error, 1)
		go func() {
			for i := 0; i < 20; i++ {
				time.Sleep(50 * time.Millisecond)
				if _, err := io.WriteString(slow, "X-Slow: a\r\n"); err != nil {
					done <- err
					return
				}
			}
			_, err := slow.Read(make([]byte, 1))
			done <- err
		}()
		good := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(listToolsBody), listToolsBody)
		if status := rawRequest(t, "http://"+addr, good); status != 200 {
			t.Fatalf("the good client got %d while a slow one trickled", status)
		}
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("the trickling connection was not closed")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the trickling connection was still open after 5s")
		}
	})

	t.Run("oversized headers get 431", func(t *testing.T) {
		raw := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
		if status := rawRequest(t, "http://"+addr, raw); status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", status)
		}
	})

	t.Run("oversized bodies get 413 without memory growth", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < 20; i++ {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 64<<20)
			chunk := strings.Repeat("a", 64<<10)
			status := 0
			go func() {
				for j := 0; j < 1024; j++ {
					if _, err := io.WriteString(conn, chunk); err != nil {
						return
					}
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			conn.Close()
			if status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413", status)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 16<<20 {
			t.Fatalf("the heap grew by %d bytes over 20 bodies of 64 MiB", grew)
		}
	})
}

func TestTheCacheCoalescesIdenticalReads(t *testing.T) {
	t.Parallel()
	r := &countingReader{fakeReader: &fakeReader{}, release: make(chan struct{})}
	g, a := newTestServer(t, r)
	cs := connect(t, g)
	const n = 20
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), callParams("describe_namespace"))
			if err == nil && !res.IsError {
				results[i] = "ok"
			}
		}(i)
	}
	waitFor(t, func() bool { return r.calls.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // let the others join the flight
	close(r.release)
	wg.Wait()
	if got := r.calls.Load(); got != 1 {
		t.Fatalf("%d identical concurrent reads cost Temporal %d calls, want 1", n, got)
	}
	res, err := cs.CallTool(context.Background(), callParams("describe_namespace"))
	if err != nil || !strings.Contains(textOf(res), `"ageSeconds"`) {
		t.Fatalf("a cached answer does not say its age: %v %s", err, textOf(res))
	}
	if got := r.calls.Load(); got != 1 {
		t.Fatalf("the answer was not kept: %d calls", got)
	}
	cached := 0
	for _, rec := range a.all() {
		if rec.Kind == audit.KindResult && rec.Cached {
			cached++
		}
	}
	if cached < n {
		t.Fatalf("%d result records say cached, want at least %d", cached, n)
	}
}

func TestAdminListener(t *testing.T) {
	t.Parallel()
	g, _ := newTestServer(t, &fakeReader{})
	srv := httptest.NewServer(g.AdminHandler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, _ := get("/healthz"); status != 200 {
		t.Errorf("/healthz %d", status)
	}
	if status, body := get("/readyz"); status != 503 || !strings.Contains(body, "Temporal does not answer") {
		t.Errorf("/readyz with Temporal down: %d %q", status, body)
	}
	if status, body := get("/metrics"); status != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics %d", status)
	}
	if status, _ := get("/debug/pprof/"); status != 404 {
		t.Errorf("the profiler is served without being asked for: %d", status)
	}
	prof := httptest.NewServer(g.AdminHandlerWithProfiling())
	defer prof.Close()
	if resp, err := http.Get(prof.URL + "/debug/pprof/"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the profiler, asked for, is not served: %v", err)
	} else {
		resp.Body.Close()
	}
	front := newFront(t, HTTPOptions{})
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/debug/pprof/"} {
		if status, _, _ := front.do(t, "GET", path, bearer(front.alice), ""); status != 404 {
			t.Errorf("the MCP listener serves %s: %d", path, status)
		}
	}
}

// TestLimitsThatWouldNotLimitAreRefused: a NaN or infinite rate, or a
// burst of zero, let every call through or none; the front refuses to start
// with one rather than serve without a limit.
func TestLimitsThatWouldNotLimitAreRefused(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	for _, l := range []limit.Limits{
		{PerPrincipal: math.NaN(), PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30},
		{PerPrincipal: 5, PerPrincipalBurst: 20, Global: math.Inf(1), GlobalBurst: 30},
		{PerPrincipal: 5, PerPrincipalBurst: 0, Global: 15, GlobalBurst: 30},
		{PerPrincipal: -1, PerPrincipalBurst: 20, Global: 15, GlobalBurst: 30},
	} {
		if _, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true, Limits: l}); err == nil {
			t.Errorf("limits %+v were accepted", l)
		}
	}
}

// TestCostsStandWithTheDefaultRates: limits that give costs but no rates
// take the default rates and keep the costs; the costs used to be dropped
// with the rest, so a tool priced above any burst was charged 1.
func TestCostsStandWithTheDefaultRates(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Limits: limit.Limits{Costs: map[string]int{"describe_namespace": 50}}})
	if status, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("describe_namespace")); status != http.StatusTooManyRequests {
		t.Fatalf("a call costing more than the default burst: %d %s, want 429", status, body)
	}
}

// TestTheHeaderCapIsWhatSecurityMDSays: a request's line and headers are
// capped at MaxHeaderBytes (16 KiB) in all. net/http reads 4 KiB beyond its
// own setting, which made the cap about 20 KiB while the docs said 16.
func TestTheHeaderCapIsWhatSecurityMDSays(t *testing.T) {
	t.Parallel()
	srv := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	status := func(total int) int {
		head := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: "
		req := head + strings.Repeat("a", total-len(head)-len("\r\n\r\n")) + "\r\n\r\n"
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(MaxHeaderBytes - 512); got != http.StatusOK {
		t.Errorf("headers of %d bytes: status %d, want 200", MaxHeaderBytes-512, got)
	}
	if got := status(MaxHeaderBytes + 512); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers of %d bytes: status %d, want 431", MaxHeaderBytes+512, got)
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

// TestReadyzSaysWhenTheTokensFileCannotBeRead: while the tokens file is gone
// every static token is refused, /readyz is not ready and says why, and the
// metric shows it; once the file is back, all three recover.
func TestReadyzSaysWhenTheTokensFileCannotBeRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	alice, err := tokens.Append(path, "alice")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	store, err := tokens.OpenStore(path, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{Tokens: store.Current})
	f.server.WatchTokens(store)
	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	readyz := func() (int, string) {
		resp, body := send(t, http.MethodGet, admin.URL+"/readyz", nil, "")
		return resp.StatusCode, body
	}
	metricOK := func() string {
		_, body := send(t, http.MethodGet, admin.URL+"/metrics", nil, "")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "porthole_tokens_file_ok ") {
				return strings.TrimPrefix(line, "porthole_tokens_file_ok ")
			}
		}
		return "absent"
	}
	os.Remove(path)
	store.Reload()
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(alice), listToolsBody); status != http.StatusUnauthorized {
		t.Fatalf("a token whose file is gone: status %d, want 401", status)
	}
	if status, body := readyz(); status != http.StatusServiceUnavailable || !strings.Contains(body, tokens.ProblemUnreadable) {
		t.Fatalf("/readyz with the tokens file gone: %d %q", status, body)
	}
	if got := metricOK(); got != "0" {
		t.Fatalf("porthole_tokens_file_ok = %s with the file gone, want 0", got)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	store.Reload()
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(alice), listToolsBody); status != http.StatusOK {
		t.Fatalf("the file back: status %d, want 200", status)
	}
	if got := metricOK(); got != "1" {
		t.Fatalf("porthole_tokens_file_ok = %s with the file back, want 1", got)
	}
}

// TestRefusedBodiesAreChargedAndTheirReasonsBounded: a body strict decoding
// refuses costs its principal a unit like any request (past the burst, 429),
// and the denial's reason quotes at most a capped, redacted piece of it. An
// AWS key id in a refused body once reached the audit log as sent.
func TestRefusedBodiesAreChargedAndTheirReasonsBounded(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 3, Global: 1000, GlobalBurst: 1000}})
	bad := `{"jsonrpc":"2.0","id":1,"method":"tools/list","AKIAPORTHOLESEED0001":1,"` + strings.Repeat("k", 100000) + `":2}`
	for i := 0; i < 3; i++ {
		if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.alice), bad); status != http.StatusBadRequest {
			t.Fatalf("bad body %d: status %d, want 400", i, status)
		}
	}
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.alice), bad); status != http.StatusTooManyRequests {
		t.Fatalf("a bad body past the burst: status %d, want 429", status)
	}
	for _, r := range f.auditor.all() {
		if r.Kind != audit.KindDenial || r.Outcome != audit.OutcomeInvalid {
			continue
		}
		if strings.Contains(r.Reason, "AKIAPORTHOLESEED0001") || len(r.Reason) > 600 {
			t.Fatalf("a denial's reason holds the key id or is %d bytes: %.300q", len(r.Reason), r.Reason)
		}
	}
}

// TestDenialsPastTheBudgetAreSummarised: a flood of refused requests from
// one address writes its first denials one by one and the rest as one
// summary per interval, so refusals cannot fill the disk; a principal
// hammering its rate limit is budgeted as that principal. The summaries
// still count every denial.
func TestDenialsPastTheBudgetAreSummarised(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20, Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 1, Global: 1000, GlobalBurst: 1000}},
		func(o *Options) { o.DenialBudget, o.DenialInterval = 5, time.Hour })
	for i := 0; i < 200; i++ {
		f.do(t, "POST", "/mcp", bearer(fmt.Sprintf("ph_guess%d", i)), listToolsBody)
	}
	f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody) // alice's burst
	for i := 0; i < 50; i++ {
		f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
	}
	count := func() (unauth, limited, summarised map[string]int) {
		unauth, limited, summarised = map[string]int{}, map[string]int{}, map[string]int{}
		for _, r := range f.auditor.all() {
			switch {
			case r.Kind == audit.KindDenial && r.Outcome == audit.OutcomeUnauthenticated:
				unauth[r.ClientAddr]++
			case r.Kind == audit.KindDenial && r.Outcome == audit.OutcomeRateLimited:
				limited[r.Principal]++
			case r.Kind == audit.KindDenials:
				for _, g := range r.Groups {
					summarised[string(g.Outcome)] += g.Count
				}
			}
		}
		return
	}
	unauth, limited, summarised := count()
	if len(unauth) != 1 || unauth["127.0.0.1"] != 5 || limited["alice"] != 5 || len(summarised) != 0 {
		t.Fatalf("before the interval ends: %v unauthenticated, %v rate limited, %v summarised; want 5 of each written, none summarised", unauth, limited, summarised)
	}
	f.server.Close()
	_, _, summarised = count()
	if summarised["unauthenticated"] != 195 || summarised["rate_limited"] != 45 {
		t.Fatalf("summarised at shutdown: %v; want 195 unauthenticated and 45 rate limited", summarised)
	}
}

// TestAReloadedPolicyTakesEffectAndAMissingOneGrantsNothing: the policy
// file's grants are read on every call, so a reload takes effect at once;
// while the file is gone nobody may call a tool (never "no policy", which
// grants every tool), and /readyz says why.
func TestAReloadedPolicyTakesEffectAndAMissingOneGrantsNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, path, `{"principals": {"alice": {"tools": ["*"]}}}`)
	store, err := policy.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{}, func(o *Options) { o.Policy = store })
	admin := httptest.NewServer(f.server.AdminHandler())
	t.Cleanup(admin.Close)
	tools := func() int {
		_, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
		return strings.Count(body, `"name":"`)
	}
	if n := tools(); n != len(policy.Tools) {
		t.Fatalf("alice granted every tool sees %d", n)
	}
	writeFile(t, path, `{"principals": {"alice": {"tools": ["describe_namespace"]}}}`)
	store.Reload()
	if n := tools(); n != 1 {
		t.Fatalf("after a reload granting one tool alice sees %d", n)
	}
	os.Remove(path)
	store.Reload()
	if n := tools(); n != 0 {
		t.Fatalf("with the policy file gone alice sees %d tools, want none", n)
	}
	resp, body := send(t, http.MethodGet, admin.URL+"/readyz", nil, "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, policy.ProblemPolicyUnreadable) {
		t.Fatalf("/readyz with the policy file gone: %d %q", resp.StatusCode, body)
	}
}

// Request smuggling needs two readers to disagree on where a request ends.
// porthole's server takes Transfer-Encoding over Content-Length, and
// refuses what could be read two ways: conflicting lengths, a transfer
// coding other than chunked, a header name with space before its colon.
// HTTP/2 reaches porthole only through the ingress, which frames it.
func TestAmbiguousRequestFramingIsReadOneWayOrRefused(t *testing.T) {
	g, _ := newTestServer(t, &fakeReader{})
	h, _ := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	srv := NewHTTPServer(h, nopLogger())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String()
	const head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\n"
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(listToolsBody), listToolsBody)
	for _, c := range []struct {
		what, headers, body string
		want                int
	}{
		// Read by its chunks: read by its Content-Length, the body would
		// be "{\"js" and refused as malformed.
		{"Content-Length beside chunked", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", chunked, http.StatusOK},
		{"two Content-Lengths that differ", fmt.Sprintf("Content-Length: %d\r\nContent-Length: 4\r\n", len(listToolsBody)), listToolsBody, http.StatusBadRequest},
		{"a list of Content-Lengths", fmt.Sprintf("Content-Length: %d, 4\r\n", len(listToolsBody)), listToolsBody, http.StatusBadRequest},
		{"a signed Content-Length", fmt.Sprintf("Content-Length: +%d\r\n", len(listToolsBody)), listToolsBody, http.StatusBadRequest},
		{"a transfer coding other than chunked", "Transfer-Encoding: gzip, chunked\r\n", chunked, http.StatusNotImplemented},
		{"chunked twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunked, http.StatusNotImplemented},
		{"space before the colon", "Transfer-Encoding : chunked\r\n", chunked, http.StatusBadRequest},
		// A folded line is unfolded to one space (RFC 9112 5.2) and read
		// by its chunks.
		{"a folded Transfer-Encoding", "Transfer-Encoding:\r\n chunked\r\n", chunked, http.StatusOK},
	} {
		if got := rawRequest(t, url, head+c.headers+"\r\n"+c.body); got != c.want {
			t.Errorf("%s: %d; want %d", c.what, got, c.want)
		}
	}
}
