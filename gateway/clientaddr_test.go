package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

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
