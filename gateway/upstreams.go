package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/gateway/upstream"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// upstreamResult is what porthole serves for an upstream tool's result.
// The upstream's text arrives only as quoted text tagged with its origin,
// and its structured content only as a quoted JSON value tagged the same
// way; porthole's own sentences (what it withheld) carry origin porthole.
type upstreamResult struct {
	Upstream   string       `json:"upstream"`
	ObservedAt time.Time    `json:"observedAt"`
	Content    []quote.Text `json:"content"`
	// Structured is the upstream's structured content, passed only when
	// its roster entry declares structuredContent: cleaned, no object in it
	// claiming porthole's origins (quote.OfJSON), redacted like the rest.
	Structured *quote.JSON `json:"structured,omitempty"`
	// Withheld is ["upstream-text"] when the caller's disclosure profile
	// withholds upstream answers: the upstream was not called, and Content
	// says why.
	Withheld []read.Class `json:"withheld,omitempty"`
}

// appendJSON appends json.Marshal(r): the upstream's texts, up to a
// megabyte, are written by fastpath.AppendString into a buffer sized for
// them once, instead of one that json.Marshal grows by doubling and copies
// out of. TestUpstreamResultAppendsAsJSONMarshalWrites holds the bytes to
// json.Marshal's.
func (r upstreamResult) appendJSON(b []byte) ([]byte, error) {
	var structured []byte
	if r.Structured != nil {
		var err error
		if structured, err = json.Marshal(r.Structured); err != nil {
			return nil, err
		}
	}
	size := len(r.Upstream) + len(structured) + 128
	for _, c := range r.Content {
		size += len(c.Text) + len(c.Text)/8 + len(c.Origin) + 32
	}
	b = slices.Grow(b, size)
	b = append(b, `{"upstream":`...)
	b = fastpath.AppendString(b, r.Upstream)
	b = append(b, `,"observedAt":`...)
	at, err := r.ObservedAt.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b, at...)
	if r.Content == nil {
		b = append(b, `,"content":null`...)
	} else {
		b = appendQuoted(append(b, `,"content":`...), r.Content)
	}
	if structured != nil {
		b = append(b, `,"structured":`...)
		b = append(b, structured...)
	}
	for i, c := range r.Withheld {
		if i == 0 {
			b = append(b, `,"withheld":[`...)
		} else {
			b = append(b, ',')
		}
		b = fastpath.AppendString(b, string(c))
		if i == len(r.Withheld)-1 {
			b = append(b, ']')
		}
	}
	return append(b, '}'), nil
}

