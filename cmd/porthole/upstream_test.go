package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// The reference MCP server, @modelcontextprotocol/server-everything from
// the npm registry, fronted by porthole over stdio (a child porthole starts)
// and over streamable HTTP (a server the test starts), through the whole
// chain: bearer auth, audit, redaction.

// startEverythingHTTP runs server-everything's streamable HTTP transport on
// a free loopback port and returns its MCP endpoint.
func startEverythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "PORT=" + port}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := temporaltest.Poll(30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if !listening {
		t.Fatalf("server-everything did not listen on %s:\n%s", addr, logs.String())
	}
	return "http://" + addr + "/mcp"
}

// runPorthole runs a porthole command to its end.
func runPorthole(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(portholeBin(t), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("porthole %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// upstreamAnswer is porthole's shape for an upstream tool's result.
type upstreamAnswer struct {
	Upstream   string
	ObservedAt time.Time
	Content    []struct{ Text, Origin string }
	Structured json.RawMessage
}

func callUpstream(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (upstreamAnswer, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var a upstreamAnswer
	if !res.IsError || res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		decode(t, b, &a)
	}
	return a, res
}

func TestUpstreamsThroughTheWholeChain(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	web := startEverythingHTTP(t, node, script)

	const childSecret = "upstream-child-secret-7d1e5b3a9c"
	roster := filepath.Join(t.TempDir(), "roster.yaml")
	if err := os.WriteFile(roster, []byte(fmt.Sprintf(`# upstreams for the end-to-end test
upstreams:
  - name: everything
    transport: stdio
    command: %q
    args: [%q, stdio]
    env: [UPSTREAM_SECRET, UPSTREAM_PLAIN]
    tools:
      - name: echo
      - name: get-env
      - name: get-tiny-image
      - name: get-sum
      - name: toggle-simulated-logging
      - name: trigger-long-running-operation
  - name: web
    url: %s
    structuredContent: true
    tools:
      - name: echo
      - name: get-structured-content
`, node, script, web)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := temporalEnv(t, "UPSTREAM_SECRET="+childSecret, "UPSTREAM_PLAIN=visible")

	// The operator reviews, then pins; then get-sum's pin is made stale, as
	// if the upstream had changed it after review.
	out := runPorthole(t, env, "roster", "pin", "--roster-file", roster)
	for _, want := range []string{"toggle-simulated-logging stays withheld: the upstream does not declare it read-only (readOnlyHint)", "trigger-long-running-operation stays withheld: its name carries the mutating verb(s) trigger", "everything: echo: unpinned -> ", "web: get-structured-content: unpinned -> ", `description:  "Echoes back the input string"`} {
		if !strings.Contains(out, want) {
			t.Errorf("roster pin said:\n%s\nwant %q", out, want)
		}
	}
	pinned, _ := os.ReadFile(roster)
	if !bytes.Contains(pinned, []byte("# upstreams for the end-to-end test")) {
		t.Errorf("pin lost the roster's comment:\n%s", pinned)
	}
	sumDigest := digestOf(t, pinned, "get-sum")
	stale := bytes.Replace(pinned, []byte(sumDigest), []byte(strings.Repeat("0", 64)), 1)
	if err := os.WriteFile(roster, stale, 0o600); err != nil {
		t.Fatal(err)
	}

	file, token := newToken(t, "e2e-agent")
	aenv, auditLog, auditKey := auditEnv(t)
	p, line := startPorthole(t, append(env, append(aenv, "PORTHOLE_ADDR=127.0.0.1:0", "PORTHOLE_TOKENS_FILE="+file, "PORTHOLE_ROSTER_FILE="+roster)...), "serving MCP", "serve")
	rt := &recordingTransport{token: token}
	cs := connectHTTP(t, line["endpoint"].(string), rt)

	// Only the named, read-only, well-named tools with a current pin.
	wantTools := []string{"everything__echo", "everything__get-env", "everything__get-tiny-image", "web__echo", "web__get-structured-content"}
	var served []string
	if !temporaltest.Poll(30*time.Second, func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		served = served[:0]
		for _, tl := range res.Tools {
			if strings.Contains(tl.Name, "__") {
				served = append(served, tl.Name)
				if !tl.Annotations.ReadOnlyHint {
					t.Errorf("%s is served without readOnlyHint", tl.Name)
				}
			}
		}
		slices.Sort(served)
		return slices.Equal(served, wantTools)
	}) {
		t.Fatalf("upstream tools served: %v, want %v\n%s", served, wantTools, p.logs)
	}

	// Upstream text arrives quoted, tagged with its origin, and redacted.
	a, res := callUpstream(t, cs, "everything__echo", map[string]any{"message": "token " + temporaltest.SecretJWT})
	if res.IsError || a.Upstream != "everything" || len(a.Content) != 1 || a.Content[0].Origin != "porthole-quoting-upstream:everything" ||
		!strings.HasPrefix(a.Content[0].Text, "Echo: token ") {
		t.Errorf("echo answered %+v", a)
	}
	a, _ = callUpstream(t, cs, "web__echo", map[string]any{"message": "hello"})
	if a.Content[0].Origin != "porthole-quoting-upstream:web" || a.Content[0].Text != "Echo: hello" {
		t.Errorf("web echo answered %+v", a)
	}

	// The child's environment: PATH, HOME and the two named variables, the
	// secret one redacted; nothing of porthole's own.
	a, _ = callUpstream(t, cs, "everything__get-env", nil)
	var childEnv map[string]string
	if err := json.Unmarshal([]byte(a.Content[0].Text), &childEnv); err != nil {
		t.Fatalf("get-env: %v\n%s", err, a.Content[0].Text)
	}
	var names []string
	for k := range childEnv {
		names = append(names, k)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"HOME", "PATH", "UPSTREAM_PLAIN", "UPSTREAM_SECRET"}) || childEnv["UPSTREAM_PLAIN"] != "visible" {
		t.Errorf("the child's environment holds %v", childEnv)
	}

	// What is not text is withheld with a sentence; structured content
	// passes where the entry declares it, quoted with the upstream's origin.
	a, _ = callUpstream(t, cs, "everything__get-tiny-image", nil)
	if last := a.Content[len(a.Content)-1]; last.Origin != "porthole" || !strings.Contains(last.Text, "image") {
		t.Errorf("get-tiny-image answered %+v", a)
	}
	a, _ = callUpstream(t, cs, "web__get-structured-content", map[string]any{"location": "New York"})
	var structured struct {
		Origin string
		Value  json.RawMessage
	}
	decode(t, a.Structured, &structured)
	if structured.Origin != "porthole-quoting-upstream:web" || !bytes.Contains(structured.Value, []byte("temperature")) {
		t.Errorf("structured content: %s", a.Structured)
	}

	// Arguments the pinned schema does not declare are refused; withheld
	// tools are not callable.
	_, res = callUpstream(t, cs, "everything__echo", map[string]any{"message": "x", "extra": 1})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `no argument "extra"`) {
		t.Errorf("an undeclared argument: %+v", res)
	}
	for _, withheld := range []string{"everything__get-sum", "everything__toggle-simulated-logging", "everything__trigger-long-running-operation"} {
		if _, res = callUpstream(t, cs, withheld, nil); !res.IsError {
			t.Errorf("%s was called", withheld)
		}
	}
	assertNoSecret(t, "the wire", rt.bytes(), childSecret)

	// /readyz reports each upstream; the metrics say how its list is kept.
	admin := adminOf(t, p)
	resp, err := http.Get(admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"ready\n", "upstream everything (stdio): up; 3 tools exposed", "upstream web (streamable): up; 2 tools exposed", "refreshed on notifications/tools/list_changed", "refreshed every 5m0s"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/readyz said:\n%s\nwant %q", body, want)
		}
	}
	if v := metric(t, admin, `porthole_upstream_up{transport="stdio",upstream="everything"}`); v != 1 {
		t.Errorf("porthole_upstream_up for everything = %v", v)
	}
	if v := metric(t, admin, `porthole_upstream_definition_changes_total{upstream="everything"}`); v != 1 {
		t.Errorf("definition changes = %v", v)
	}
	p.stop(t)
	assertNoSecret(t, "the operations log", []byte(p.logs.String()), childSecret)

	// Every call is audited with its upstream's name; the stale pin is
	// audited as a change.
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "the audit log", b, childSecret)
	verify := exec.Command(portholeBin(t), "audit", "verify", "--key-file", auditKey, auditLog)
	if out, err := verify.CombinedOutput(); err != nil {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
	calls, changes := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Kind, Tool, Upstream, Reason string }
		decode(t, []byte(l), &r)
		switch {
		case r.Kind == "call" && strings.Contains(r.Tool, "__"):
			calls++
			if want, _, _ := strings.Cut(strings.Trim(r.Tool, `"`), "__"); r.Upstream != want {
				t.Errorf("call of %s audited with upstream %q", r.Tool, r.Upstream)
			}
		case r.Kind == "tool-change":
			changes++
			if r.Upstream != "everything" || r.Tool != `"everything__get-sum"` || !strings.Contains(r.Reason, "withheld until re-pinned") {
				t.Errorf("tool-change record %+v", r)
			}
		}
	}
	if calls != 9 || changes != 1 {
		t.Errorf("%d upstream call records (want 9) and %d tool-change records (want 1):\n%s", calls, changes, b)
	}
}

