package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/porthole-dev/porthole/audit"
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

// tracedChain is chainHandlerWith served over HTTP, writing to a fake
// auditor, its cache on, tracing into an in-memory recorder made with
// opts.
func tracedChain(t *testing.T, opts ...sdktrace.TracerProviderOption) (url, token string, rec *tracetest.SpanRecorder, a *fakeAuditor) {
	t.Helper()
	rec = tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(rec))...)
	a = &fakeAuditor{}
	h, token := chainHandlerWith(t, a, time.Second, &Tracing{Provider: tp})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", token, rec, a
}

// eventsOf is a span's events as "name" or "name key=value".
func eventsOf(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		ev := e.Name
		for _, kv := range e.Attributes {
			ev += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		out = append(out, ev)
	}
	return out
}

// TestACallIsTwoSpansInProcessWithItsLinksAsEvents: a traced tools/call
// over HTTP is the server span and, under it, the operation span (the
// Temporal RPC's client span, the third, is the temporal package's); each
// link of the chain is an event on the operation span, in the order the
// links ran, each at or after the one before and within the span. The
// attributes are porthole's, set once.
func TestACallIsTwoSpansInProcessWithItsLinksAsEvents(t *testing.T) {
	t.Parallel()
	url, token, rec, _ := tracedChain(t)
	resp, out := post(t, url, http.Header{"Authorization": {"Bearer " + token}}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`)
	if resp.StatusCode != 200 || !strings.Contains(out, "structuredContent") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %v", len(spans), spans)
	}
	op, server := spans[0], spans[1]
	if server.Name() != "POST /mcp" || server.SpanKind() != trace.SpanKindServer || server.Parent().IsValid() {
		t.Fatalf("the server span: %q %v parent %v", server.Name(), server.SpanKind(), server.Parent())
	}
	if op.Name() != "tools/call describe_workflow" || op.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Fatalf("the operation span: %q under %v", op.Name(), op.Parent())
	}
	want := []string{"porthole authenticate", "porthole decode", "porthole rate limit", "porthole audit write", "porthole policy",
		"porthole cache porthole.cache.result=miss", "porthole redact porthole.redactions=3", "porthole audit write"}
	if got := eventsOf(op); !slices.Equal(got, want) {
		t.Fatalf("the operation span's events:\n got %q\nwant %q", got, want)
	}
	if evs := server.Events(); len(evs) != 0 {
		t.Fatalf("the server span has events of its own: %q", eventsOf(server))
	}
	prev := op.StartTime()
	for _, e := range op.Events() {
		if e.Time.Before(prev) || e.Time.After(op.EndTime()) {
			t.Fatalf("event %q at %v: before the one before it (%v) or after the span's end (%v)", e.Name, e.Time, prev, op.EndTime())
		}
		prev = e.Time
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes() {
		attrs["server "+string(kv.Key)] = kv.Value.String()
	}
	for _, kv := range op.Attributes() {
		attrs["op "+string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"server http.request.method": "POST", "server http.route": "/mcp", "server http.response.status_code": "200",
		"server client.address": "127.0.0.1", "op mcp.method.name": "tools/call", "op gen_ai.tool.name": "describe_workflow", "op porthole.outcome": "ok"} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	if attrs["server porthole.request_id"] == "" || attrs["server porthole.request_id"] != attrs["op porthole.request_id"] {
		t.Errorf("the request id on the spans: %v", attrs)
	}
}

// TestARefusalBeforeTheOperationIsAnEventOnTheServerSpan: a request
// refused by a link before the operation span exists is the server span
// alone, whose events end with the refusing link and its outcome; a
// refusal by the policy is the operation span's policy event.
func TestARefusalBeforeTheOperationIsAnEventOnTheServerSpan(t *testing.T) {
	t.Parallel()
	url, token, rec, _ := tracedChain(t)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"w"}}}`
	for _, c := range []struct {
		name, token, body string
		want              []string
	}{
		{"a bad token", "ph_not-a-token", call, []string{"porthole authenticate porthole.outcome=unauthenticated"}},
		{"a bad body", token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"params":{}}`, []string{"porthole authenticate", "porthole decode porthole.outcome=invalid"}},
	} {
		n := len(rec.Ended())
		resp, out := post(t, url, http.Header{"Authorization": {"Bearer " + c.token}}, c.body)
		if resp.StatusCode == 200 {
			t.Fatalf("%s: served: %s", c.name, out)
		}
		spans := rec.Ended()[n:]
		if len(spans) != 1 || spans[0].Name() != "POST /mcp" {
			t.Fatalf("%s: spans %v, want the server span alone", c.name, spans)
		}
		if got := eventsOf(spans[0]); !slices.Equal(got, c.want) {
			t.Fatalf("%s: the server span's events:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	n := len(rec.Ended())
	post(t, url, http.Header{"Authorization": {"Bearer " + token}}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"terminate_workflow","arguments":{}}}`)
	spans := rec.Ended()[n:]
	if len(spans) != 2 {
		t.Fatalf("a denied call: %d spans", len(spans))
	}
	if got, want := eventsOf(spans[0]), []string{"porthole authenticate", "porthole decode", "porthole rate limit", "porthole audit write", "porthole policy porthole.outcome=denied", "porthole audit write"}; !slices.Equal(got, want) {
		t.Fatalf("a denied call's events:\n got %q\nwant %q", got, want)
	}
}

// TestACallTheSamplerLeavesOutCostsNoSpanAndNamesNoTrace: with a sampler
// that records nothing, a call makes no span, and its records name no
// trace (none is exported); one it samples names its trace.
func TestACallTheSamplerLeavesOutCostsNoSpanAndNamesNoTrace(t *testing.T) {
	t.Parallel()
	url, token, rec, a := tracedChain(t, sdktrace.WithSampler(sdktrace.NeverSample()))
	resp, out := post(t, url, http.Header{"Authorization": {"Bearer " + token}}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`)
	if resp.StatusCode != 200 || !strings.Contains(out, "structuredContent") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded with a sampler that records none", n)
	}
	recs := a.all()
	if len(recs) != 2 || recs[0].TraceID != "" || recs[1].TraceID != "" {
		t.Fatalf("records of a call the sampler left out: %+v", recs)
	}
	url, token, rec, a = tracedChain(t)
	post(t, url, http.Header{"Authorization": {"Bearer " + token}}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`)
	if recs := a.all(); len(recs) != 2 || recs[0].TraceID == "" || recs[0].TraceID != rec.Ended()[0].SpanContext().TraceID().String() {
		t.Fatalf("records of a sampled call: %+v", recs)
	}
}

// resultFailingAuditor takes every record but a call's result.
type resultFailingAuditor struct{ fakeAuditor }

func (a *resultFailingAuditor) Write(ctx context.Context, rec audit.Record) error {
	if rec.Kind == audit.KindResult {
		return errors.New("the sink is full")
	}
	return a.fakeAuditor.Write(ctx, rec)
}

// tracedFront is a traced gateway's HTTP front without authentication,
// over fakeReader, writing to a, with tracing t (its provider set here).
func tracedFront(t *testing.T, a Auditor, tr Tracing) (string, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tr.Provider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g, err := NewServer(&fakeReader{}, Options{Namespace: "default", Audit: a, Tracing: &tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", rec
}

// TestAClientsTraceStateIsNeverExported: a trusted client's traceparent is
// continued, but its tracestate (the client's own text) is on no span; an
// untrusted one's is not on the link either.
func TestAClientsTraceStateIsNeverExported(t *testing.T) {
	t.Parallel()
	for _, trust := range []bool{true, false} {
		url, rec := tracedFront(t, &fakeAuditor{}, Tracing{TrustTraceparent: trust})
		post(t, url, http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "Tracestate": {"vendor=canary-7f3e"}},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`)
		spans := rec.Ended()
		if len(spans) != 2 {
			t.Fatalf("trust %v: %d spans", trust, len(spans))
		}
		for _, s := range spans {
			if s.SpanContext().TraceState().Len() != 0 || s.Parent().TraceState().Len() != 0 {
				t.Errorf("trust %v: %q carries the client's trace state", trust, s.Name())
			}
			for _, l := range s.Links() {
				if l.SpanContext.TraceState().Len() != 0 {
					t.Errorf("trust %v: %q links the client's trace state", trust, s.Name())
				}
			}
		}
		if continued := spans[1].SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c"; continued != trust {
			t.Errorf("trust %v: the client's trace continued: %v", trust, continued)
		}
	}
}

// TestAnAnswerWithheldForItsRecordIsTracedAsInternal: when the result
// record cannot be written the answer is withheld, and the operation span
// says internal, with the write's event refused, not the ok the record
// would have said.
func TestAnAnswerWithheldForItsRecordIsTracedAsInternal(t *testing.T) {
	t.Parallel()
	url, rec := tracedFront(t, &resultFailingAuditor{}, Tracing{})
	_, out := post(t, url, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`)
	if !strings.Contains(out, "could not write the audit record") {
		t.Fatalf("the answer: %s", out)
	}
	op := rec.Ended()[0]
	outcomes := 0
	for _, kv := range op.Attributes() {
		if kv.Key == "porthole.outcome" {
			outcomes++
			if kv.Value.AsString() != "internal" {
				t.Errorf("the outcome on the span: %q", kv.Value.AsString())
			}
		}
	}
	evs := eventsOf(op)
	if outcomes != 1 || op.Status().Code != codes.Error || evs[len(evs)-1] != "porthole audit write porthole.outcome=internal" {
		t.Fatalf("the operation span: %d outcomes, status %v, events %q", outcomes, op.Status(), evs)
	}
}
