package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/porthole-dev/porthole/gateway/tracetest"
	"github.com/porthole-dev/porthole/redact"
	"github.com/porthole-dev/porthole/temporal/temporaltest"
)

// tracedEnv is what a porthole exporting to j gets: the standard OTEL_*
// variables, and a short batch delay so that a test need not wait.
func tracedEnv(j *tracetest.Jaeger, service string) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPEndpoint, "OTEL_SERVICE_NAME=" + service, "OTEL_BSP_SCHEDULE_DELAY=100"}
}

// postCall posts a tools/call with token and extra headers and returns the
// status and the response's X-Request-Id.
func postCall(t *testing.T, endpoint, token, body string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Request-Id")
}

// auditRecords are the audit log's records of a request id.
func auditRecords(t *testing.T, path, requestID string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil && r["requestId"] == requestID {
			out = append(out, r)
		}
	}
	return out
}

// traceOfRequest is the traceId the audit log gives a request, waiting for
// its records to land.
func traceOfRequest(t *testing.T, auditLog, requestID string, records int) string {
	t.Helper()
	var recs []map[string]any
	if !temporaltest.Poll(5*time.Second, func() bool {
		recs = auditRecords(t, auditLog, requestID)
		return len(recs) >= records
	}) {
		t.Fatalf("%d audit records of request %s, want %d", len(recs), requestID, records)
	}
	id, _ := recs[0]["traceId"].(string)
	for _, r := range recs {
		if r["traceId"] != id || len(id) != 32 {
			t.Fatalf("the records of request %s name traces %v and %v", requestID, r["traceId"], id)
		}
	}
	return id
}

func spanNamed(tr *tracetest.Trace, name string) *tracetest.Span {
	for i := range tr.Spans {
		if tr.Spans[i].OperationName == name {
			return &tr.Spans[i]
		}
	}
	return nil
}

const clientTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// TestACallIsOneTraceTiedToItsAuditRecord: a describe_workflow through
// porthole, against the real dev server, exported to a real Jaeger, is one
// trace of three spans: the HTTP server span, under it the call's span
// holding each link of the chain as an event, and under that the Temporal
// RPC's client span; its trace id is the audit record's, its request id
// tag the record's. A refusal before the call is the server span with the
// refusing link as an event. The client's traceparent (from the
// internet) is linked, not continued; a _meta.traceparent is linked too.
// Nothing sensitive is in any span: every string the trace holds passes
// the redactor unchanged, and no canary, argument value, secret or token
// is in it.
func TestACallIsOneTraceTiedToItsAuditRecord(t *testing.T) {
	t.Parallel()
	j := tracetest.Start(t)
	endpoint, token, p, auditLog := serveHTTP(t, tracedEnv(j, "porthole-e2e")...)
	const marker = "arg-marker-7f3e"
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"` + temporaltest.RunningWorkflowID + `"},"_meta":{"traceparent":"00-11111111111111111111111111111111-2222222222222222-01"}}}`
	status, reqID := postCall(t, endpoint, token, body, http.Header{
		"Traceparent": {clientTraceparent}, "Baggage": {"user=" + marker},
		"User-Agent": {"agent/1.0 ghp_" + strings.Repeat("A", 36)},
	})
	if status != http.StatusOK {
		t.Fatalf("the call: %d", status)
	}
	id := traceOfRequest(t, auditLog, reqID, 2)
	if id == "0af7651916cd43dd8448eb211c80319c" {
		t.Fatal("an untrusted client's trace was continued")
	}
	rpcName := "temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution"
	tr, err := j.Trace(id, []string{"POST /mcp", "tools/call describe_workflow", rpcName}, 20*time.Second)
	if err != nil {
		t.Fatalf("Jaeger: %v\n%s", err, tr.Raw)
	}
	if len(tr.Spans) != 3 {
		t.Fatalf("%d spans in the call's trace, want 3\n%s", len(tr.Spans), tr.Raw)
	}
	server := spanNamed(tr, "POST /mcp")
	if server == nil || server.Parent() != "" || server.Tag("porthole.request_id") != reqID || len(server.Logs) != 0 {
		t.Fatalf("the HTTP server span: %+v\n%s", server, tr.Raw)
	}
	linked := false
	for _, r := range server.References {
		linked = linked || (r.RefType == "FOLLOWS_FROM" && r.TraceID == "0af7651916cd43dd8448eb211c80319c")
	}
	if !linked {
		t.Errorf("the client's traceparent is not linked from the server span: %+v", server.References)
	}
	call := spanNamed(tr, "tools/call describe_workflow")
	if call == nil || call.Parent() != server.SpanID || call.Tag("gen_ai.tool.name") != "describe_workflow" || call.Tag("mcp.method.name") != "tools/call" ||
		call.Tag("porthole.request_id") != reqID || call.Tag("enduser.id") != nil {
		t.Fatalf("the call's span: %+v", call)
	}
	metaLinked := false
	for _, r := range call.References {
		metaLinked = metaLinked || (r.RefType == "FOLLOWS_FROM" && r.TraceID == "11111111111111111111111111111111")
	}
	if !metaLinked {
		t.Errorf("the _meta.traceparent is not linked from the call's span: %+v", call.References)
	}
	// Each link of the chain is an event on the call's span, in order; the
	// cache is on (the default), and this first read misses.
	wantEvents := []string{"porthole authenticate", "porthole decode", "porthole rate limit", "porthole audit write", "porthole policy",
		"porthole cache porthole.cache.result=miss", "porthole redact porthole.redactions=3", "porthole audit write"}
	if got := call.Events(); !slices.Equal(got, wantEvents) {
		t.Errorf("the call's span's events:\n got %q\nwant %q", got, wantEvents)
	}
	rpc := spanNamed(tr, rpcName)
	if rpc == nil || rpc.Parent() != call.SpanID || rpc.Tag("rpc.system") != "grpc" || rpc.Tag("rpc.method") != "DescribeWorkflowExecution" {
		t.Errorf("the Temporal RPC's client span under the call's: %+v", rpc)
	}
	scanTrace(t, tr.Raw, token, marker, "ghp_"+strings.Repeat("A", 36))

	// A refusal is traced and recorded too: a denial record names its trace.
	status, reqID = postCall(t, endpoint, "ph_not-a-token", body, nil)
	if status != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d", status)
	}
	denied := traceOfRequest(t, auditLog, reqID, 1)
	if tr, err := j.Trace(denied, []string{"POST /mcp"}, 20*time.Second); err != nil {
		t.Fatalf("the refused request's trace: %v", err)
	} else if s := spanNamed(tr, "POST /mcp"); len(tr.Spans) != 1 || !slices.Equal(s.Events(), []string{"porthole authenticate porthole.outcome=unauthenticated"}) {
		t.Fatalf("the refused request's trace is not its server span with the refusal as an event:\n%s", tr.Raw)
	}
	// The operations log lines of a call carry its trace; Temporal's
	// error, which quotes the argument, is on no span.
	_, reqID = postCall(t, endpoint, token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"no-such-`+marker+`"}}}`, nil)
	notFound := traceOfRequest(t, auditLog, reqID, 2)
	if tr, err := j.Trace(notFound, []string{"POST /mcp", rpcName}, 20*time.Second); err != nil {
		t.Fatal(err)
	} else {
		scanTrace(t, tr.Raw, marker)
	}
	if !temporaltest.Poll(5*time.Second, func() bool { return strings.Contains(p.logs.String(), `"traceId":"`) }) {
		t.Errorf("no operations log line carries a traceId:\n%s", p.logs.String())
	}
	// Every span of the service, scanned as a whole.
	resp, err := http.Get(j.Query + "/api/traces?service=porthole-e2e&limit=1000&lookback=1h")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	scanTrace(t, all, token, marker, "ghp_"+strings.Repeat("A", 36))
}