// digestOf finds the digest pinned for a tool in a roster's text.
func digestOf(t *testing.T, roster []byte, tool string) string {
	t.Helper()
	lines := strings.Split(string(roster), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "- name: "+tool && i+1 < len(lines) {
			if d, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "sha256: "); ok {
				return d
			}
		}
	}
	t.Fatalf("no digest pinned for %s:\n%s", tool, roster)
	return ""
}

// Over porthole's own stdio transport, the same: upstream tools appear as
// the upstream connects. The test waits on notifications/tools/list_changed
// between listings; whether one comes depends on whether the upstream
// connected before or after the client's session began, so its arrival is
// not required.
func TestUpstreamsOverPortholeStdio(t *testing.T) {
	t.Parallel()
	dir, node := clientsDir(t)
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	roster := filepath.Join(t.TempDir(), "roster.yaml")
	if err := os.WriteFile(roster, []byte(fmt.Sprintf("upstreams:\n  - name: everything\n    transport: stdio\n    command: %q\n    args: [%q, stdio]\n    tools:\n      - name: echo\n", node, script)), 0o600); err != nil {
		t.Fatal(err)
	}
	runPorthole(t, baseEnv(), "roster", "pin", "--roster-file", roster)

	changed := make(chan struct{}, 16)
	cmd := exec.Command(portholeBin(t), "stdio")
	aenv, _, _ := auditEnv(t)
	cmd.Env = temporalEnv(t, append(aenv, "PORTHOLE_ROSTER_FILE="+roster)...)
	var logs syncBuffer
	cmd.Stderr = &logs
	client := mcp.NewClient(&mcp.Implementation{Name: "porthole-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("stdio connect: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { cs.Close() })
	for {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "everything__echo" }) {
			break
		}
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("no tools/list_changed within 30s, and no upstream tool listed:\n%s", logs.String())
		}
	}
	a, res := callUpstream(t, cs, "everything__echo", map[string]any{"message": "over stdio"})
	if res.IsError || a.Content[0].Text != "Echo: over stdio" || a.Content[0].Origin != "porthole-quoting-upstream:everything" {
		t.Errorf("echo over stdio answered %+v", a)
	}
}
