package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
)

const upstreamJWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1cHN0cmVhbSJ9.dXBzdHJlYW0tc2lnbmF0dXJlLXZhbHVl"

// hostileUpstream is an upstream whose answers carry what porthole must
// not pass as they are: a secret, an ANSI escape and a bidi override,
// more text than the cap, an image, and structured content.
func hostileUpstream(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	srv.AddTool(&mcp.Tool{Name: "lookup", Description: "Look up.", InputSchema: schema, Annotations: ro},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "session " + upstreamJWT + " \x1b[2J\u202egnp.exe"},
				&mcp.TextContent{Text: strings.Repeat("a", 3000)},
				&mcp.TextContent{Text: "past the cap"},
			}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "picture", Description: "A picture.", InputSchema: schema, Annotations: ro},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"}},
				StructuredContent: map[string]any{"pixels": 1},
			}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// pinnedRoster is a roster over url with every named tool pinned as the
// upstream defines it now.
func pinnedRoster(t *testing.T, url string, tools ...string) *upstream.Roster {
	t.Helper()
	return pinnedRosterWith(t, url, "    maxResultBytes: 1024\n    cost: 5\n", tools...)
}

// pinnedRosterWith is pinnedRoster with more fields for the entry: YAML
// lines indented as the entry's fields are.
func pinnedRosterWith(t *testing.T, url, fields string, tools ...string) *upstream.Roster {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "upstreams:\n  - name: up\n    url: %s\n%s    tools:\n", url, fields)
	for _, tool := range tools {
		fmt.Fprintf(&b, "      - name: %s\n", tool)
	}
	r, err := upstream.ParseRoster([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Resolve(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	set, err := upstream.NewSet(r, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	offered, err := set.Upstreams()[0].Offered(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	candidates, missing, err := r.Upstreams[0].Candidates(offered)
	if err != nil || len(missing) > 0 {
		t.Fatalf("pinning: %v, not offered: %v", err, missing)
	}
	for i, c := range candidates {
		r.Upstreams[0].Tools[i].SHA256 = c.Digest // every named tool is offered, in roster order
	}
	return r
}

func TestUpstreamToolsGoThroughGrantsLimitsAuditAndRedaction(t *testing.T) {
	t.Parallel()
	roster := pinnedRoster(t, hostileUpstream(t), "lookup", "picture")
	pf, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["describe_namespace","up__lookup"]},"bob":{"tools":["*"]}}}`), roster.ServedNames()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["up__nosuch"]}}}`), roster.ServedNames()...); err == nil {
		t.Error("a policy file granting a tool the roster does not name was accepted")
	}
	f := newFront(t, HTTPOptions{Limits: limit.Limits{PerPrincipal: 0.001, PerPrincipalBurst: 16, Global: 0.001, GlobalBurst: 1, Costs: roster.Costs()}},
		func(o *Options) { o.Grants, o.Roster = pf.Grants(), roster })
	startFrontUpstreams(t, f, "up__lookup", "up__picture")

	_, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), listToolsBody)
	if strings.Count(body, `"name":"`) != 2 || !strings.Contains(body, `"up__lookup"`) || strings.Contains(body, "up__picture") {
		t.Fatalf("alice's tools/list = %.400s", body)
	}

	// Text is quoted with the upstream's origin, cleaned, capped and
	// redacted; the cap leaves a sentence for what did not fit.
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.alice), callBody("up__lookup"))
	var res struct {
		Result struct {
			IsError           bool
			StructuredContent upstreamResult
		}
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	got := res.Result.StructuredContent
	if res.Result.IsError || got.Upstream != "up" || len(got.Content) != 3 {
		t.Fatalf("lookup answered %s", body)
	}
	first, second, note := got.Content[0], got.Content[1], got.Content[2]
	if first.Origin != "porthole-quoting-upstream:up" || strings.Contains(first.Text, "\x1b") || strings.Contains(first.Text, "\u202e") ||
		!strings.Contains(first.Text, `\u001B[2J\u202Egnp.exe`) {
		t.Errorf("first text %+v: want it quoted and its escape and override made visible", first)
	}
	if strings.Contains(body, upstreamJWT) {
		t.Error("the upstream's JWT reached the client")
	}
	if len(second.Text) > 1024 || !strings.HasSuffix(second.Text, "[truncated by porthole]") {
		t.Errorf("second text of %d bytes, want it cut at the cap", len(second.Text))
	}
	if note.Origin != "porthole" || !strings.Contains(note.Text, "1 item(s)") || !strings.Contains(note.Text, "past the size cap") {
		t.Errorf("note %+v", note)
	}

	// Not text, and structured content the entry does not declare, are
	// withheld with a sentence.
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.bob), callBody("up__picture"))
	if !strings.Contains(body, "item(s) of the upstream's answer: image") || !strings.Contains(body, "does not declare structuredContent") || strings.Contains(body, "pixels") {
		t.Errorf("picture answered %s", body)
	}

	// Grants: alice may not call picture.
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.alice), callBody("up__picture"))
	if !strings.Contains(body, "not one you may call") {
		t.Errorf("alice calling an ungranted upstream tool: %s", body)
	}

	// Limits: each call costs 5 of alice's 16 (her tools/list took 1); the global bucket, which
	// protects Temporal, is not charged (its burst is 1).
	if status, _, _ := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("up__lookup")); status != http.StatusOK {
		t.Errorf("alice's third upstream call: status %d", status)
	}
	status, _, body := f.do(t, "POST", "/mcp", bearer(f.alice), callBody("up__lookup"))
	if status != http.StatusTooManyRequests || !strings.Contains(body, "principal limit") {
		t.Errorf("alice's fourth upstream call: status %d, %s", status, body)
	}

	// Audit: each call names its upstream.
	calls := 0
	for _, r := range f.auditor.all() {
		if r.Kind == audit.KindCall && strings.HasPrefix(r.Tool, "up__") {
			calls++
			if r.Upstream != "up" {
				t.Errorf("call record %+v does not name the upstream", r)
			}
		}
	}
	if calls != 4 {
		t.Errorf("%d upstream call records, want 4", calls)
	}
}

