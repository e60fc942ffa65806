package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// traced starts each request's server span when tracing is on: named
// for its method and route, with porthole's few attributes, and holding
// the chain's link events until the operation span takes them. A client's
// traceparent comes from the internet: by default the span is a new root
// linked to it, and only with TrustTraceparent does it continue the
// client's trace. Either way a trace id is never an identity: nothing
// porthole decides reads it. The span's attributes are set once, at its
// end: each set of attributes costs the SDK a copy.
func (g *Server) traced(h http.Handler) http.Handler {
	t := g.opts.Tracing
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		opts := serverSpanKind
		// The trace state is the client's text, which a span continuing or
		// linking its trace would export: only the traceparent is read.
		if sc := spanContextOf(r.Header.Get("Traceparent")); sc.IsValid() && t.TrustTraceparent {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		} else if sc.IsValid() {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
		}
		method, route := knownMethod(r.Method), knownRoute(r.URL.Path)
		ctx, span := g.tracer.Start(ctx, serverSpanName(method, route), opts...)
		if !span.IsRecording() {
			// Not sampled: no chain, no attributes, no operation span
			// (the operation's follows its parent's sampling), and no
			// record names the trace.
			defer span.End()
			h.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		rt := &requestTrace{statusRecorder: statusRecorder{ResponseWriter: w}}
		rt.chain.span, rt.chain.home = span, span
		// Deferred, so that a panic that passes recoverPanics (an
		// http.ErrAbortHandler) still ends the span with its events.
		defer endServerSpan(span, method, route, rt)
		h.ServeHTTP(rt, r.WithContext(context.WithValue(ctx, chainKey{}, &rt.chain)))
	})
}

// endServerSpan adds the events the operation span did not take, and the
// server span's attributes, and ends it.
func endServerSpan(span trace.Span, method, route string, rt *requestTrace) {
	rt.chain.flush()
	status := rt.status
	if status == 0 {
		status = http.StatusOK
	}
	span.SetAttributes(serverAttrs(method, route, &rt.chain, status)...)
	if status >= 500 {
		// A server span's error is a 5xx; a 4xx is the client's.
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// serverSpanKind starts every server span; a request that links a
// client's trace appends to a copy (its capacity is its length).
var serverSpanKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// serverSpanName is the server span's name: known methods and route names
// only, since a method or a path a client made up would make a span name
// (and a backend's index) per request. The names are made once.
func serverSpanName(method, route string) string {
	if route != "" {
		return routeSpanNames[method+" "+route]
	}
	return method
}

// routeSpanNames are the names of known methods on known routes; the
// lookup with a concatenated key does not allocate.
var routeSpanNames = func() map[string]string {
	names := map[string]string{}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions, "HTTP"} {
		for _, r := range []string{"/mcp", "/sse"} {
			names[m+" "+r] = m + " " + r
		}
	}
	return names
}()

func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead, http.MethodOptions:
		return m
	}
	return "HTTP"
}

func knownRoute(path string) string {
	switch path {
	case "/mcp", "/sse":
		return path
	}
	return ""
}

// serverAttrs are the server span's attributes: the method (or _OTHER),
// the route where it is one porthole serves, the audit record's request
// id, the client as porthole resolved it, and the answer's status. What
// the client sent beyond them (its User-Agent, a made-up path) is not put
// on a span.
func serverAttrs(method, route string, c *chainTrace, status int) []attribute.KeyValue {
	if method == "HTTP" {
		method = "_OTHER"
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attribute.String("http.request.method", method))
	if route != "" {
		attrs = append(attrs, attribute.String("http.route", route))
	}
	if c.requestID != "" {
		attrs = append(attrs, attribute.String("porthole.request_id", c.requestID), attribute.String("client.address", c.clientAddr))
	}
	return append(attrs, attribute.Int("http.response.status_code", status))
}

// requestTrace is a traced request's writer: it notes the status the
// answer was given, for the server span, and holds the request's chain.
type requestTrace struct {
	statusRecorder
	chain chainTrace
}

// maxLinkEvents bounds the events a chain keeps: a tools/call over HTTP
// makes eight; past the bound they are counted, not kept.
const maxLinkEvents = 10

// chainTrace is the chain of one traced call, as span events: each link
// is an event named for it, at the time it ended (so the gap from the
// event before is that link's time), with its outcome where it refused.
// The events go on the operation span; those of the links before it
// (authentication, decoding, rate limiting) are kept until it starts, and
// go on the server span when the request ends without one (a refusal
// before the operation, a method that is not a call).
type chainTrace struct {
	mu      sync.Mutex
	span    trace.Span // where the events go
	home    trace.Span // the server span, where they go again once the operation ends
	direct  bool       // span is the operation's, which takes each event as its link ends
	claimed bool       // an operation span took the chain
	begun   time.Time  // when the first link began
	n       int
	dropped int
	events  [maxLinkEvents]linkEvent
	// requestID and clientAddr are the server span's, from identify.
	requestID, clientAddr string
	// opAttrs are the operation span's attributes, set when it ends.
	opAttrs []attribute.KeyValue
}

