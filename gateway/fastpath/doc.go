// Package fastpath answers some tools/call requests without the go-sdk's
// transport, writing the bytes the go-sdk would have written. It is the one
// place in porthole that tracks another project's internals: the go-sdk's
// stateless streamable transport, its JSON-RPC encoding and its
// CallToolResult marshalling.
//
// # Glossary
//
// These words mean the same everywhere in porthole:
//
//   - A plain call is a tools/call in the forms before protocol 2026-07-28:
//     params of exactly "name" and, if any, an object "arguments", no _meta,
//     and no Mcp- header but a protocol version that predates per-request
//     metadata (or none).
//   - A modern call is a tools/call of protocol 2026-07-28 whose _meta holds
//     exactly the request metadata that version requires (the protocol
//     version, the client's capabilities, at most its info), and whose
//     Mcp-Method and Mcp-Name headers match its body.
//   - An own tool is one of porthole's read tools over Temporal.
//   - A served tool is an upstream MCP server's tool that porthole serves
//     now, under its served name.
//   - A call answered directly is one this package answers: a plain or
//     modern call of an own tool, or a plain call of a served tool. Every
//     other request goes to the go-sdk's transport. Answered directly or
//     not, a call passes the same receiving middleware and handler.
//
// # Keeping it true
//
// The server's Options.GoSDKOnly turns the fast path off. The tests that
// hold it to the go-sdk run both ways: gateway's
// TestPlainCallsAnswerAsTheGoSDKWould sends each case to a server with the
// fast path and one without and requires the same status, headers, bytes
// and audit records; FuzzModernMetaTheGoSDKAccepts holds the modern calls
// it takes to ones the go-sdk answers; TestMarshalToolResultIsTheGoSDKs and
// FuzzMarshalToolResultIsTheGoSDKs, here, hold each tool result's bytes to
// the go-sdk's. Run them at every go-sdk upgrade (make test does, and make
// fuzz runs the fuzz targets): a new go-sdk version that changes its
// encoding, its headers or its protocol versions fails them.
//
// The package can be deleted when the go-sdk's own transport answers a
// stateless call without building a session, a connection and goroutines
// per request and without decoding the body more than once, so that make
// bench shows the go-sdk's path within the A/A pair's difference of this
// one.
package fastpath