// scanTrace fails if what Jaeger holds has a token, an argument's value,
// a canary or a secret, or any string the redactor would change.
func scanTrace(t *testing.T, raw []byte, extra ...string) {
	t.Helper()
	assertNoCanary(t, "Jaeger's trace", raw)
	assertNoSecret(t, "Jaeger's trace", raw, extra...)
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	red, _ := redact.New()
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			if out, n := red.String(x); n > 0 && !bytes.Contains([]byte(x), []byte("[REDACTED")) {
				t.Errorf("a string in the trace holds what the redactor removes: %q -> %q", x, out)
			}
		}
	}
	walk(doc)
}

// TestATrustedTraceparentIsContinued: with PORTHOLE_OTEL_TRUST_TRACEPARENT
// the client's trace is continued: the audit record names the client's
// trace, and the server span's parent is the client's span. Principals
// appear on spans only with PORTHOLE_OTEL_PRINCIPAL.
func TestATrustedTraceparentIsContinued(t *testing.T) {
	t.Parallel()
	j := tracetest.Start(t)
	endpoint, token, _, auditLog := serveHTTP(t, append(tracedEnv(j, "porthole-trusted"), "PORTHOLE_OTEL_TRUST_TRACEPARENT=true", "PORTHOLE_OTEL_PRINCIPAL=true")...)
	status, reqID := postCall(t, endpoint, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`,
		http.Header{"Traceparent": {clientTraceparent}})
	if status != http.StatusOK {
		t.Fatalf("the call: %d", status)
	}
	if id := traceOfRequest(t, auditLog, reqID, 2); id != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("the audit record names trace %s, not the trusted client's", id)
	}
	tr, err := j.Trace("0af7651916cd43dd8448eb211c80319c", []string{"POST /mcp", "tools/call describe_namespace"}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if s := spanNamed(tr, "POST /mcp"); s == nil || s.Parent() != "b7ad6b7169203331" {
		t.Fatalf("the server span does not continue the client's: %+v", s)
	}
	if s := spanNamed(tr, "tools/call describe_namespace"); s == nil || s.Tag("enduser.id") != "e2e-agent" {
		t.Fatalf("the call's span lacks the principal asked for: %+v", s)
	}
}

// TestTracingIsOffWithoutAnExporter: without OTEL_* nothing is traced and
// records carry no traceId; an exporter porthole does not have is refused.
func TestTracingIsOffWithoutAnExporter(t *testing.T) {
	t.Parallel()
	endpoint, token, p, auditLog := serveHTTP(t)
	_, reqID := postCall(t, endpoint, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`, http.Header{"Traceparent": {clientTraceparent}})
	if !temporaltest.Poll(5*time.Second, func() bool { return len(auditRecords(t, auditLog, reqID)) == 2 }) {
		t.Fatal("no records")
	}
	for _, r := range auditRecords(t, auditLog, reqID) {
		if _, ok := r["traceId"]; ok {
			t.Fatalf("a record names a trace with tracing off: %v", r)
		}
	}
	if strings.Contains(p.logs.String(), "exporting traces") {
		t.Fatal("tracing said it was on")
	}
	out, err := execPorthole(t, baseEnv("OTEL_TRACES_EXPORTER=zipkin"), "serve").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "OTLP only") {
		t.Fatalf("OTEL_TRACES_EXPORTER=zipkin: %v\n%s", err, out)
	}
}
