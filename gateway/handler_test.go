package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/temporal/read"
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
	return newFrontReading(t, nil, opts, sopts...)
}

// newFrontReading is newFront whose server reads from r (its fakeReader
// when nil).
func newFrontReading(t *testing.T, r read.Reader, opts HTTPOptions, sopts ...func(*Options)) *front {
	t.Helper()
	f := &front{tokensFile: filepath.Join(t.TempDir(), "tokens"), reader: &fakeReader{}, auditor: &fakeAuditor{}}
	if r == nil {
		r = f.reader
	}
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
	g, err := NewServer(r, o)
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

func TestOnlyPostMCPIsServed(t *testing.T) {
	t.Parallel()
	url, token := newTestFront(t)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/mcp", http.StatusMethodNotAllowed},
		{"DELETE", "/mcp", http.StatusMethodNotAllowed},
		{"PUT", "/mcp", http.StatusMethodNotAllowed},
		{"POST", "/", http.StatusNotFound},
		{"POST", "/mcp/", http.StatusNotFound},
		{"POST", "/MCP", http.StatusNotFound},
		{"POST", "/healthz", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(listToolsBody))
		req.Header = auth.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestHandlerRefusesToServeWithoutTokensUnlessTold(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	if _, err := g.Handler(HTTPOptions{}); err != ErrNoAuthentication {
		t.Fatalf("Handler without tokens = %v, want ErrNoAuthentication", err)
	}
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if resp, _ := post(t, srv.URL+"/mcp", nil, listToolsBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("unauthenticated mode answered %d", resp.StatusCode)
	}
}
