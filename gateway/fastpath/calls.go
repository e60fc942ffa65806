package fastpath

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/rpcdecode"
)

// Calls answers plain and modern calls of own tools, and plain calls of
// served tools, itself (see the package doc), and hands every other
// request to the go-sdk's handler. Its fields connect it to the server.
type Calls struct {
	// Own reports whether tool is one of porthole's own tools; Served,
	// whether it is an upstream's tool served now.
	Own, Served func(tool string) bool
	// Call runs a call as the go-sdk's server would: the receiving
	// middleware, in order, around the tools/call method.
	Call mcp.MethodHandler
	// Impl is the server's name and version, which a modern answer
	// carries in its _meta.
	Impl *mcp.Implementation
	// Envelope is the request's body as the front's strict decoder read
	// it, once.
	Envelope func(*http.Request) rpcdecode.Envelope
	// Answered is told of each call answered directly; Failed of an
	// answer that could not be encoded (porthole's results all can).
	Answered func()
	Failed   func(*http.Request, error)
	// Copied, when set, is told where in an answer's body
	// appendToolResult's direct path wrote the structured content, and
	// the text block that is the same JSON as a string: the wire redactor
	// need not read the copy again.
	Copied func(r *http.Request, text, structured Span)
}

// Span is a part of a body, from its first byte to the byte after it.
type Span struct{ Start, End int }

// Handler answers directly what it may, and hands the rest to next.
//
// Why: the go-sdk's stateless transport builds a server session for each
// request, with a connection, goroutines and a synthesized initialize, and
// decodes the body several times, each with a fresh 32 KiB buffer. For a
// call that is answered from porthole's own handler that machinery is most
// of the time a call spends outside Temporal and most of its garbage
// (docs/performance.md). Everything it would check of such a call has been
// checked already by the front (the strict decoder read the body, once),
// or is checked here; the answer is the bytes the go-sdk would have
// written.
//
// A request goes to the go-sdk unless all of these hold: a tools/call
// with a string id or an integral one the go-sdk reads as itself;
// params of exactly "name" and, if any, an object "arguments" (no _meta:
// progress and multi-round-trip input are the go-sdk's); an own tool, or,
// as a plain call only, a served tool (an upstream's answer is quoted
// text of up to 1 MiB, which the go-sdk's encoder compacts several times
// over); an Accept of both JSON and event streams; no Mcp-Session-Id,
// Last-Event-ID or other Mcp- header the go-sdk would check, and a
// protocol version header absent or naming a version that predates
// per-request metadata (plainVersions).
//
// A modern call of an own tool is answered directly too, where its _meta
// holds exactly the request metadata that version requires, in the form
// the go-sdk accepts, and its Mcp-Method and Mcp-Name headers (which the
// strict decoder held to the body) nothing else. Its answer carries the
// server's name in _meta, and, when the tool's handler made it,
// resultType "complete", as the go-sdk writes them (a result of the
// receiving middleware, such as a refusal of a tool not granted, has
// none).
func (c *Calls) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, id, ok := c.callOf(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		c.Answered()
		buf := bodies.Get().(*[]byte)
		defer putBody(buf)
		var body []byte
		var text, structured Span
		var err error
		if req.Params.Meta != nil {
			// Only a modern answer says whether the handler made the
			// result; a plain call's path pays nothing for asking.
			handled := new(bool)
			res, callErr := c.Call(context.WithValue(r.Context(), handledKey{}, handled), "tools/call", req)
			body, err = encodeModernAnswer((*buf)[:0], id, res, callErr, c.Impl, *handled)
		} else {
			res, callErr := c.Call(r.Context(), "tools/call", req)
			body, text, structured, err = encodeAnswer((*buf)[:0], id, res, callErr)
		}
		if err != nil {
			c.Failed(r, err)
			http.Error(w, "failed to encode the answer", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		w.Header().Set("Content-Type", "application/json")
		if text.End > 0 && c.Copied != nil {
			c.Copied(r, text, structured)
		}
		_, _ = w.Write(body)
		*buf = body
	})
}

// bodies are the buffers answers are encoded into, kept for the next
// answer: Write copies what it is given, and an answer of a megabyte
// allocated anew for each call was much of the garbage the collector
// spent its time on.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest buffer kept for reuse.
const maxPooledBody = 8 << 20

func putBody(b *[]byte) {
	if cap(*b) <= maxPooledBody {
		bodies.Put(b)
	}
}

// callOf is the call r makes when Handler may answer it directly.
func (c *Calls) callOf(r *http.Request) (*mcp.CallToolRequest, jsonrpc.ID, bool) {
	env := c.Envelope(r)
	id, ok := plainID(env.ID)
	if !ok || env.Method != "tools/call" || !plainArguments(env.Arguments) {
		return nil, jsonrpc.ID{}, false
	}
	own := c.Own(env.Tool)
	if !own && !c.Served(env.Tool) {
		return nil, jsonrpc.ID{}, false
	}
	var meta map[string]any
	switch {
	case env.Plain && plainHeaders(r.Header):
	// A served tool's modern call stays the go-sdk's: its transport
	// holds Mcp-Param-* headers to the x-mcp-header annotations of the
	// tool's schema, which an upstream may have.
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

// NoteHandled marks ctx's call as reached by its tool's handler: the
// tools/call method calls it, as the go-sdk marks such a result's type.
func NoteHandled(ctx context.Context) {
	if handled, ok := ctx.Value(handledKey{}).(*bool); ok {
		*handled = true
	}
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
	if json.Unmarshal(members["_meta"], &meta) != nil || !modernVersionAndCapabilities(meta) {
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

// modernVersionAndCapabilities holds when a modern call's _meta names this
// version and client capabilities the go-sdk decodes, as it decodes a
// 2026-07-28 client's (its clientCapabilitiesV2): the version-1 fields,
// and roots of this type, deprecated as the feature is. One decode.
func modernVersionAndCapabilities(meta map[string]json.RawMessage) bool {
	var caps struct {
		mcp.ClientCapabilities
		//lint:ignore SA1019 the go-sdk's own decoding of the field, held to by FuzzModernMetaTheGoSDKAccepts
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}
	var version string
	return json.Unmarshal(meta[metaProtocolVersion], &version) == nil && version == modernVersion &&
		isObject(meta[metaClientCapabilities]) && json.Unmarshal(meta[metaClientCapabilities], &caps) == nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// handledKey marks a direct call's context: callOwnTool sets what it holds
// when the call reached the tool's handler, as the go-sdk marks such a
// result's type.
type handledKey struct{}

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

// PlainVersions are the protocol versions a plain call is answered
// directly under ("" for no header), for the tests that compare each with
// the go-sdk's answer.
func PlainVersions() []string { return slices.Sorted(maps.Keys(plainVersions)) }

// TakesModernMeta reports whether a modern call's params, as sent, hold
// _meta the fast path answers directly, for the fuzz target that holds it
// to what the go-sdk accepts.
func TakesModernMeta(params json.RawMessage) bool {
	_, ok := modernMeta(params)
	return ok
}
