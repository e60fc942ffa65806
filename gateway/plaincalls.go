package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// answerPlainCalls answers the plainest tools/call of one of porthole's own
// tools, or in the forms before 2026-07-28 of an upstream's tool served
// now, itself, through the same receiving middleware (followRequest,
// audited, granted) and the same handler the go-sdk would run, and hands
// every other request to the go-sdk's handler, next.
//
// Why: the go-sdk's stateless transport builds a server session for each
// request, with a connection, goroutines and a synthesized initialize, and
// decodes the body several times, each with a fresh 32 KiB buffer. For a
// call that is answered from porthole's own handler that machinery is most
// of the time a call spends outside Temporal and most of its garbage
// (docs/performance.md). Everything it would check of such a call has been
// checked already by the front (strictDecode decoded the body, once,
// strictly), or is checked here; the answer is the bytes the go-sdk would
// have written, which TestPlainCallsAnswerAsTheGoSDKWould holds byte for
// byte.
//
// A request goes to the go-sdk unless all of these hold: a tools/call
// with a string id or an integral one the go-sdk reads as itself;
// params of exactly "name" and, if any, an object "arguments" (no _meta:
// progress and multi-round-trip input are the go-sdk's); a tool of
// porthole's own, or, in the older form only, an upstream's tool served
// now (an upstream's answer is quoted text of up to 1 MiB, which the
// go-sdk's encoder compacts several times over: docs/performance.md has
// what answering it here saves); an Accept of both JSON
// and event streams; no Mcp-Session-Id, Last-Event-ID or other Mcp- header
// the go-sdk would check, and a protocol version header absent or naming a
// version that predates per-request metadata (plainVersions).
//
// A 2026-07-28 call is answered directly too (plainCallOf), where its
// _meta holds exactly the request metadata that version requires, in the
// form the go-sdk accepts, and its Mcp-Method and Mcp-Name headers (which
// strictDecode held to the body) nothing else: the go-sdk's path costs such
// a call 1.7 to 2 times the CPU and ten times the garbage
// (docs/performance.md). Its answer carries the server's name in _meta,
// and, when the tool's handler made it, resultType "complete", as the
// go-sdk writes them (a result of the receiving middleware, such as a
// refusal of a tool not granted, has none).
func (g *Server) answerPlainCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, id, ok := g.plainCallOf(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		g.metrics.direct.Inc()
		var body []byte
		var err error
		if req.Params.Meta != nil {
			// Only a 2026-07-28 answer says whether the handler made the
			// result; the older form's path pays nothing for asking.
			handled := new(bool)
			res, callErr := g.ownToolsChain(context.WithValue(r.Context(), handledKey{}, handled), "tools/call", req)
			body, err = encodeModernAnswer(id, res, callErr, g.impl, *handled)
		} else {
			res, callErr := g.ownToolsChain(r.Context(), "tools/call", req)
			body, err = encodeAnswer(id, res, callErr)
		}
		if err != nil {
			// Only a result that cannot be marshalled gets here, and
			// porthole's results all can (they were marshalled once
			// already, to be redacted).
			g.log.Error("plain tools/call answer not encoded", zap.String("requestId", requestInfoFrom(r.Context()).RequestID), traceField(r.Context()), zap.Error(err))
			http.Error(w, "failed to encode the answer", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// plainCallOf is the call r makes when answerPlainCalls may answer it itself.
func (g *Server) plainCallOf(r *http.Request) (*mcp.CallToolRequest, jsonrpc.ID, bool) {
	env, _ := envelopeFrom(r)
	id, ok := plainID(env.ID)
	if !ok || env.Method != "tools/call" || !plainArguments(env.Arguments) {
		return nil, jsonrpc.ID{}, false
	}
	own := g.ownTools[env.Tool] != nil
	if !own && g.servedHandler(env.Tool) == nil {
		return nil, jsonrpc.ID{}, false
	}
	var meta map[string]any
	switch {
	case env.Plain && plainHeaders(r.Header):
	// An upstream tool's call in 2026-07-28's form stays the go-sdk's:
	// its transport holds Mcp-Param-* headers to the x-mcp-header
	// annotations of the tool's schema, which an upstream may have.
	case own && !env.Plain && modernHeaders(r.Header, env.Tool):
		if meta, ok = modernMeta(env.Params); !ok {
			return nil, jsonrpc.ID{}, false
		}
	default:
		return nil, jsonrpc.ID{}, false
	}
	return &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: env.Tool, Arguments: env.Arguments, Meta: meta},
		Extra:  &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header},
	}, id, true
}

// modernVersion is the protocol version whose calls carry their client's
// metadata in _meta and are answered directly when it is all they carry.
const modernVersion = "2026-07-28"

