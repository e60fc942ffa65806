package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact"
)

// auditWriteTimeout bounds the write of a record whose context is detached
// from the client's: a client that hangs up mid-call must not suppress the
// record of what it asked.
const auditWriteTimeout = 5 * time.Second

// writeDetached writes a record that must be written whatever becomes of
// the request it is about (a result, a denial, an upstream's change): on a
// context that outlives the request, bounded by auditWriteTimeout. What a
// failure means is the caller's to decide.
func (g *Server) writeDetached(ctx context.Context, rec audit.Record) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	return g.audit.Write(ctx, rec)
}

// resultNotes is what a handler learns about its call that the audit record
// of the result should say.
type resultNotes struct {
	outcome     audit.Outcome // set by handlers that refuse; empty means decide from the result
	cached      bool
	redactions  int         // set by a handler that redacted its own result
	resultBytes int         // set with redactions
	entry       *cacheEntry // the cache entry a hit was answered from
	// disclosure is the caller's disclosure profile, set by the grants
	// middleware on tools/call; nil before it ran. opened are the values
	// the call's pseudonyms stood for (disclosedArguments).
	disclosure *policy.Disclosure
	opened     []audit.Arg
}

type resultNotesKey struct{}

func resultNotesFrom(ctx context.Context) *resultNotes {
	if s, ok := ctx.Value(resultNotesKey{}).(*resultNotes); ok {
		return s
	}
	return &resultNotes{}
}

// errAuditUnavailable is what a client is told when its call record could
// not be written: the call was not made.
var errAuditUnavailable = &jsonrpc.Error{
	Code:    jsonrpc.CodeInternalError,
	Message: "porthole could not write the audit record for this call, so the call was not made; retry later",
}

// errAuditLowSpace is what a client is told when its call was refused
// because the audit log's file system is below its minimum free space.
var errAuditLowSpace = &jsonrpc.Error{
	Code:    jsonrpc.CodeInternalError,
	Message: "porthole's audit log is almost out of disk space, so the call was not made; retry later",
}

// errInternal is what a client is told of a call that failed inside
// porthole; the detail goes to the operations log.
var errInternal = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "porthole failed to answer; the failure has been logged"}

// audited is the MCP receiving middleware that writes a call record before
// tools/call and tools/list are dispatched, refuses them when it cannot, and
// writes a result record after they end. Other methods (initialize, ping,
// notifications) reveal nothing of Temporal and are not recorded.
func (g *Server) audited(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if method != "tools/call" && method != "tools/list" {
			return next(ctx, method, req)
		}
		call, ri := g.callRecord(ctx, method, req)
		ctx, span := g.callSpan(ctx, method, call, ri, req)
		defer span.End()
		// The trace is the call span's: over stdio it is the call's own
		// root (stdio records named none).
		call.TraceID = g.traceID(ctx)
		if err := g.writeCallRecord(ctx, span, call, ri); err != nil {
			return nil, err
		}
		notes, start := &resultNotes{}, time.Now()
		// A call whose handler panics ends here, as an internal error with
		// its result record: a reviewer must not find a call that seems
		// never to have ended, and the go-sdk runs handlers on goroutines
		// of its own with no recover, where the panic would end the
		// process (one client's call taking porthole down for all).
		defer func() {
			if v := recover(); v != nil {
				g.log.Error("panic serving a call", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()), zap.String("requestId", ri.RequestID), traceField(ctx))
				span.SetOutcome(string(audit.OutcomeInternal))
				_ = g.writeResult(ctx, resultOf(call, time.Since(start), audit.OutcomeInternal), "")
				res, err = nil, errInternal
			}
		}()
		res, err = next(withRequestInfo(context.WithValue(ctx, resultNotesKey{}, notes), ri), method, req)

		if g.writeResultRecord(ctx, span, call, notes, start, res, err) != nil {
			// An answer whose result record cannot be written is not sent:
			// what a reviewer cannot see, a client does not get.
			return nil, errAuditUnavailable
		}
		return res, err
	}
}

// callRecord is the call record of a tools/call or tools/list, and the
// request's information as the rest of the call sees it: every call has a
// transport and a request id of its own.
func (g *Server) callRecord(ctx context.Context, method string, req mcp.Request) (audit.Record, requestInfo) {
	ri := requestInfoFrom(ctx)
	if ri.Transport == "" {
		ri.Transport = "stdio"
	}
	if ri.RequestID == "" || ri.Transport == "sse" {
		// stdio has no requests; an SSE stream carries many calls.
		ri.RequestID = newRequestID()
	}
	rec := audit.Record{
		Kind: audit.KindCall, RequestID: ri.RequestID, Principal: caller(ctx, req.GetExtra()),
		ClientAddr: ri.ClientAddr, ClientCert: g.auditText(ri.ClientCert, audit.MaxUserAgentBytes), Transport: ri.Transport, UserAgent: g.auditText(ri.UserAgent, audit.MaxUserAgentBytes), Method: method,
	}
	if extra := req.GetExtra(); extra != nil {
		if id := oauthIdentity(ctx, extra.TokenInfo); id != nil {
			rec.OAuth = &audit.OAuthCaller{Issuer: id.Issuer, Subject: id.Subject, ClientID: id.ClientID, TokenID: id.TokenID}
		}
	} else if id := oauthIdentity(ctx, nil); id != nil {
		rec.OAuth = &audit.OAuthCaller{Issuer: id.Issuer, Subject: id.Subject, ClientID: id.ClientID, TokenID: id.TokenID}
	}
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
		// Every tool porthole serves has a name within MaxToolBytes, so
		// the cut changes no name the metrics count.
		rec.Tool = g.auditText(p.Name, audit.MaxToolBytes)
		rec.Upstream = g.upstreamOf(p.Name)
		a := audit.ArgsFromJSON(p.Arguments, g.redactor)
		rec.Args, rec.ArgsOmitted, rec.ArgsOmittedSHA256 = a.Args, a.Omitted, a.OmittedSHA256
	}
	if ri.recorded != nil {
		ri.recorded.Store(true)
	}
	return rec, ri
}

