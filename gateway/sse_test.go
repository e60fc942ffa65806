package gateway

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
)

// bearerTransport adds a token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func newSSEFront(t *testing.T, limits limit.Limits) (url, alice, bob string, a *fakeAuditor) {
	t.Helper()
	f := newFront(t, HTTPOptions{LegacySSE: true, Limits: limits})
	return f.url, f.alice, f.bob, f.auditor
}

func TestLegacySSEServesBehindTheSameChain(t *testing.T) {
	t.Parallel()
	url, alice, _, a := newSSEFront(t, limit.Limits{})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "old-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.SSEClientTransport{Endpoint: url + "/sse", HTTPClient: &http.Client{Transport: bearerTransport{alice}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 8 {
		t.Fatalf("tools/list over SSE: %v, %v", tools, err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "describe_namespace"}); err != nil {
		t.Fatal(err)
	}
	var calls int
	for _, r := range a.all() {
		if r.Kind == audit.KindCall {
			calls++
			if r.Principal != "alice" || r.Transport != "sse" {
				t.Errorf("SSE call recorded as %q over %q, want alice over sse", r.Principal, r.Transport)
			}
		}
	}
	if calls != 2 {
		t.Fatalf("%d call records, want 2", calls)
	}
}

func TestLegacySSESessionsBelongToTheirPrincipal(t *testing.T) {
	t.Parallel()
	url, alice, bob, _ := newSSEFront(t, limit.Limits{})
	endpoint := openSSE(t, url, alice)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	postAs := func(token string) int {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		r, _ := send(t, http.MethodPost, url+endpoint, h, body)
		return r.StatusCode
	}
	if got := postAs(bob); got != http.StatusNotFound {
		t.Fatalf("bob posting into alice's session: %d, want 404", got)
	}
	if got := postAs(""); got != http.StatusUnauthorized {
		t.Fatalf("posting without a token: %d, want 401", got)
	}
	if got := postAs(alice); got != http.StatusAccepted {
		t.Fatalf("alice posting into her session: %d, want 202", got)
	}
	if r, _ := send(t, http.MethodGet, url+"/sse", nil, ""); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("opening a stream without a token: %d", r.StatusCode)
	}
}

// openSSE opens a stream as the token's principal and returns the endpoint
// its first event names; the stream stays open until the test ends.
func openSSE(t *testing.T, url, token string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if endpoint, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(endpoint, "sessionid=") {
			return endpoint
		}
	}
	t.Fatal("no endpoint event")
	return ""
}

func TestLegacySSESharesTheRateLimitsOfMCP(t *testing.T) {
	t.Parallel()
	url, alice, _, _ := newSSEFront(t, limit.Limits{PerPrincipal: 0.01, PerPrincipalBurst: 3, Global: 1000, GlobalBurst: 1000})
	endpoint := openSSE(t, url, alice)
	for i := 0; i < 3; i++ {
		if r, _ := send(t, http.MethodPost, url+"/mcp", bearer(alice), listToolsBody); r.StatusCode != http.StatusOK {
			t.Fatalf("call %d on /mcp: %d", i, r.StatusCode)
		}
	}
	if r, body := send(t, http.MethodPost, url+endpoint, bearer(alice), listToolsBody); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after alice spent her burst on /mcp, /sse answered %d %q; the limits must be one", r.StatusCode, body)
	}
}

func TestLegacySSEIsOffUnlessAsked(t *testing.T) {
	t.Parallel()
	f := newFront(t, HTTPOptions{})
	if status, _, _ := f.do(t, http.MethodGet, "/sse", bearer(f.alice), ""); status != http.StatusNotFound {
		t.Fatalf("/sse without the legacy transport: %d, want 404", status)
	}
}