// startFrontUpstreams starts the upstreams of the server behind a front and
// waits until the named tools are served.
func startFrontUpstreams(t *testing.T, f *front, tools ...string) {
	t.Helper()
	stop := f.server.StartUpstreams(context.Background())
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, body := f.do(t, "POST", "/mcp", bearer(f.bob), listToolsBody)
		if !slices.ContainsFunc(tools, func(tool string) bool { return !strings.Contains(body, `"`+tool+`"`) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream tools were not served: %.500s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A granted upstream tool of an upstream porthole has not reached answers
// why it is not served, rather than looking like a tool that never existed;
// a principal it is not granted to learns nothing about the upstream.
func TestAToolOfAnUnreachableUpstreamSaysSo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	roster, err := upstream.ParseRoster([]byte("upstreams:\n  - name: up\n    url: http://" + addr + "/mcp\n    tools:\n      - name: lookup\n        sha256: " + strings.Repeat("a", 64) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := roster.Resolve(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	pf, err := policy.ParseFile([]byte(`{"principals":{"alice":{"tools":["describe_namespace"]},"bob":{"tools":["*"]}}}`), roster.ServedNames()...)
	if err != nil {
		t.Fatal(err)
	}
	f := newFront(t, HTTPOptions{}, func(o *Options) { o.Grants, o.Roster = pf.Grants(), roster })
	t.Cleanup(f.server.StartUpstreams(context.Background()))
	_, _, body := f.do(t, "POST", "/mcp", bearer(f.bob), callBody("up__lookup"))
	if !strings.Contains(body, `\"up\" is not connected`) {
		t.Errorf("bob calling a tool of an unreachable upstream: %s", body)
	}
	_, _, body = f.do(t, "POST", "/mcp", bearer(f.alice), callBody("up__lookup"))
	if !strings.Contains(body, "not one you may call") {
		t.Errorf("alice calling a tool she is not granted: %s", body)
	}
}

// upstreamResultCases are answers of every shape upstreamResult takes.
func upstreamResultCases() []upstreamResult {
	at := time.Date(2026, 12, 6, 8, 30, 1, 123456789, time.UTC)
	hostile := "<b>&amp;</b> \u2028\u2029 \"\\ \x00\x1b[31m \xff é 😀\nline two\t" + upstreamJWT
	return []upstreamResult{
		{Upstream: "docs", ObservedAt: at, Content: []quote.Text{}},
		{Upstream: "docs", ObservedAt: at},
		{Upstream: "docs", ObservedAt: at, Content: []quote.Text{quote.Says("porthole withheld 1 item(s)."), {Text: hostile, Origin: quote.OriginUpstream("do<c>s")}}},
		{Upstream: "d\"o", ObservedAt: at.Add(-time.Hour), Content: []quote.Text{{Text: strings.Repeat(hostile, 100), Origin: "x"}},
			Structured: &quote.JSON{Origin: "y", Value: json.RawMessage(`{"a": ["<", 1, "\u2028"]}`)}},
	}
}

// TestUpstreamResultAppendsAsJSONMarshalWrites: the answer porthole
// renders directly is json.Marshal's bytes.
func TestUpstreamResultAppendsAsJSONMarshalWrites(t *testing.T) {
	t.Parallel()
	for _, r := range upstreamResultCases() {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.appendJSON([]byte("x"))
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("appendJSON = %s, %v; json.Marshal %s", got, err, want)
		}
	}
}

func FuzzUpstreamResultAppendsAsJSONMarshalWrites(f *testing.F) {
	f.Add("docs", "text", "porthole-quoting-upstream:docs", int64(0))
	f.Add("d\"o", "\xff<\u2028\x00", "o", int64(-1))
	f.Fuzz(func(t *testing.T, name, text, origin string, nanos int64) {
		r := upstreamResult{Upstream: name, ObservedAt: time.Unix(0, nanos).UTC(), Content: []quote.Text{{Text: text, Origin: quote.Origin(origin)}, quote.Says(text)}}
		want, werr := json.Marshal(r)
		got, err := r.appendJSON(nil)
		if (werr == nil) != (err == nil) || werr == nil && string(got) != string(want) {
			t.Fatalf("appendJSON = %s, %v; json.Marshal %s, %v", got, err, want, werr)
		}
	})
}
