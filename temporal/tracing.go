package temporal

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"
)

// tracedCalls is otelgrpc's client handler, for the RPCs of traced calls
// only: an RPC whose context holds no span (the dial's namespace check,
// /readyz's ping, the SDK's own background calls) makes no trace of its
// own. It passes W3C trace context to Temporal, never baggage.
func tracedCalls(tp trace.TracerProvider) stats.Handler {
	return inTraceOnly{otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}))}
}

type inTraceOnly struct{ stats.Handler }

type untracedKey struct{}

func (h inTraceOnly) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return context.WithValue(ctx, untracedKey{}, true)
	}
	return h.Handler.TagRPC(ctx, info)
}

func (h inTraceOnly) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	if ctx.Value(untracedKey{}) != nil {
		return
	}
	h.Handler.HandleRPC(ctx, rs)
}