// The _meta keys of a 2026-07-28 request.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// modernHeaders holds for a 2026-07-28 call of tool whose only Mcp-
// headers are the version, the method and the name, the last two the
// body's (strictDecode refused any other; this path does not rest on it),
// and whose Accept takes both JSON and event streams.
func modernHeaders(h http.Header, tool string) bool {
	if len(h.Values("Last-Event-Id")) > 0 {
		return false
	}
	for name := range h {
		switch name {
		case "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name":
		default:
			if strings.HasPrefix(name, "Mcp-") {
				return false
			}
		}
	}
	if v := h.Values("Mcp-Protocol-Version"); len(v) != 1 || v[0] != modernVersion ||
		len(h.Values("Mcp-Method")) != 1 || len(h.Values("Mcp-Name")) != 1 ||
		h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != tool {
		return false
	}
	return acceptsBoth(h)
}

// modernMeta is the _meta of a 2026-07-28 call's params, when the params
// hold "name", at most "arguments", and "_meta", and the _meta holds the
// protocol version (this version), the client's capabilities, and at most
// its info, each in a form the go-sdk accepts (it decodes them into these
// very types); anything else (a log level, a progress token, a trace
// context) is the go-sdk's to handle.
func modernMeta(params json.RawMessage) (map[string]any, bool) {
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members) != nil || members["_meta"] == nil {
		return nil, false
	}
	for k := range members {
		if k != "name" && k != "arguments" && k != "_meta" {
			return nil, false
		}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(members["_meta"], &meta) != nil {
		return nil, false
	}
	// The capabilities as the go-sdk decodes a 2026-07-28 client's (its
	// clientCapabilitiesV2): the version-1 fields, and roots of this type,
	// deprecated as the feature is. One decode.
	var caps struct {
		mcp.ClientCapabilities
		//lint:ignore SA1019 the go-sdk's own decoding of the field, held to by FuzzModernMetaTheGoSDKAccepts
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	var version string
	if json.Unmarshal(meta[metaProtocolVersion], &version) != nil || version != modernVersion ||
		!isObject(meta[metaClientCapabilities]) || json.Unmarshal(meta[metaClientCapabilities], &caps) != nil {
		return nil, false
	}
	// What the handler is given as the call's _meta: the members as sent
	// (nothing porthole runs reads them but tracing, for a traceparent,
	// which a call answered here does not carry).
	out := make(map[string]any, len(meta))
	for k, v := range meta {
		switch k {
		case metaProtocolVersion, metaClientCapabilities:
		case metaClientInfo:
			var info mcp.Implementation
			if !isObject(v) || json.Unmarshal(v, &info) != nil {
				return nil, false
			}
		default:
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// handledKey marks a direct call's context: callOwnTool sets what it holds
// when the call reached the tool's handler, as the go-sdk marks such a
// result's type.
type handledKey struct{}

// callOwnTool is the go-sdk's tools/call method (its Server.callTool) for
// porthole's own tools and the upstream tools served now: the tool's
// handler, and content that is never null.
func (g *Server) callOwnTool(ctx context.Context, _ string, req mcp.Request) (mcp.Result, error) {
	if handled, ok := ctx.Value(handledKey{}).(*bool); ok {
		*handled = true
	}
	r := req.(*mcp.CallToolRequest)
	h := g.ownTools[r.Params.Name]
	if h == nil {
		// An upstream tool, which answerPlainCalls takes as the go-sdk's
		// server would (its callTool): by the handler registered, or,
		// where the tool was withdrawn since, with its error.
		if h = g.servedHandler(r.Params.Name); h == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", r.Params.Name)}
		}
	}
	res, err := h(ctx, r)
	if err == nil && res != nil && res.Content == nil {
		cp := *res
		cp.Content = []mcp.Content{}
		res = &cp
	}
	return res, err
}

// plainVersions are the protocol versions a call is answered directly
// under: those the go-sdk serves that predate per-request metadata
// (2026-07-28, whose requests the transport checks), and no header, which
// the go-sdk reads as 2025-03-26. porthole does not narrow the server's
// versions (ServerOptions.SupportedProtocolVersions); if it did, this
// would have to follow.
var plainVersions = func() map[string]bool {
	vs := map[string]bool{"": true}
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			vs[v] = true
		}
	}
	return vs
}()

// acceptsBoth holds when h's Accept takes both JSON and event streams, as
// the go-sdk requires of a POST.
func acceptsBoth(h http.Header) bool {
	var jsonOK, streamOK bool
	for _, value := range h.Values("Accept") {
		for _, token := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}

func plainHeaders(h http.Header) bool {
	if len(h.Values("Last-Event-Id")) > 0 {
		return false
	}
	for name := range h {
		if strings.HasPrefix(name, "Mcp-") && name != "Mcp-Protocol-Version" {
			return false
		}
	}
	if v := h.Values("Mcp-Protocol-Version"); len(v) > 1 || !plainVersions[h.Get("Mcp-Protocol-Version")] {
		return false
	}
	return acceptsBoth(h)
}

// plainID is the request's id as the go-sdk would answer with it: a
// string, or an integer it reads exactly (it reads numbers as float64).
func plainID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, false // a notification, or no id: the go-sdk's
	}
	var v any
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	} else {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > 1<<53-1 || n < -(1<<53-1) {
			return jsonrpc.ID{}, false
		}
		v = float64(n)
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// plainArguments holds the arguments the go-sdk would pass to a handler
// unchanged: none, or an object.
func plainArguments(raw json.RawMessage) bool {
	return len(raw) == 0 || raw[0] == '{'
}

// encodeAnswer is the JSON-RPC response the go-sdk would write for a
// call's result or error. A tool result, the common answer, is put
// together here rather than by the go-sdk's encoder, which would compact
// the result (text and structured content, kilobytes) twice more and
// change nothing: the result's own MarshalJSON is json.Marshal's, compact
// already, and the envelope's members are in the go-sdk's order.
func encodeAnswer(id jsonrpc.ID, res mcp.Result, callErr error) ([]byte, error) {
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && callErr == nil {
		result, err := marshalToolResult(r)
		if err != nil {
			return nil, err
		}
		rawID, err := marshalUnescaped(id.Raw())
		if err != nil {
			return nil, err
		}
		b := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(rawID)+len(result))
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, rawID...)
		b = append(b, `,"result":`...)
		b = append(b, result...)
		return append(b, '}'), nil
	}
	resp := &jsonrpc.Response{ID: id, Error: callErr}
	if callErr == nil {
		var err error
		if resp.Result, err = marshalUnescaped(res); err != nil {
			return nil, err
		}
	}
	return jsonrpc.EncodeMessage(resp)
}

