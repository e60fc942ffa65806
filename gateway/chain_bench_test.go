package gateway

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/baretest"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/oauth"
	"github.com/porthole-dev/porthole/gateway/pseudonym"
	"github.com/porthole-dev/porthole/gateway/tokens"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// describeReader answers DescribeWorkflow at once with what the bench's
// running workflow looks like: a pending activity whose failure message
// holds secrets, so the redactor's slow path runs, as in `make bench`.
type describeReader struct{ fakeReader }

func (*describeReader) DescribeWorkflow(_ context.Context, ref read.WorkflowRef) (*read.WorkflowDescription, error) {
	// Whole seconds, so that every answer has the same length.
	now := time.Now().UTC().Truncate(time.Second)
	return &read.WorkflowDescription{
		Observation: read.Observation{Namespace: "default", ObservedAt: now},
		Workflow: read.WorkflowSummary{WorkflowID: ref.WorkflowID, RunID: "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f", WorkflowType: "ShipmentWorkflow",
			TaskQueue: "porthole-demo", Status: "Running", StartTime: &now, ExecutionTime: &now, HistoryLength: 11},
		PendingActivities: []read.PendingActivity{{
			ActivityID: "reserve-1", ActivityType: "ReserveCarrier", State: "Scheduled", Attempt: 7,
			ScheduledTime: &now, LastStartedTime: &now, LastHeartbeatTime: &now,
			LastFailure: &read.FailureSummary{Failure: read.Failure{Kind: "application", ApplicationErrorType: "CarrierError", Message: quote.New(nil).Of(quote.OriginTemporal,
				"carrier refused the booking: porthole-free-text-marker; upstream said Authorization: Bearer seed-bearer-4f1c2a9e7b3d for key AKIAPORTHOLESEED0001 in session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwb3J0aG9sZSJ9.cG9ydGhvbGUtc2VlZGVyLXNpZ25hdHVyZQ")}},
			LastWorkerIdentity: &quote.Text{Text: "porthole-demo-worker\\u202e\\u200b", Origin: quote.OriginTemporal},
		}},
		PendingChildren: []read.PendingChild{{WorkflowID: "shipment-running-1-label", RunID: "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e70", WorkflowType: "PrintLabelWorkflow", InitiatedID: 5}},
	}, nil
}

// benchChain serves describe_workflow through the whole HTTP chain (auth,
// strict decoding, rate limits set high, audit to a real file, redaction),
// in process, so the profile shows porthole's own cost and the go-sdk's.
func benchChain(b *testing.B, cacheTTL time.Duration) { benchChainTraced(b, cacheTTL, nil) }

// BenchmarkWholeChainTraced is BenchmarkWholeChain with tracing on, every
// span sampled and batched to an exporter that drops them: what making the
// spans costs in process (OTLP's marshalling and sending are not in it).
func BenchmarkWholeChainTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	benchChainTraced(b, -1, &Tracing{Provider: tp})
}

// BenchmarkWholeChainTracedOTLP is BenchmarkWholeChainTraced exporting
// over OTLP/HTTP to a server that reads and drops the batches: the
// exporter's marshalling and sending are in it.
func BenchmarkWholeChainTracedOTLP(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer sink.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	counted := &countingExporter{SpanExporter: exp}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(counted))
	defer tp.Shutdown(context.Background())
	benchChainTraced(b, -1, &Tracing{Provider: tp})
	// Calls are not paced here: spans the batcher's queue could not hold
	// were dropped, not exported, which costs less (exported-spans/op
	// below the nine a call makes says how many).
	_ = tp.ForceFlush(context.Background())
	b.ReportMetric(float64(counted.spans.Load())/float64(b.N), "exported-spans/op")
}

// BenchmarkWholeChain2026 is BenchmarkWholeChain asked in protocol
// 2026-07-28's form (standard headers, per-request _meta), which the go-sdk
// answers: the two paths side by side (docs/performance.md).
func BenchmarkWholeChain2026(b *testing.B) {
	h, token := chainHandler(b, -1, nil)
	serveBenchAs(b, h, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`,
		http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"describe_workflow"}})
}

func benchChainTraced(b *testing.B, cacheTTL time.Duration, tracing *Tracing) {
	h, token := chainHandler(b, cacheTTL, tracing)
	serveBench(b, h, token)
}

// chainHandler is the whole HTTP chain over describeReader, with an audit
// log in a temporary directory, and a token for it.
func chainHandler(b *testing.B, cacheTTL time.Duration, tracing *Tracing) (http.Handler, string) {
	log, err := audit.Open(audit.Config{Path: filepath.Join(b.TempDir(), "audit.log"), Key: []byte(strings.Repeat("k", 64))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { log.Close() })
	return chainHandlerWith(b, log, cacheTTL, tracing)
}

// chainHandlerWith is the whole HTTP chain over describeReader, writing
// to a, with rate limits too high to reach, and a token for it; more sets
// further options.
func chainHandlerWith(tb testing.TB, a Auditor, cacheTTL time.Duration, tracing *Tracing, more ...func(*Options)) (http.Handler, string) {
	tb.Helper()
	tokensFile := filepath.Join(tb.TempDir(), "tokens")
	token, err := tokens.Append(tokensFile, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	set, err := tokens.Load(tokensFile)
	if err != nil {
		tb.Fatal(err)
	}
	o := Options{Namespace: "default", Audit: a, CacheTTL: cacheTTL, Tracing: tracing}
	for _, m := range more {
		m(&o)
	}
	g, err := NewServer(&describeReader{}, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.Close)
	h, err := g.Handler(HTTPOptions{Tokens: func() *tokens.Set { return set },
		Limits: limit.Limits{PerPrincipal: 1e9, PerPrincipalBurst: 1e9, Global: 1e9, GlobalBurst: 1e9}})
	if err != nil {
		tb.Fatal(err)
	}
	return h, token
}

// serveBench posts describe_workflow calls to h: one at a time (the
// bench's concurrency 1), or from every P with -parallel-chain.
func serveBench(b *testing.B, h http.Handler, token string) {
	serveBenchAs(b, h, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"shipment-running-1"}}}`, nil)
}