// The audit log's fields are redacted by the wire redactor.
var _ audit.Redactor = (*redact.Redactor)(nil)

// auditText is untrusted text as an audit record holds it: redacted, then
// cut at n bytes.
//
// Security: redacted in full and then cut by the encoder, a field could
// end in the start of a secret that it held only part of (a token glued to
// a word character, the first half of the API key), which no redactor
// recognises afterwards; and a header of a megabyte was redacted whole to
// keep 256 bytes. Cut reads a window past the cap and replaces such a
// start with [REDACTED:partial].
func (g *Server) auditText(s string, n int) string {
	out, _, _ := g.redactor.Cut(s, n)
	return out
}

// writeResult counts a call's end in the metrics and writes its result
// record; a record that cannot be written is logged, with what follows from
// it, and returned.
func (g *Server) writeResult(ctx context.Context, result audit.Record, consequence string) error {
	g.metrics.call(result.Tool, result.Method, result.Principal, string(result.Outcome), result.Duration)
	err := g.writeDetached(ctx, result)
	if err != nil {
		g.log.Error("audit result record not written"+consequence, zap.String("requestId", result.RequestID), traceField(ctx), zap.Error(err))
	}
	return err
}

// writeCallRecord writes a call's record before it is dispatched; a call
// whose record is not written is refused (errAuditLowSpace, or
// errAuditUnavailable).
func (g *Server) writeCallRecord(ctx context.Context, span opSpan, call audit.Record, ri requestInfo) error {
	write := g.link(ctx, "porthole audit write")
	werr := g.audit.Write(ctx, call)
	if werr != nil {
		write.Refused(string(audit.OutcomeInternal))
	}
	write.End()
	switch {
	case errors.Is(werr, audit.ErrLowSpace):
		// Refused before the sink was asked: the operations log says so
		// once for the episode (PORTHOLE_AUDIT_MIN_FREE_BYTES), not once a
		// call.
		span.SetOutcome(string(audit.OutcomeInternal))
		return errAuditLowSpace
	case werr != nil:
		span.SetOutcome(string(audit.OutcomeInternal))
		g.log.Error("audit call record not written; call refused", zap.String("requestId", ri.RequestID), traceField(ctx), zap.Error(werr))
		// A record the sink took too long for may still land; its result
		// then says the call was not made, so that no reader counts it as
		// a call that was. The write is tried once, detached; if the sink
		// is down it is lost with the call record.
		refused := resultOf(call, 0, audit.OutcomeInternal)
		refused.Reason = "the call record was not written within the audit timeout; the call was not made"
		_ = g.writeDetached(ctx, refused)
		return errAuditUnavailable
	}
	return nil
}

// writeResultRecord writes a call's result record: how it ended, how long
// it took, whether it was cached, and what its answer put on the wire.
func (g *Server) writeResultRecord(ctx context.Context, span opSpan, call audit.Record, notes *resultNotes, start time.Time, res mcp.Result, err error) error {
	result := resultOf(call, time.Since(start), outcomeOf(notes, res, err))
	result.Cached = notes.cached
	if d := notes.disclosure; !d.Default() {
		result.Profile, result.Opened = d.Name, notes.opened
	}
	result.ResultBytes, result.Redactions = g.answerSize(notes, res)
	write := g.link(ctx, "porthole audit write")
	werr := g.writeResult(ctx, result, "; answer withheld")
	outcome := string(result.Outcome)
	if werr != nil {
		// The answer is withheld: the trace says so, not the outcome the
		// record would have held.
		outcome = string(audit.OutcomeInternal)
		write.Refused(outcome)
	}
	write.End()
	span.SetOutcome(outcome)
	return werr
}

// answerSize is what an answer puts on the wire and how many secrets were
// redacted in it: as the handler that rendered it noted, or counted here.
func (g *Server) answerSize(notes *resultNotes, res mcp.Result) (bytes, redactions int) {
	if notes.resultBytes > 0 {
		return notes.resultBytes, notes.redactions
	}
	return g.measure(res)
}

