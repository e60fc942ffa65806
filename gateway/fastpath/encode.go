package fastpath

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
		rawID, err := MarshalUnescaped(id.Raw())
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
		if resp.Result, err = MarshalUnescaped(res); err != nil {
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
//
// Whole: one pass over the bytes, as a scanner reads them.
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

// MarshalUnescaped marshals v as the go-sdk writes every message: without
// HTML escaping, and without the encoder's trailing newline.
func MarshalUnescaped(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