// linkEvent is one link's event. A link runs until it is added to a span
// or its time is set.
type linkEvent struct {
	name  string
	at    time.Time
	attr  attribute.KeyValue // porthole.outcome, or the link's figure; none when its key is ""
	added bool               // on a span
}

type chainKey struct{}

// chainFrom is ctx's chain, or nil.
func chainFrom(ctx context.Context) *chainTrace {
	c, _ := ctx.Value(chainKey{}).(*chainTrace)
	return c
}

// open starts a link's event and returns its index, or -1 past the bound.
func (c *chainTrace) open(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.begun.IsZero() {
		c.begun = time.Now()
	}
	if c.n == len(c.events) {
		c.dropped++
		return -1
	}
	c.events[c.n] = linkEvent{name: name}
	c.n++
	return c.n - 1
}

// end ends event i, once: on the operation span at once, else kept with
// the time now. With a key, it sets the event's attribute too (an outcome
// is never overwritten).
func (c *chainTrace) end(i int, kv attribute.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= c.n {
		return
	}
	e := &c.events[i]
	if e.added {
		return
	}
	if kv.Key != "" && e.attr.Key != "porthole.outcome" {
		e.attr = kv
	}
	if c.direct {
		// The SDK stamps it: no timestamp option to box.
		if e.attr.Key != "" {
			c.span.AddEvent(e.name, trace.WithAttributes(e.attr))
		} else {
			c.span.AddEvent(e.name)
		}
		e.added = true
		return
	}
	if e.at.IsZero() {
		e.at = time.Now()
	}
}

// refused ends the link that is running with outcome, or, when none is
// (the Host and Origin check, the MCP transport), adds a "porthole
// refused" event with it.
func (c *chainTrace) refused(outcome string) {
	kv := attribute.String("porthole.outcome", outcome)
	c.mu.Lock()
	i := c.n - 1
	for i >= 0 && (c.events[i].added || !c.events[i].at.IsZero()) {
		i--
	}
	c.mu.Unlock()
	if i < 0 {
		i = c.open("porthole refused")
	}
	c.end(i, kv)
}

// claim gives the chain to an operation span and returns when the chain
// began, for the span's start; false when another operation holds it (the
// calls of an SSE stream share its request).
func (c *chainTrace) claim() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed {
		return time.Time{}, false
	}
	c.claimed = true
	return c.begun, true
}

// hand gives the events to the operation span s: the kept ones now, each
// later one as its link ends.
func (c *chainTrace) hand(s trace.Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.span = s
	c.flushLocked()
	c.direct = true
}

// handBack ends the operation's part: a link still running ends with it,
// and the events after it go to the server span.
func (c *chainTrace) handBack() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.direct = false
	c.flushLocked()
	c.span = c.home
}

// flush adds the events kept to the chain's span, unless an operation
// span holds the chain (a client that hung up ends the request while the
// call goes on): then the operation's end adds them.
func (c *chainTrace) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.direct {
		c.flushLocked()
	}
}

func (c *chainTrace) flushLocked() {
	if c.span == nil {
		return
	}
	now := time.Time{}
	for i := range c.events[:c.n] {
		e := &c.events[i]
		if e.added {
			continue
		}
		if e.at.IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			e.at = now
		}
		if e.attr.Key != "" {
			c.span.AddEvent(e.name, trace.WithTimestamp(e.at), trace.WithAttributes(e.attr))
		} else {
			c.span.AddEvent(e.name, trace.WithTimestamp(e.at))
		}
		e.added = true
	}
	if c.dropped > 0 {
		c.span.SetAttributes(attribute.Int("porthole.link_events_dropped", c.dropped))
		c.dropped = 0
	}
}

// link is one link of the chain as traced, or nothing when tracing is
// off. End may be called more than once: the event is stamped once.
type link struct {
	c *chainTrace
	i int
}

// End ends the link: its event's time is now.
func (l link) End() {
	if l.c != nil {
		l.c.end(l.i, attribute.KeyValue{})
	}
}

// EndWithInt ends the link with a figure (not variadic: a variadic call
// would allocate its slice even with tracing off).
func (l link) EndWithInt(key string, v int) {
	if l.c != nil {
		l.c.end(l.i, attribute.Int(key, v))
	}
}

// EndWithString ends the link with a word of porthole's.
func (l link) EndWithString(key, v string) {
	if l.c != nil {
		l.c.end(l.i, attribute.String(key, v))
	}
}

// Refused ends the link as the one that refused the call.
func (l link) Refused(outcome string) { l.EndWithString("porthole.outcome", outcome) }

// startLink starts the event of the link named name in ctx's chain; with
// no chain (tracing off) it returns an empty link.
func startLink(ctx context.Context, name string) link {
	c := chainFrom(ctx)
	if c == nil {
		return link{}
	}
	return link{c, c.open(name)}
}

