package rpcdecode

import (
	"encoding/json"
	"net/http"
)

// CodeHeaderMismatch is the JSON-RPC code of a request whose standard MCP
// headers disagree with its body: the go-sdk's mcp.CodeHeaderMismatch.
const CodeHeaderMismatch = -32020

// StandardHeadersSince is the protocol version from which a request
// repeats its method (Mcp-Method) and, for a call, what it names
// (Mcp-Name) in headers, so that a proxy can route without reading the
// body.
const StandardHeadersSince = "2026-07-28"

// CheckHeaders holds a request's standard MCP headers to its body, on the
// terms the go-sdk holds them (its validateMcpHeaders, which
// FuzzHeadersAgreeWithTheGoSDK keeps in step): from protocol version
// 2026-07-28 (any version header that sorts at or after it, as the go-sdk
// compares), Mcp-Method must be present and equal the body's method, and
// for tools/call, prompts/get and resources/read, Mcp-Name must be present
// and equal the body's name (a resource's uri). env and body are a request
// Decode accepted.
//
// A refusal names the header, never its value or the body's: a value cut
// to fit a sentence could end inside a secret (half a
// token reached the audit log), and the client knows what it sent.
//
// Security: porthole's links read the body (the rate limiter charges the
// tool the body names, the audit record names it); something in front of
// porthole may route on the headers. A request whose two say different
// things is refused here, before any link acts on either, rather than
// further in, where the go-sdk would refuse it after porthole had charged
// and recorded one reading of it.
func CheckHeaders(h http.Header, env Envelope, body []byte) error {
	if v := h.Get("Mcp-Protocol-Version"); v == "" || v < StandardHeadersSince {
		return nil
	}
	method := h.Get("Mcp-Method")
	if method == "" {
		return refuse(CodeHeaderMismatch, "the request has no Mcp-Method header, which protocol %s requires", StandardHeadersSince)
	}
	if method != env.Method {
		return refuse(CodeHeaderMismatch, "the Mcp-Method header names another method than the body")
	}
	var name string
	switch env.Method {
	case "tools/call":
		name = env.Tool
	case "prompts/get", "resources/read":
		// Keys exactly so, as the go-sdk reads them (Decode refused
		// case variants, and encoding/json would match "NAME").
		key := "name"
		if env.Method == "resources/read" {
			key = "uri"
		}
		var top, params map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil || json.Unmarshal(top["params"], &params) != nil ||
			(params[key] != nil && json.Unmarshal(params[key], &name) != nil) {
			return refuse(CodeHeaderMismatch, "the body's params name nothing the Mcp-Name header could repeat")
		}
	default:
		return nil
	}
	header := h.Get("Mcp-Name")
	if header == "" {
		return refuse(CodeHeaderMismatch, "the request has no Mcp-Name header, which protocol %s requires of this method", StandardHeadersSince)
	}
	if header != name {
		return refuse(CodeHeaderMismatch, "the Mcp-Name header names another tool, prompt or resource than the body")
	}
	return nil
}
