package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/gateway/tokens"
)

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