// marshalToolResult is r.MarshalJSON(), written directly for porthole's
// own answer (see answer): one text block and the same JSON as structured
// content, nothing else set. json.Marshal would check and compact the
// structured content, and the text block's JSON, once each, byte by byte
// (a large share of porthole's CPU for a page of history events:
// docs/performance.md). The structured content is porthole's own rendering (json.Marshal, then the
// redactor, which re-marshals the string literals it changes, or withAge),
// compact and valid by construction; what compaction would change (space
// outside a string, an HTML character, U+2028 or U+2029) is still looked
// for in one pass (plainCompact), and a result holding any, or an empty
// structured content, takes the go-sdk's path. A 2026-07-28 answer carries
// _meta and always does: the checks that cost nothing come first, so that
// it is not scanned for nothing. TestMarshalToolResultIsTheGoSDKs and
// FuzzMarshalToolResultIsTheGoSDKs hold the bytes to the go-sdk's.
func marshalToolResult(r *mcp.CallToolResult) ([]byte, error) {
	raw, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(r.Content) != 1 {
		return r.MarshalJSON()
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok || tc == nil || tc.Meta != nil || tc.Annotations != nil {
		return r.MarshalJSON()
	}
	// Every other member unset, unexported ones included (a result type
	// the go-sdk set), by value: a copy without the three written here.
	rest := *r
	rest.Content, rest.StructuredContent, rest.IsError = nil, nil, false
	if !reflect.ValueOf(rest).IsZero() || !plainCompact(raw) {
		return r.MarshalJSON()
	}
	text, err := json.Marshal(tc.Text)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(`{"content":[{"type":"text","text":}],"structuredContent":,"isError":true}`)+len(text)+len(raw))
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, `}],"structuredContent":`...)
	b = append(b, raw...)
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

// plainCompact reports whether b, a JSON text porthole rendered, is one
// that encoding/json's compaction (with HTML escaping, as json.Marshal
// does it) leaves as it is: an object or an array, no white space outside
// its strings, no '<', '>' or '&', no U+2028 or U+2029. It does not check
// the grammar: porthole's rendering is json.Marshal's.
func plainCompact(b []byte) bool {
	if len(b) < 2 || (b[0] != '{' && b[0] != '[') || (b[len(b)-1] != '}' && b[len(b)-1] != ']') {
		return false
	}
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			return false
		case in && c == '\\':
			i++ // the escaped byte, whatever it is
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !in
}

// encodeModernAnswer is encodeAnswer for a 2026-07-28 call: a tool
// result carries the server's name in its _meta (unless the tool put one
// there) and, when the tool's handler made it (handled), resultType
// "complete", as the go-sdk writes them (a refusal made
// by the receiving middleware has none); an error is the same as before.
func encodeModernAnswer(id jsonrpc.ID, res mcp.Result, callErr error, impl *mcp.Implementation, handled bool) ([]byte, error) {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || callErr != nil {
		return encodeAnswer(id, res, callErr)
	}
	cp := *r
	cp.Meta = maps.Clone(r.Meta)
	if cp.Meta == nil {
		cp.Meta = map[string]any{}
	}
	if _, ok := cp.Meta[metaServerInfo]; !ok {
		cp.Meta[metaServerInfo] = impl
	}
	body, err := encodeAnswer(id, &cp, nil)
	if err != nil || !handled {
		return body, err
	}
	// body ends with the result's closing brace and the response's.
	return append(body[:len(body)-2], `,"resultType":"complete"}}`...), nil
}

// marshalUnescaped marshals v as the go-sdk writes every message: without
// HTML escaping, and without the encoder's trailing newline.
func marshalUnescaped(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