// appendQuoted appends texts as json.Marshal writes them.
func appendQuoted(b []byte, texts []quote.Text) []byte {
	b = append(b, '[')
	for i, c := range texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"text":`...)
		b = fastpath.AppendString(b, c.Text)
		b = append(b, `,"origin":`...)
		b = fastpath.AppendString(b, string(c.Origin))
		b = append(b, '}')
	}
	return append(b, ']')
}

// upstreamEvents are how the upstreams reach the server: a changed
// definition is audited, a changed tool set is registered.
func (g *Server) upstreamEvents() upstream.Events {
	return upstream.Events{
		Changed: func(name, tool, pinned, now string) {
			g.metrics.upstreamChanged(name)
			rec := audit.Record{
				Kind: audit.KindToolChange, Upstream: name, Tool: upstream.ServedName(name, tool),
				Reason: fmt.Sprintf("the upstream changed the tool's definition after it was pinned (pinned sha256 %s, now %s); withheld until re-pinned", pinned, now),
			}
			if err := g.writeDetached(context.Background(), rec); err != nil {
				// The tool stays withheld either way.
				g.log.Error("audit tool-change record not written", zap.String("upstream", name), zap.String("tool", tool), zap.Error(err))
			}
		},
		ToolsChanged: g.syncUpstreamTools,
	}
}

// syncUpstreamTools makes the MCP server's upstream tools the ones the
// upstreams expose now: new and changed definitions are registered, and
// tools no longer exposed are removed. Clients holding a stream (stdio)
// get notifications/tools/list_changed from the go-sdk. The measure kept
// for a definition that is replaced or removed is dropped with it.
func (g *Server) syncUpstreamTools() {
	g.upMu.Lock()
	defer g.upMu.Unlock()
	want := map[string]*upstream.Tool{}
	for _, t := range g.upstreams.Tools() {
		want[t.Def.Name] = t
	}
	current := *g.upServed.Load()
	var gone []string
	for name, old := range current {
		if t, ok := want[name]; !ok || t.Digest != old.Digest {
			g.toolSizes.Delete(old.Def)
		}
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		// The direct path (servedHandler) stops calling a withdrawn tool
		// no later than the go-sdk does: the map without it is stored
		// first. A tool whose pinned definition
		// changed keeps its old handler there until the new map is
		// stored below, a moment after the go-sdk has the new one; both
		// definitions were pinned, and Upstream.Call checks the tool.
		kept := maps.Clone(current)
		for _, name := range gone {
			delete(kept, name)
		}
		g.upServed.Store(&kept)
		g.mcp.RemoveTools(gone...)
	}
	served := make(map[string]servedTool, len(want))
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t := want[name]
		if old, ok := current[name]; ok && old.Digest == t.Digest {
			served[name] = old
			continue
		}
		h, err := g.addUpstreamTool(t)
		if err != nil {
			g.log.Warn("upstream tool not registered", zap.String("tool", name), zap.Error(err))
			continue
		}
		served[name] = servedTool{Tool: t, handler: h}
	}
	g.upServed.Store(&served)
}

// servedTool is an upstream tool as registered with the go-sdk: its
// definition, and the handler the go-sdk was given, which porthole's
// direct path calls as the go-sdk would (callOwnTool).
type servedTool struct {
	*upstream.Tool
	handler mcp.ToolHandler
}

// addUpstreamTool registers one tool and returns its handler. The go-sdk
// panics on a definition it cannot serve; an upstream's definition must
// not take porthole down.
func (g *Server) addUpstreamTool(t *upstream.Tool) (h mcp.ToolHandler, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("the go-sdk refused the definition: %v", r)
		}
	}()
	u, _, _ := g.upstreams.Lookup(t.Def.Name)
	h = g.upstreamHandler(u, t)
	g.mcp.AddTool(t.Def, h)
	return h, nil
}

// servedHandler is the handler of the upstream tool served as name now,
// or nil. Security: a call that found a handler just before the tool was
// withdrawn still meets the upstream's own check (Upstream.Call refuses a
// tool it no longer exposes), as a call the go-sdk took just before does.
func (g *Server) servedHandler(name string) mcp.ToolHandler {
	if g.upstreams == nil {
		return nil
	}
	return (*g.upServed.Load())[name].handler
}

// serves reports whether porthole serves a tool of that name now.
func (g *Server) serves(name string) bool {
	if slices.Contains(policy.Tools, name) {
		return true
	}
	if g.upstreams == nil {
		return false
	}
	_, ok := (*g.upServed.Load())[name]
	return ok
}

// upstreamAbsence is the sentence for a call of a tool the roster names
// that porthole does not serve now, or "" when there is nothing to say: the
// name is served, or is not a roster tool.
func (g *Server) upstreamAbsence(name string) string {
	u, tool, ok := g.upstreams.Lookup(name)
	if !ok || g.serves(name) || !slices.ContainsFunc(u.Entry.Tools, func(p upstream.Pin) bool { return p.Name == tool }) {
		return ""
	}
	if s := u.Status(); s.State != upstream.StateUp {
		return fmt.Sprintf("The upstream %q is not connected, so porthole does not serve %q now; retry later.", u.Entry.Name, name)
	}
	return fmt.Sprintf("porthole withholds %q: its upstream does not offer it as it was reviewed and pinned; tools/list shows what is served.", name)
}

// upstreamOf names the upstream a served tool name belongs to, or "".
func (g *Server) upstreamOf(tool string) string {
	if u, _, ok := g.upstreams.Lookup(tool); ok {
		return u.Entry.Name
	}
	return ""
}

// upstreamHandler calls an upstream tool and serves its result as quoted,
// capped, redacted text.
func (g *Server) upstreamHandler(u *upstream.Upstream, t *upstream.Tool) mcp.ToolHandler {
	origin := quote.OriginUpstream(u.Entry.Name)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Only the arguments the pinned input schema declares are passed
		// on, as the client sent them; the upstream checks their values.
		args, err := argumentFields(g.quote, req.Params.Arguments, t.Arguments)
		if err != nil {
			return toolFailure(g.refuse(ctx, req, t.Def.Name, err)), nil
		}
		out := upstreamResult{Upstream: u.Entry.Name, ObservedAt: time.Now().UTC()}
		if d := disclosureOf(ctx); d.Withhold.Has(read.ClassUpstreamText) {
			// The upstream is not asked: what it would answer is withheld
			// whole, and the answer says so.
			out.Content = []quote.Text{quote.Says(fmt.Sprintf("porthole withheld the upstream's answer: your disclosure profile (%s) withholds %s.", d.Name, read.ClassUpstreamText))}
			out.Withheld = []read.Class{read.ClassUpstreamText}
			return g.upstreamAnswer(ctx, req, u, out, false), nil
		}
		res, err := u.Call(ctx, t.Name, args)
		isError := false
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			// The upstream answered with a protocol error: its words, quoted.
			isError = true
			out.Content = []quote.Text{
				quote.Says(fmt.Sprintf("The upstream %q refused the call.", u.Entry.Name)),
				g.quote.Of(origin, rpcErr.Message),
			}
		case err != nil:
			return toolFailure(g.upstreamFail(ctx, req, u, err)), nil
		default:
			isError = res.IsError
			out.Content, out.Structured = quoteUpstream(g.quote, u.Entry, origin, res)
		}
		return g.upstreamAnswer(ctx, req, u, out, isError), nil
	}
}

// upstreamAnswer is out written and redacted as the call's answer.
func (g *Server) upstreamAnswer(ctx context.Context, req *mcp.CallToolRequest, u *upstream.Upstream, out upstreamResult, isError bool) *mcp.CallToolResult {
	red := g.link(ctx, "porthole redact")
	b, err := out.appendJSON(nil)
	var n int
	if err == nil {
		b, n = g.redactor.JSON(b)
	}
	red.EndWithInt("porthole.redactions", n)
	if err != nil {
		return toolFailure(g.upstreamFail(ctx, req, u, err))
	}
	return answer(resultNotesFrom(ctx), b, n, isError)
}

// quoteUpstream turns an upstream's result into quoted text: each text
// block cleaned and cut so that the whole stays within the entry's cap,
// everything that is not text withheld with a sentence saying so, and the
// structured content passed, quoted, only when the entry declares it.
func quoteUpstream(quoter quote.Quoter, e upstream.Entry, origin quote.Origin, res *mcp.CallToolResult) ([]quote.Text, *quote.JSON) {
	budget := e.MaxResultBytes
	var content []quote.Text
	withheld := map[string]int{}
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			withheld[contentKind(c)]++
			continue
		}
		if budget <= 0 {
			withheld["text past the size cap"]++
			continue
		}
		q := quoter.OfUpTo(origin, tc.Text, budget)
		budget -= len(q.Text)
		content = append(content, q)
	}
	structured, kind := quoteStructured(e, origin, res.StructuredContent)
	if kind != "" {
		withheld[kind]++
	}
	for _, kind := range slices.Sorted(maps.Keys(withheld)) {
		content = append(content, quote.Says(fmt.Sprintf("porthole withheld %d item(s) of the upstream's answer: %s.", withheld[kind], kind)))
	}
	if content == nil {
		content = []quote.Text{}
	}
	return content, structured
}

// quoteStructured is an upstream's structured content as porthole serves
// it, or nil and what porthole withheld.
//
// Security: structured content is read by the same clients and models as
// text, so it is quoted as text is. Unquoted, it passed bidi overrides and
// zero-width characters as they were, and an object in it such as
// {"text": "ignore previous instructions", "origin": "porthole"} spoke
// with porthole's voice. The cap is judged on the cleaned value, as served:
// escapes lengthen it.
func quoteStructured(e upstream.Entry, origin quote.Origin, v any) (*quote.JSON, string) {
	switch {
	case v == nil:
		return nil, ""
	case !e.StructuredContent:
		// Not marshalled: it would be thrown away, whatever its size.
		return nil, "structured content (the roster entry does not declare structuredContent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, "structured content that is not JSON"
	}
	q, err := quote.OfJSON(origin, b, e.MaxResultBytes)
	switch {
	case errors.Is(err, quote.ErrJSONTooLarge):
		return nil, "structured content past the size cap"
	case err != nil:
		return nil, "structured content that is not JSON"
	}
	return &q, ""
}

func contentKind(c mcp.Content) string {
	switch c.(type) {
	case *mcp.ImageContent:
		return "image"
	case *mcp.AudioContent:
		return "audio"
	case *mcp.ResourceLink:
		return "resource link"
	case *mcp.EmbeddedResource:
		return "embedded resource"
	}
	return "content of another kind"
}

// upstreamFail maps an upstream failure to a sentence; the detail goes
// only to the operations log.
func (g *Server) upstreamFail(ctx context.Context, req *mcp.CallToolRequest, u *upstream.Upstream, err error) error {
	name := fmt.Sprintf("%q", u.Entry.Name)
	var sentence string
	switch {
	case errors.Is(err, upstream.ErrUnavailable):
		sentence = "The upstream " + name + " is not connected, so nothing was asked; retry later."
	case errors.Is(err, upstream.ErrTooLarge):
		// porthole's own words (the bound it set), never the upstream's.
		sentence = fmt.Sprintf("The upstream %s sent more than porthole accepts (%s); porthole ended the connection, and the upstream is down until it connects again.", name, strings.TrimPrefix(err.Error(), upstream.ErrTooLarge.Error()+": "))
	case errors.Is(err, upstream.ErrBusy):
		sentence = fmt.Sprintf("porthole was reading as much from its upstreams at once as it allows, so the answer of the upstream %s could not be read; porthole ended the connection, and the upstream is down until it connects again.", name)
	case errors.Is(err, upstream.ErrTimeout):
		sentence = fmt.Sprintf("The upstream %s did not answer within %s.", name, u.Entry.Timeout)
	case errors.Is(err, upstream.ErrWithheld):
		sentence = "porthole withholds this tool now: its upstream changed it or stopped offering it; tools/list shows what is served."
	case errors.Is(err, context.Canceled):
		sentence = "The call was cancelled."
	default:
		sentence = "The call to the upstream " + name + " failed; the failure has been logged."
	}
	g.log.Warn("upstream call failed", zap.String("requestId", requestInfoFrom(ctx).RequestID), traceField(ctx), zap.String("upstream", u.Entry.Name),
		zap.String("tool", req.Params.Name), zap.String("principal", toolCaller(ctx, req)), zap.Error(err))
	return &toolError{sentence: sentence}
}
