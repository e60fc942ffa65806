package temporal

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestOnlyTheRPCsOfTracedCallsAreTraced: an RPC made outside a traced call
// makes no span and sends no traceparent; one made within it is a client
// span under the call's, named service/method with the rpc.* attributes,
// whose trace context reaches Temporal, and whose status is the gRPC code
// without Temporal's message (which quotes what was asked for).
func TestOnlyTheRPCsOfTracedCallsAreTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	intercept := tracedCalls(tp, "temporal.example:7233")
	const method = "/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkflowExecution"
	var sent metadata.MD
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		sent, _ = metadata.FromOutgoingContext(ctx)
		return status.Error(grpccodes.NotFound, "workflow not found for ID: customer-4711")
	}
	if err := intercept(context.Background(), method, nil, nil, nil, invoker); status.Code(err) != grpccodes.NotFound {
		t.Fatal(err)
	}
	if len(rec.Ended()) != 0 || len(sent.Get("traceparent")) != 0 {
		t.Fatalf("an RPC outside a traced call made %d spans and sent %v", len(rec.Ended()), sent)
	}
	ctx, call := tp.Tracer("t").Start(context.Background(), "tools/call describe_workflow")
	_ = intercept(ctx, method, nil, nil, nil, invoker)
	call.End()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	rpc := spans[0]
	if rpc.Name() != strings.TrimPrefix(method, "/") || rpc.SpanKind() != trace.SpanKindClient || rpc.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Fatalf("the RPC's span: %q %v under %v", rpc.Name(), rpc.SpanKind(), rpc.Parent())
	}
	attrs := map[string]string{}
	for _, kv := range rpc.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"rpc.system": "grpc", "rpc.service": "temporal.api.workflowservice.v1.WorkflowService",
		"rpc.method": "DescribeWorkflowExecution", "server.address": "temporal.example", "server.port": "7233", "rpc.grpc.status_code": "5"} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	if st := rpc.Status(); st.Code != codes.Error || st.Description != "" {
		t.Errorf("the RPC's status: %+v", st)
	}
	tp0 := sent.Get("traceparent")
	if len(tp0) != 1 || !strings.Contains(tp0[0], rpc.SpanContext().TraceID().String()) || !strings.Contains(tp0[0], rpc.SpanContext().SpanID().String()) {
		t.Fatalf("the traceparent sent: %v", tp0)
	}
}
