package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listPage calls list_workflows for one workflow a page and returns the
// page's token, or the refusal's sentence.
func listPage(t *testing.T, cs *mcp.ClientSession, token string) (next, refused string) {
	t.Helper()
	args := map[string]any{"pageSize": 1}
	if token != "" {
		args["nextPageToken"] = token
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_workflows", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		return "", res.Content[0].(*mcp.TextContent).Text
	}
	var page struct{ NextPageToken string }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	return page.NextPageToken, ""
}

// Replicas that share PORTHOLE_SECRET_KEY_FILE open each other's page
// tokens; a porthole without it seals with a key of its own, says so at
// start, and refuses another's tokens with a sentence.
func TestPageTokensCrossReplicasThatShareTheSecretKey(t *testing.T) {
	t.Parallel()
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "secret-key")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, token := newToken(t, "pager")
	start := func(extra ...string) (*mcp.ClientSession, *process) {
		env, _, _ := auditEnv(t)
		env = append(env, append([]string{"PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE=" + tokens}, extra...)...)
		p, line := startPorthole(t, temporalEnv(t, env...), "serving MCP", "serve")
		return connectHTTP(t, line["endpoint"].(string), &recordingTransport{token: token}), p
	}
	a, _ := start("PORTHOLE_SECRET_KEY_FILE=" + keyFile)
	b, _ := start("PORTHOLE_SECRET_KEY_FILE=" + keyFile)
	c, pc := start()
	next, refused := listPage(t, a, "")
	if refused != "" || next == "" {
		t.Fatalf("the first page: %q, token %q", refused, next)
	}
	if _, refused := listPage(t, b, next); refused != "" {
		t.Fatalf("a replica sharing the secret key refused the other's token: %s", refused)
	}
	if _, refused := listPage(t, c, next); !strings.Contains(refused, "was not issued by porthole for this call") {
		t.Fatalf("a porthole with a key of its own: %q; want a refusal", refused)
	}
	if !strings.Contains(pc.logs.String(), "PORTHOLE_SECRET_KEY_FILE is not set: page tokens are sealed with a key this process made") {
		t.Error("a porthole without the secret key did not say so at start")
	}
}

// The secret key is 32 bytes or 64 hex digits, and never the audit key,
// which reviewers are handed.
func TestTheSecretKeyFileIsCheckedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hexKey := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name     string
		settings secretKeySettings
		auditKey []byte
		want     string
	}{
		{"32 bytes", secretKeySettings{file: write("raw", strings.Repeat("k", 32))}, nil, ""},
		{"64 hex digits and a newline", secretKeySettings{file: write("hex", hexKey+"\n")}, nil, ""},
		{"16 bytes", secretKeySettings{file: write("short", strings.Repeat("k", 16))}, nil, "it must hold 32 random bytes or 64 hex digits"},
		{"the audit key", secretKeySettings{file: write("audit", hexKey+"\n")}, []byte(hexKey), "holds the audit key"},
		{"the audit key in upper-case hex", secretKeySettings{file: write("audit-upper", strings.ToUpper(hexKey)+"\n")}, []byte(hexKey), "holds the audit key"},
		{"the audit key's 32 raw bytes, which begin with white space", secretKeySettings{file: write("audit-raw", " "+strings.Repeat("r", 31))}, []byte(strings.Repeat("r", 31)), "holds the audit key"},
		{"the audit key as the previous secret", secretKeySettings{file: write("current", strings.Repeat("c", 32)), previousFile: write("audit-prev", hexKey)}, []byte(hexKey), "holds the audit key"},
		{"a previous key without a current one", secretKeySettings{previousFile: write("prev", strings.Repeat("k", 32))}, nil, "needs PORTHOLE_SECRET_KEY_FILE"},
	} {
		_, _, err := c.settings.secrets(c.auditKey)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
