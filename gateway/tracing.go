package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
)

// Tracing turns OpenTelemetry traces on (docs/deployment.md, Traces). A
// nil *Tracing leaves every span out: no middleware, no tracer calls.
type Tracing struct {
	// Provider makes the tracer; porthole exports what it samples.
	Provider trace.TracerProvider
	// TrustTraceparent continues a client's trace (the HTTP traceparent
	// header) instead of starting a root span linked to it: only for a
	// porthole behind trusted internal callers
	// (PORTHOLE_OTEL_TRUST_TRACEPARENT).
	TrustTraceparent bool
	// PrincipalOnSpans puts the principal on the call's span (enduser.id);
	// principal names can be personal data (PORTHOLE_OTEL_PRINCIPAL).
	PrincipalOnSpans bool
}

// tracerName is the instrumentation scope of porthole's own spans.
const tracerName = "github.com/porthole-dev/porthole/gateway"

// traceContext is the only propagator porthole reads or writes: W3C trace
// context. Baggage is never read, so none of a client's reaches a span or
// Temporal.
var traceContext = propagation.TraceContext{}

// traced wraps the front in otelhttp's server span when tracing is on. A
// client's traceparent comes from the internet: by default the span is a
// new root linked to it (otelhttp's public endpoint), and only with
// TrustTraceparent does it continue the client's trace. Either way a trace
// id is never an identity: nothing porthole decides reads it.
func (g *Server) traced(h http.Handler) http.Handler {
	t := g.opts.Tracing
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "porthole",
		otelhttp.WithTracerProvider(t.Provider),
		otelhttp.WithPropagators(traceContext),
		otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return !t.TrustTraceparent }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			// Known methods and route names only: a method or a path a
			// client made up would make a span name (and a backend's
			// index) per request.
			method := "HTTP"
			switch r.Method {
			case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions:
				method = r.Method
			}
			switch r.URL.Path {
			case "/mcp", "/sse":
				return method + " " + r.URL.Path
			}
			return method
		}),
	)
}

// linkSpan is a span of one link of the chain, or nothing when tracing is
// off. End may be called more than once.
type linkSpan struct{ s trace.Span }

func (l linkSpan) End() {
	if l.s != nil {
		l.s.End()
	}
}

// SetInt sets an int attribute when there is a span. Not variadic: a
// variadic call passed on to the interface would allocate its slice even
// with tracing off.
func (l linkSpan) SetInt(key string, v int) {
	if l.s != nil {
		l.s.SetAttributes(attribute.Int(key, v))
	}
}

// SetString sets a string attribute when there is a span.
func (l linkSpan) SetString(key, v string) {
	if l.s != nil {
		l.s.SetAttributes(attribute.String(key, v))
	}
}

// SetOutcome says how the call ended: its audit outcome, and an error
// status for anything but ok (a refused call looked like
// a served one).
func (l linkSpan) SetOutcome(outcome string) {
	if l.s == nil {
		return
	}
	l.s.SetAttributes(attribute.String("porthole.outcome", outcome))
	if outcome != "ok" {
		l.s.SetStatus(codes.Error, "")
	}
}

// linkSpan starts the span of one link of the chain as a child of ctx's
// span. Its context is not passed on: the next link's span is the link's
// sibling, not its child.
func (g *Server) linkSpan(ctx context.Context, name string) linkSpan {
	if g.tracer == nil {
		return linkSpan{}
	}
	_, s := g.tracer.Start(ctx, name)
	return linkSpan{s}
}

// childSpan starts a span whose context is passed on (a call's span, the
// cache's, under which the Temporal RPC is); with tracing off it returns
// ctx and an empty span.
func (g *Server) childSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, linkSpan) {
	if g.tracer == nil {
		return ctx, linkSpan{}
	}
	ctx, s := g.tracer.Start(ctx, name, opts...)
	return ctx, linkSpan{s}
}

// endFirst ends the span before next runs: the span measures its link
// alone.
func endFirst(s linkSpan, next http.Handler) http.Handler {
	if s.s == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.End()
		next.ServeHTTP(w, r)
	})
}

// traceID is the id of ctx's trace when tracing is on, or "": the audit
// record and the operations log carry it, so a reviewer can go from who
// asked to what it cost and back. With tracing off it does not look.
func (g *Server) traceID(ctx context.Context) string {
	if g.tracer == nil {
		return ""
	}
	return traceID(ctx)
}

func traceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// traceField is the operations log's field for ctx's trace, or none.
func traceField(ctx context.Context) zap.Field {
	if id := traceID(ctx); id != "" {
		return zap.String("traceId", id)
	}
	return zap.Skip()
}

// metaLink is a link to the trace an MCP request's _meta.traceparent
// names, or none. It is always a link, never a parent: it comes in the
// request's body, which anyone with a token writes.
func metaLink(meta map[string]any) []trace.SpanStartOption {
	tp, _ := meta["traceparent"].(string)
	if tp == "" || len(tp) > 64 {
		return nil
	}
	sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
	if !sc.IsValid() {
		return nil
	}
	return []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("porthole.link", "mcp _meta.traceparent")}})}
}

// callSpan starts the span of an MCP call (tools/call, tools/list), named
// and described as the MCP semantic conventions have it: the method, the
// tool as the metrics name it (one of porthole's or the roster's, else
// "unknown"), the audit record's request id; the principal only with
// PrincipalOnSpans, as the audit log names it. An MCP request's
// _meta.traceparent is linked. Never an argument's value, never a result.
func (g *Server) callSpan(ctx context.Context, method string, call audit.Record, ri requestInfo, req mcp.Request) (context.Context, linkSpan) {
	if g.tracer == nil {
		return ctx, linkSpan{}
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("porthole.request_id", ri.RequestID)}
	name := method
	if method == "tools/call" {
		tool := g.metrics.toolLabel(call.Tool, method)
		name += " " + tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if g.opts.Tracing.PrincipalOnSpans && call.Principal != "" {
		attrs = append(attrs, attribute.String("enduser.id", call.Principal))
	}
	opts := append([]trace.SpanStartOption{trace.WithAttributes(attrs...)}, metaLink(metaOf(req))...)
	return g.childSpan(ctx, name, opts...)
}

// metaOf is the _meta of a tools/call or tools/list, or nil. The params of
// a tools/list sent without any are a nil pointer in a non-nil interface,
// whose GetMeta panics (one such request, as the
// TypeScript and Python SDKs send it, ended the process).
func metaOf(req mcp.Request) map[string]any {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil {
			return p.Meta
		}
	case *mcp.CallToolParams:
		if p != nil {
			return p.Meta
		}
	case *mcp.ListToolsParams:
		if p != nil {
			return p.Meta
		}
	}
	return nil
}

// endFirstMethod is endFirst for an MCP method handler.
func endFirstMethod(s linkSpan, next mcp.MethodHandler) mcp.MethodHandler {
	if s.s == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		s.End()
		return next(ctx, method, req)
	}
}