// link is startLink when tracing is on; with tracing off the context is
// not searched.
func (g *Server) link(ctx context.Context, name string) link {
	if g.tracer == nil {
		return link{}
	}
	return startLink(ctx, name)
}

// refusedLink ends the running link of ctx's chain as refused with
// outcome (see chainTrace.refused).
func (g *Server) refusedLink(ctx context.Context, outcome string) {
	if g.tracer == nil {
		return
	}
	if c := chainFrom(ctx); c != nil {
		c.refused(outcome)
	}
}

// passed ends l before next runs: the event marks the end of its link.
func passed(l link, next http.Handler) http.Handler {
	if l.c == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.End()
		next.ServeHTTP(w, r)
	})
}

// opSpan is an MCP operation's span and the chain whose events it
// carries, or nothing when tracing is off. End may be called more than
// once.
type opSpan struct {
	s trace.Span
	c *chainTrace
}

// End adds the chain's events and the span's attributes, and ends it.
func (o opSpan) End() {
	if o.s == nil {
		return
	}
	o.c.handBack()
	o.s.SetAttributes(o.c.opAttrs...)
	o.s.End()
}

// SetOutcome says how the call ended, once: its audit outcome, and an
// error status for anything but ok (a refused call looked like a served
// one).
func (o opSpan) SetOutcome(outcome string) {
	if o.s == nil {
		return
	}
	o.c.mu.Lock()
	o.c.opAttrs = append(o.c.opAttrs, attribute.String("porthole.outcome", outcome))
	o.c.mu.Unlock()
	if outcome != "ok" {
		o.s.SetStatus(codes.Error, "")
	}
}

// traceID is the id of ctx's trace when tracing is on and the trace is
// sampled, or "": the audit record and the operations log carry it, so a
// reviewer can go from who asked to what it cost and back. With tracing
// off it does not look.
func (g *Server) traceID(ctx context.Context) string {
	if g.tracer == nil {
		return ""
	}
	return traceID(ctx)
}

func traceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		// A trace the sampler left out is exported by nobody: a record
		// naming it would send a reviewer looking for nothing.
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

// spanContextOf is the remote span context a W3C traceparent names, with
// no trace state (none is read), or an invalid one: for an empty or
// malformed value, or one over 64 bytes.
func spanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" || len(traceparent) > 64 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
}

// metaLink is a link to the trace an MCP request's _meta.traceparent
// names, or none. It is always a link, never a parent: it comes in the
// request's body, which anyone with a token writes.
func metaLink(meta map[string]any) []trace.SpanStartOption {
	tp, _ := meta["traceparent"].(string)
	sc := spanContextOf(tp)
	if !sc.IsValid() {
		return nil
	}
	return []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("porthole.link", "mcp _meta.traceparent")}})}
}

// callSpan starts the operation span of an MCP call (tools/call,
// tools/list), named and described as the MCP semantic conventions have
// it: the method, the tool as the metrics name it (one of porthole's or
// the roster's, else "unknown"), the audit record's request id; the
// principal only with PrincipalOnSpans, as the audit log names it. An MCP
// request's _meta.traceparent is linked. Never an argument's value, never
// a result. Over HTTP it takes the request's chain and starts when the
// chain began, so the links before it are events within it; a call of an
// SSE stream, or over stdio, has a chain of its own.
func (g *Server) callSpan(ctx context.Context, method string, call audit.Record, ri requestInfo, req mcp.Request) (context.Context, opSpan) {
	if g.tracer == nil {
		return ctx, opSpan{}
	}
	c := chainFrom(ctx)
	if ri.Transport != "stdio" && !trace.SpanFromContext(ctx).IsRecording() {
		// A request (or an SSE stream) the sampler left out: the
		// operation's span follows its parent's sampling.
		return ctx, opSpan{}
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String("mcp.method.name", method), attribute.String("porthole.request_id", ri.RequestID))
	name := method
	if method == "tools/call" {
		tool := g.metrics.toolLabel(call.Tool, method)
		name += " " + tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if g.opts.Tracing.PrincipalOnSpans && call.Principal != "" {
		attrs = append(attrs, attribute.String("enduser.id", call.Principal))
	}
	opts := metaLink(metaOf(req))
	if c != nil && ri.Transport != "sse" {
		if begun, ok := c.claim(); !ok {
			c = nil
		} else if !begun.IsZero() {
			opts = append(opts, trace.WithTimestamp(begun))
		}
	} else {
		c = nil
	}
	ctx, s := g.tracer.Start(ctx, name, opts...)
	if !s.IsRecording() {
		// No chain: the links of this call must not go to a chain its
		// context carries (an SSE stream's, shared by its calls).
		return context.WithValue(ctx, chainKey{}, (*chainTrace)(nil)), opSpan{}
	}
	if c == nil {
		c = &chainTrace{claimed: true}
		ctx = context.WithValue(ctx, chainKey{}, c)
	}
	// The attributes are set when the span ends, with its outcome: each
	// set of attributes costs the SDK a copy.
	c.opAttrs = attrs
	c.hand(s)
	return ctx, opSpan{s, c}
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