// serveBenchAs is serveBench posting body with header.
func serveBenchAs(b *testing.B, h http.Handler, token, body string, header http.Header) {
	call := func() {
		req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"structuredContent"`) || strings.Contains(rec.Body.String(), "AKIAPORTHOLESEED0001") {
			b.Fatalf("status %d: %.300s", rec.Code, rec.Body.String())
		}
	}
	b.ReportAllocs()
	if !*parallel {
		for b.Loop() {
			call()
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call()
		}
	})
}

var parallel = flag.Bool("parallel-chain", false, "post the chain benchmarks' calls from every P at once")

// BenchmarkWholeChain is `make bench`'s porthole mode without Temporal.
func BenchmarkWholeChain(b *testing.B) { benchChain(b, -1) }

// BenchmarkWholeChainOAuth is BenchmarkWholeChain with an OAuth access
// token (EdDSA, from a local issuer) instead of a static token: what
// validating it costs per call once its identity is held by digest.
func BenchmarkWholeChainOAuth(b *testing.B) {
	li := newLocalIssuer(b)
	const resource = "http://localhost/mcp"
	v, err := oauth.New(oauth.Config{Resource: resource, Issuers: []oauth.Issuer{{URL: li.srv.URL, Alias: "bench"}}})
	if err != nil {
		b.Fatal(err)
	}
	v.Refresh(context.Background())
	dir := b.TempDir()
	log, err := audit.Open(audit.Config{Path: filepath.Join(dir, "audit.log"), Key: []byte(strings.Repeat("k", 64))})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	g, err := NewServer(&describeReader{}, Options{Namespace: "default", Audit: log, CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	h, err := g.Handler(HTTPOptions{OAuth: &OAuthOptions{Validator: v, Resource: resource, Scopes: []string{"porthole:read"}},
		Limits: limit.Limits{PerPrincipal: 1e9, PerPrincipalBurst: 1e9, Global: 1e9, GlobalBurst: 1e9}})
	if err != nil {
		b.Fatal(err)
	}
	serveBench(b, h, li.token(b, resource, "porthole:read"))
}

// BenchmarkWholeChainCached is `make bench`'s cached mode: every call after
// the first is answered from the cache.
func BenchmarkWholeChainCached(b *testing.B) { benchChain(b, time.Hour) }

// BenchmarkBareDescribe is `make bench`'s bare mode without Temporal: a
// go-sdk stateless server with a typed describe_workflow tool over the same
// reader, no hardening. Its result is the bench's bare one, a few fields.
func BenchmarkBareDescribe(b *testing.B) {
	r := &describeReader{}
	s := baretest.Server(func(ctx context.Context, workflowID, runID string) (baretest.Workflow, error) {
		d, err := r.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: workflowID, RunID: runID})
		if err != nil {
			return baretest.Workflow{}, err
		}
		return baretest.Workflow{WorkflowID: d.Workflow.WorkflowID, RunID: d.Workflow.RunID, WorkflowType: d.Workflow.WorkflowType,
			Status: string(d.Workflow.Status), StartTime: *d.Workflow.StartTime, Pending: len(d.PendingActivities)}, nil
	})
	serveBench(b, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}), "")
}

// BenchmarkWholeChainProfiles is BenchmarkWholeChain for a caller of each
// kind of disclosure profile, side by side: the default; one that
// withholds worker identities and runs the e-mail detector on free text;
// one that shows workflow ids, run ids and worker identities as
// pseudonyms (the call naming its workflow by pseudonym, which porthole
// opens).
func BenchmarkWholeChainProfiles(b *testing.B) {
	maker, err := pseudonym.New(bytes.Repeat([]byte{1}, pseudonym.SecretSize), nil, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, profile, workflowID string }{
		{"default", `{}`, "shipment-running-1"},
		{"withholding", `{"classes": {"worker-identity": "withhold"}, "personal": ["email"]}`, "shipment-running-1"},
		{"pseudonymising", `{"classes": {"workflow-id": "pseudonymise", "run-id": "pseudonymise", "worker-identity": "pseudonymise"}}`,
			maker.Make("p", "workflow-id", "default", "shipment-running-1")},
	} {
		b.Run(p.name, func(b *testing.B) {
			pf, err := policy.ParseFile([]byte(`{"principals": {"bench": {"tools": ["*"], "profile": "p"}}, "profiles": {"p": ` + p.profile + `}}`))
			if err != nil {
				b.Fatal(err)
			}
			log, err := audit.Open(audit.Config{Path: filepath.Join(b.TempDir(), "audit.log"), Key: []byte(strings.Repeat("k", 64))})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { log.Close() })
			h, token := chainHandlerWith(b, log, -1, nil, func(o *Options) { o.Grants, o.Pseudonyms = pf.Grants(), maker })
			serveBenchAs(b, h, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_workflow","arguments":{"workflowId":"`+p.workflowID+`"}}}`, nil)
		})
	}
}
