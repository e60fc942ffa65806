package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/porthole-dev/porthole/policy"
)

// pageFetch is what a page's script saw calling porthole: the status and
// challenge of a call without a token, the status and tool count of one
// with it, or the error fetch threw.
type pageFetch struct {
	Status    int    `json:"status"`
	Challenge string `json:"challenge"`
	Status2   int    `json:"status2"`
	Tools     int    `json:"tools"`
	Error     string `json:"error"`
}

// fetchScript calls endpoint from a page as a browser MCP client does:
// tools/list without a token, reading the 401's WWW-Authenticate, then
// with the token.
const fetchScript = `(async () => {
  const out = {};
  const call = (auth) => fetch(%[1]q, {method: "POST", headers: Object.assign({"Content-Type": "application/json",
    "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}, auth ? {"Authorization": "Bearer " + %[2]q} : {}),
    body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/list", params: {}})});
  try {
    const r = await call(false);
    out.status = r.status; out.challenge = r.headers.get("WWW-Authenticate") || "";
    const r2 = await call(true);
    out.status2 = r2.status; out.tools = (await r2.json()).result.tools.length;
  } catch (e) { out.error = String(e); }
  return JSON.stringify(out);
})()`

// TestABrowserPageOfAnAllowedOriginCallsPortholeAndAnotherIsBlocked: in
// the real Chromium, a page served from an origin in
// PORTHOLE_ALLOWED_ORIGINS fetches /mcp across origins, reads the 401's
// WWW-Authenticate, then lists the tools with a token; a page of an origin
// not on the list is stopped by the browser at the preflight. The two
// origins are two names Chromium maps to 127.0.0.1, loopback origins
// being turned off.
func TestABrowserPageOfAnAllowedOriginCallsPortholeAndAnotherIsBlocked(t *testing.T) {
	t.Parallel()
	chromium(t)
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>an MCP client</title><p>an MCP client")
	}))
	defer pages.Close()
	_, port, _ := net.SplitHostPort(pages.Listener.Addr().String())
	allowed, other := "http://allowed.test:"+port, "http://other.test:"+port
	endpoint, token, _, _ := serveHTTP(t, "PORTHOLE_ALLOWED_ORIGINS="+allowed, "PORTHOLE_ALLOW_LOOPBACK_ORIGINS=false")

	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP allowed.test 127.0.0.1, MAP other.test 127.0.0.1"))
	visit := func(origin string) pageFetch {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/"), chromedp.WaitReady("body")); err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(fetchScript, endpoint, token), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		var got pageFetch
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("%s: %v: %s", origin, err, raw)
		}
		return got
	}
	if got := visit(allowed); got.Error != "" || got.Status != http.StatusUnauthorized || got.Challenge == "" ||
		got.Status2 != http.StatusOK || got.Tools != len(policy.Tools) {
		t.Errorf("the allowed origin's page: %+v", got)
	}
	if got := visit(other); got.Error == "" || got.Status != 0 {
		t.Errorf("the other origin's page was not blocked: %+v", got)
	}
}
