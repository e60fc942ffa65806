package fastpath

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeAnswer is the JSON-RPC response the go-sdk would write for a
// call's result or error. A tool result, the common answer, is put
// together here rather than by the go-sdk's encoder, which would compact
// the result (text and structured content, kilobytes) twice more and
// change nothing: the result's own MarshalJSON is json.Marshal's, compact
// already, and the envelope's members are in the go-sdk's order.
func encodeAnswer(dst []byte, id jsonrpc.ID, res mcp.Result, callErr error) (b []byte, text, structured Span, err error) {
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && callErr == nil {
		rawID, err := MarshalUnescaped(id.Raw())
		if err != nil {
			return nil, Span{}, Span{}, err
		}
		b = append(dst, `{"jsonrpc":"2.0","id":`...)
		b = append(b, rawID...)
		b = append(b, `,"result":`...)
		if b, text, structured, err = appendToolResult(b, r); err != nil {
			return nil, Span{}, Span{}, err
		}
		return append(b, '}'), text, structured, nil
	}
	resp := &jsonrpc.Response{ID: id, Error: callErr}
	if callErr == nil {
		var err error
		if resp.Result, err = MarshalUnescaped(res); err != nil {
			return nil, Span{}, Span{}, err
		}
	}
	enc, err := jsonrpc.EncodeMessage(resp)
	return append(dst, enc...), Span{}, Span{}, err
}

// marshalToolResult is appendToolResult on its own.
func marshalToolResult(r *mcp.CallToolResult) ([]byte, error) {
	b, _, _, err := appendToolResult(nil, r)
	return b, err
}

// appendToolResult appends r.MarshalJSON(), written directly for porthole's
// own answer (see answer): one text block and the same JSON as structured
// content, nothing else set. json.Marshal would check and compact the
// structured content, and the text block's JSON, once each, byte by byte
// (a large share of porthole's CPU for a page of history events:
// docs/performance.md). The structured content is porthole's own rendering (json.Marshal, then the
// redactor, which re-marshals the string literals it changes, or withAge),
// compact and valid by construction; the text block is that JSON as a
// string, escaped in the same pass (appendCompactAsString) that looks for
// what compaction would change (space outside a string, an HTML
// character, U+2028 or U+2029, bytes that are not UTF-8): a result holding
// any, or an empty structured content, takes the go-sdk's path. A
// 2026-07-28 answer carries _meta and always does: the checks that cost
// nothing come first, so that it is not scanned for nothing.
// TestMarshalToolResultIsTheGoSDKs and FuzzMarshalToolResultIsTheGoSDKs
// hold the bytes to the go-sdk's.
//
// text and structured are where the text block's string literal and the
// structured content lie in what it returns, when it wrote them itself;
// zero Spans when the go-sdk did.
func appendToolResult(dst []byte, r *mcp.CallToolResult) (b []byte, text, structured Span, err error) {
	raw, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(r.Content) != 1 {
		b, err = appendMarshalled(dst, r)
		return b, Span{}, Span{}, err
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok || tc == nil || tc.Meta != nil || tc.Annotations != nil || tc.Text != string(raw) {
		b, err = appendMarshalled(dst, r)
		return b, Span{}, Span{}, err
	}
	// Every other member unset, unexported ones included (a result type
	// the go-sdk set), by value: a copy without the three written here.
	rest := *r
	rest.Content, rest.StructuredContent, rest.IsError = nil, nil, false
	if !reflect.ValueOf(rest).IsZero() {
		b, err = appendMarshalled(dst, r)
		return b, Span{}, Span{}, err
	}
	const head, middle, tail = `{"content":[{"type":"text","text":`, `}],"structuredContent":`, `,"isError":true}`
	// The text is raw with its quotes and backslashes escaped: a tenth
	// more room covers a rendering of many short strings.
	b = slices.Grow(dst, len(head)+len(middle)+len(tail)+2*len(raw)+len(raw)/10+2)
	b = append(b, head...)
	text.Start = len(b)
	b, ok = appendCompactAsString(b, raw)
	text.End = len(b)
	if !ok {
		b, err = appendMarshalled(dst, r)
		return b, Span{}, Span{}, err
	}
	b = append(b, middle...)
	structured.Start = len(b)
	b = append(b, raw...)
	structured.End = len(b)
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), text, structured, nil
}

// appendMarshalled appends r.MarshalJSON().
func appendMarshalled(dst []byte, r *mcp.CallToolResult) ([]byte, error) {
	b, err := r.MarshalJSON()
	return append(dst, b...), err
}

// stringBytes and structureBytes say which bytes appendCompactAsString
// looks at one by one, inside a string of the JSON and outside one: the
// rest it copies in runs.
var stringBytes, structureBytes = func() (in, out [256]bool) {
	for c := 0; c < 256; c++ {
		in[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
		out[c] = in[c] || c == ' '
	}
	return in, out
}()

// appendCompactAsString appends b, a JSON text porthole rendered, as a
// JSON string the way json.Marshal writes one, and reports whether b is
// one that encoding/json's compaction (with HTML escaping, as json.Marshal
// does it) leaves as it is: an object or an array, no white space outside
// its strings, no '<', '>' or '&', no U+2028 or U+2029, no control byte
// and no byte that is not UTF-8. Of such a text, json.Marshal escapes only
// the quotes and backslashes, which is all this writes. It does not check
// the grammar: porthole's rendering is json.Marshal's.
//
// Whole: one pass over the bytes, as a scanner reads them.
func appendCompactAsString(dst, b []byte) ([]byte, bool) {
	if len(b) < 2 || (b[0] != '{' && b[0] != '[') || (b[len(b)-1] != '}' && b[len(b)-1] != ']') {
		return dst, false
	}
	dst = append(dst, '"')
	in := false
	for i := 0; i < len(b); {
		look := &structureBytes
		if in {
			look = &stringBytes
		}
		j := i
		for j < len(b) && !look[b[j]] {
			j++
		}
		dst = append(dst, b[i:j]...)
		if i = j; i == len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			in = !in
			dst = append(dst, '\\', '"')
			i++
		case c == '\\' && in && i+1 < len(b):
			// An escape in the JSON: its backslash, and the escaped byte
			// (a quote or a backslash itself) escaped again.
			dst = append(dst, '\\', '\\')
			if e := b[i+1]; e == '"' || e == '\\' {
				dst = append(dst, '\\', e)
			} else {
				dst = append(dst, e)
			}
			i += 2
		case c >= 0x80:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return dst, false
			}
			dst = append(dst, b[i:i+size]...)
			i += size
		default:
			return dst, false // a space outside a string, a control byte, an HTML character
		}
	}
	return append(dst, '"'), !in
}

// encodeModernAnswer is encodeAnswer for a 2026-07-28 call: a tool
// result carries the server's name in its _meta (unless the tool put one
// there) and, when the tool's handler made it (handled), resultType
// "complete", as the go-sdk writes them (a refusal made
// by the receiving middleware has none); an error is the same as before.
func encodeModernAnswer(dst []byte, id jsonrpc.ID, res mcp.Result, callErr error, impl *mcp.Implementation, handled bool) ([]byte, error) {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || callErr != nil {
		b, _, _, err := encodeAnswer(dst, id, res, callErr)
		return b, err
	}
	cp := *r
	cp.Meta = maps.Clone(r.Meta)
	if cp.Meta == nil {
		cp.Meta = map[string]any{}
	}
	if _, ok := cp.Meta[metaServerInfo]; !ok {
		cp.Meta[metaServerInfo] = impl
	}
	body, _, _, err := encodeAnswer(dst, id, &cp, nil)
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
