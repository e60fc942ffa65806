package temporal

import (
	"context"
	"net"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// tracerName is the instrumentation scope of the Temporal RPCs' spans.
const tracerName = "github.com/porthole-dev/porthole/temporal"

// tracedCalls gives each unary RPC made within a traced call a client span
// (named, as gRPC's instrumentations name it, service/method, with the
// rpc.* attributes of the semantic conventions and the server's address)
// and passes its W3C trace context to Temporal, never baggage. An RPC
// whose context holds no recording span (the dial's namespace check,
// /readyz's ping, the SDK's own background calls, a call the sampler left
// out) is not traced. The span's status is the
// gRPC code alone: Temporal's message quotes what was asked for.
func tracedCalls(tp trace.TracerProvider, address string) grpc.UnaryClientInterceptor {
	tracer := tp.Tracer(tracerName)
	server := []attribute.KeyValue{attribute.String("rpc.system", "grpc")}
	if host, port, err := net.SplitHostPort(address); err == nil {
		server = append(server, attribute.String("server.address", host))
		if n, err := strconv.Atoi(port); err == nil {
			server = append(server, attribute.Int("server.port", n))
		}
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !trace.SpanFromContext(ctx).IsRecording() {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		name := strings.TrimPrefix(method, "/")
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
		carrier := metadataCarrier{}
		propagation.TraceContext{}.Inject(ctx, &carrier)
		if carrier.traceparent != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", carrier.traceparent)
		}
		err := errRPCPanicked
		defer func() { endRPCSpan(span, server, name, err) }()
		err = invoker(ctx, method, req, reply, cc, opts...)
		return err
	}
}

// errRPCPanicked is the error an RPC's span ends with when the invoker
// panicked (the span still ends).
var errRPCPanicked = status.Error(grpccodes.Internal, "the RPC panicked")

// endRPCSpan sets the RPC span's attributes, once (each set costs the
// SDK a copy), and its status, and ends it.
func endRPCSpan(span trace.Span, server []attribute.KeyValue, name string, err error) {
	attrs := make([]attribute.KeyValue, len(server), len(server)+3)
	copy(attrs, server)
	if service, m, ok := strings.Cut(name, "/"); ok {
		attrs = append(attrs, attribute.String("rpc.service", service), attribute.String("rpc.method", m))
	}
	span.SetAttributes(append(attrs, attribute.Int("rpc.grpc.status_code", int(status.Code(err))))...)
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// metadataCarrier takes the traceparent the propagator writes, and
// nothing else: a trace state is never passed to Temporal.
type metadataCarrier struct{ traceparent string }

func (c *metadataCarrier) Get(string) string { return "" }
func (c *metadataCarrier) Keys() []string    { return nil }
func (c *metadataCarrier) Set(key, value string) {
	if key == "traceparent" {
		c.traceparent = value
	}
}
