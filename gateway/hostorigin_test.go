package gateway

import (
	"fmt"
	"strings"
	"testing"
)

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
