package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedServer is a gateway tracing into an in-memory recorder (the
// behaviour against a real backend is cmd/porthole's tracing tests).
func tracedServer(t *testing.T) (*Server, *fakeAuditor, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := &fakeAuditor{}
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: a, Tracing: &Tracing{Provider: tp}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g, a, rec
}

// TestATracedToolsListWithoutParamsIsServed: a tools/list with no params
// (as the TypeScript and Python SDKs send it) ended a traced porthole: its
// params are a nil pointer in an interface (found by review).
func TestATracedToolsListWithoutParamsIsServed(t *testing.T) {
	t.Parallel()
	g, _, rec := tracedServer(t)
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`} {
		resp, out := post(t, srv.URL+"/mcp", nil, body)
		if resp.StatusCode != 200 || !strings.Contains(out, "describe_namespace") {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, out)
		}
	}
	found := false
	for _, s := range rec.Ended() {
		found = found || s.Name() == "tools/list"
	}
	if !found {
		t.Fatal("no tools/list span")
	}
}

// TestARefusedCallsSpanSaysSo: a call refused by the grants ends its span
// with its outcome and an error status; a made-up HTTP method does not
// name a span.
func TestARefusedCallsSpanSaysSo(t *testing.T) {
	t.Parallel()
	g, _, rec := tracedServer(t)
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post(t, srv.URL+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"terminate_workflow","arguments":{}}}`)
	req, _ := http.NewRequest("X-MADE-UP-1f3a", srv.URL+"/mcp", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "tools/call") {
			call = s
		}
		if strings.Contains(s.Name(), "MADE-UP") {
			t.Errorf("a client's method names a span: %q", s.Name())
		}
	}
	if call == nil || call.Name() != "tools/call unknown" || call.Status().Code != codes.Error {
		t.Fatalf("the refused call's span: %v", call)
	}
	outcome := ""
	for _, kv := range call.Attributes() {
		if kv.Key == "porthole.outcome" {
			outcome = kv.Value.AsString()
		}
	}
	if outcome != "denied" {
		t.Fatalf("the span's outcome %q, want denied", outcome)
	}
}

// TestAStdioCallsRecordsNameItsTrace: over stdio the call's span is the
// trace's root, and its records name that trace (found by review: they
// named none).
func TestAStdioCallsRecordsNameItsTrace(t *testing.T) {
	t.Parallel()
	g, a, rec := tracedServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	go g.mcp.Run(withRequestInfo(ctx, requestInfo{Transport: "stdio"}), st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_namespace"}); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call describe_namespace" {
			id = s.SpanContext().TraceID().String()
		}
	}
	recs := a.all()
	if id == "" || len(recs) != 2 || recs[0].TraceID != id || recs[1].TraceID != id {
		t.Fatalf("span trace %q; records %+v", id, recs)
	}
}