// resultOf is the result record of call, ended with outcome after d.
func resultOf(call audit.Record, d time.Duration, outcome audit.Outcome) audit.Record {
	return audit.Record{
		Kind: audit.KindResult, RequestID: call.RequestID, Principal: call.Principal, ClientAddr: call.ClientAddr, ClientCert: call.ClientCert,
		Transport: call.Transport, Method: call.Method, Tool: call.Tool, Upstream: call.Upstream, Duration: d, Outcome: outcome,
		OAuth: call.OAuth, TraceID: call.TraceID,
	}
}

// measure counts what an answer will put on the wire and how many secrets
// the redactor will replace in it. The wire redactor runs again where the
// bytes leave (it is idempotent); this pass is what counts. A tool result's
// text content is its structured content, marshalled once by the handler,
// so only the text is counted.
func (g *Server) measure(res mcp.Result) (bytes, redactions int) {
	switch r := res.(type) {
	case nil:
		return 0, 0
	case *mcp.CallToolResult:
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				red, n := g.redactor.JSON([]byte(t.Text))
				bytes, redactions = bytes+len(red), redactions+n
				if r.StructuredContent != nil {
					bytes += len(red) // structured content carries the same JSON again
				}
			}
		}
		return bytes, redactions
	case *mcp.ListToolsResult:
		// The list is the tools' fixed definitions, whose schemas are slow
		// to marshal (milliseconds for the whole list): each is sized once,
		// and the list is the envelope with an empty array plus each tool
		// and a comma between two. Redaction works literal by literal, and
		// every literal lies within one tool or the envelope, so its
		// counts add up as the lengths do.
		cp := *r
		cp.Tools = []*mcp.Tool{}
		bytes, redactions = g.measureJSON(&cp)
		for i, t := range r.Tools {
			s := g.toolSize(t)
			bytes, redactions = bytes+s.bytes, redactions+s.redactions
			if i > 0 {
				bytes++
			}
		}
		return bytes, redactions
	}
	return g.measureJSON(res)
}

func (g *Server) measureJSON(v any) (bytes, redactions int) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, 0
	}
	red, n := g.redactor.JSON(b)
	return len(red), n
}

// toolSize is a tool definition's measure, from the first time it is asked.
type toolSize struct{ bytes, redactions int }

func (g *Server) toolSize(t *mcp.Tool) toolSize {
	if s, ok := g.toolSizes.Load(t); ok {
		return s.(toolSize)
	}
	var s toolSize
	s.bytes, s.redactions = g.measureJSON(t)
	g.toolSizes.Store(t, s)
	return s
}

func outcomeOf(state *resultNotes, res mcp.Result, err error) audit.Outcome {
	if state.outcome != "" {
		return state.outcome
	}
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams {
			return audit.OutcomeInvalid
		}
		return audit.OutcomeInternal
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
		return audit.OutcomeToolError
	}
	return audit.OutcomeOK
}

// denied records a request refused at the HTTP front. The refusal stands
// whether or not its record can be written; a failure is logged.
func (g *Server) denied(r *http.Request, outcome audit.Outcome, status int, reason string) {
	g.refusedLink(r.Context(), string(outcome))
	ci := requestInfoFrom(r.Context())
	// A reason is porthole's sentence, but it may quote what a client sent
	// (a key of a refused body): redacted and cut like the user agent, and
	// like a client certificate's subject, whose text is the client's.
	rec := audit.Record{
		Kind: audit.KindDenial, RequestID: ci.RequestID, ClientAddr: ci.ClientAddr, ClientCert: g.auditText(ci.ClientCert, audit.MaxUserAgentBytes), Transport: "http", TraceID: g.traceID(r.Context()),
		UserAgent: g.auditText(ci.UserAgent, audit.MaxUserAgentBytes), Outcome: outcome, Status: status,
		Reason: g.auditText(reason, audit.MaxReasonBytes),
	}
	// Denials are budgeted per client address before authentication and
	// per principal after it (a principal may call from many addresses):
	// past the budget they are counted, and summarised once per interval.
	//
	// A denial after authentication (rate limited, an OAuth token without
	// a scope every call needs, a refused body, a 503) names the
	// principal, and for an OAuth token who it named: a reviewer asks who
	// was refused, not only from where.
	key := "addr:" + ci.ClientAddr
	if name, ok := r.Context().Value(principalKey{}).(string); ok {
		key, rec.Principal = "principal:"+name, name
		if id := oauthIdentity(r.Context(), nil); id != nil {
			rec.OAuth = &audit.OAuthCaller{Issuer: id.Issuer, Subject: id.Subject, ClientID: id.ClientID, TokenID: id.TokenID}
		}
	}
	if !g.closed.Load() {
		write, flush := g.denials.Admit(key, rec, time.Now())
		g.writeSummaries(flush)
		if !write {
			return
		}
	}
	// Below the audit disk's minimum the denial is not recorded, which the
	// operations log says once for the episode, not once a denial.
	if err := g.writeDetached(r.Context(), rec); err != nil && !errors.Is(err, audit.ErrLowSpace) {
		g.log.Error("audit denial record not written", zap.String("requestId", ci.RequestID), traceField(r.Context()), zap.Error(err))
	}
}
