package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSDKSpans makes a call's worth of spans with the OpenTelemetry SDK
// alone (no porthole code), as a traced call of describe_workflow makes
// them: the server span with its five attributes, under it the operation
// span with its four and the link events (none to eight), and under that
// the Temporal RPC's client span with its six; spans 1 or 2 keep the
// first ones only. It reports the process's CPU per call (cpu-ns/op), the
// batcher's and the exporter's goroutines and the garbage collector
// included, and for the OTLP exporter the in-process server that receives
// the batches too: the floor the SDK sets under the tracing target
// (docs/performance.md, Tracing on beside tracing off). Every span must
// reach the exporter.
func benchSDKSpans(b *testing.B, exp sdktrace.SpanExporter, spans, events int) {
	counted := &countingExporter{SpanExporter: exp, exported: make(chan struct{}, 1)}
	// The queue and batch sizes are the SDK's defaults, set here so that
	// OTEL_BSP_* in the environment cannot change what the pacing below
	// relies on (found by review: a batch over 1,024 spans would wait on
	// the timer, a queue under 1,035 would drop spans).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(counted, sdktrace.WithMaxQueueSize(2048), sdktrace.WithMaxExportBatchSize(512)))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("bench")
	links := []string{"porthole authenticate", "porthole decode", "porthole rate limit", "porthole audit write", "porthole policy",
		"porthole cache", "porthole redact", "porthole audit write"}
	const id = "0195b9a4-7c1e-7d2a-9f3b-1a2b3c4d5e6f"
	b.ReportAllocs()
	var made int64
	start := processCPU()
	for b.Loop() {
		ctx, root := tr.Start(context.Background(), "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
		if spans > 1 {
			octx, op := tr.Start(ctx, "tools/call describe_workflow")
			for _, n := range links[:events] {
				op.AddEvent(n)
			}
			if spans > 2 {
				_, rpc := tr.Start(octx, "temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution", trace.WithSpanKind(trace.SpanKindClient))
				rpc.SetAttributes(attribute.String("rpc.system", "grpc"), attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 7233),
					attribute.String("rpc.service", "temporal.api.workflowservice.v1.WorkflowService"), attribute.String("rpc.method", "DescribeWorkflowExecution"),
					attribute.Int("rpc.grpc.status_code", 0))
				rpc.End()
			}
			op.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("porthole.request_id", id),
				attribute.String("gen_ai.tool.name", "describe_workflow"), attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("porthole.outcome", "ok"))
			op.End()
		}
		root.SetAttributes(attribute.String("http.request.method", "POST"), attribute.String("http.route", "/mcp"), attribute.String("porthole.request_id", id),
			attribute.String("client.address", "127.0.0.1"), attribute.Int("http.response.status_code", 200))
		root.End()
		// Paced as calls are: this loop makes spans far faster than
		// porthole's calls do, and the batcher drops what its queue (2,048
		// spans) cannot hold, which would cost less than exporting it.
		// Waiting for the next export while more than 1,024 are not yet
		// exported keeps the queue from filling, at the cost of a wake-up
		// per batch of 512; a batcher made to block instead parks this
		// goroutine at every span past a full queue, which porthole's
		// never does.
		made += int64(spans)
		for made-counted.spans.Load() > 1024 {
			if err := counted.failed.Load(); err != nil {
				b.Fatalf("an export failed: %v", *err)
			}
			select {
			case <-counted.exported:
			case <-time.After(30 * time.Second):
				b.Fatalf("%d spans made, %d exported, and no export for 30 s", made, counted.spans.Load())
			}
		}
	}
	_ = tp.ForceFlush(context.Background())
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	if err := counted.failed.Load(); err != nil {
		b.Fatalf("an export failed: %v", *err)
	}
	if counted.spans.Load() != made {
		b.Fatalf("%d spans made, %d exported: the batcher dropped some", made, counted.spans.Load())
	}
}

// countingExporter counts the spans it passes on that were exported
// without an error, keeps the first error, and, when exported is not nil,
// signals there after each batch.
type countingExporter struct {
	sdktrace.SpanExporter
	spans    atomic.Int64
	failed   atomic.Pointer[error]
	exported chan struct{}
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.failed.CompareAndSwap(nil, &err)
	} else {
		e.spans.Add(int64(len(spans)))
	}
	if e.exported != nil {
		select {
		case e.exported <- struct{}{}:
		default:
		}
	}
	return err
}

// BenchmarkSDKSpans is benchSDKSpans for a call of 1, 2 and 3 spans, with
// the operation span's eight link events or none, batched to an exporter
// that drops them (noop) and exported over OTLP/HTTP to a server in this
// process that reads and drops the batches (otlp).
func BenchmarkSDKSpans(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer sink.Close()
	for _, c := range []struct{ spans, events int }{{1, 0}, {2, 0}, {3, 0}, {3, 8}} {
		b.Run(fmt.Sprintf("noop/spans=%d/events=%d", c.spans, c.events), func(b *testing.B) { benchSDKSpans(b, tracetest.NewNoopExporter(), c.spans, c.events) })
		b.Run(fmt.Sprintf("otlp/spans=%d/events=%d", c.spans, c.events), func(b *testing.B) {
			exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"))
			if err != nil {
				b.Fatal(err)
			}
			benchSDKSpans(b, exp, c.spans, c.events)
		})
	}
}
