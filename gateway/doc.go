// Package gateway is porthole's front: the MCP server and its fixed tool
// set, the HTTP transport behind bearer authentication, and the stdio
// transport.
//
// # Trust model
//
// Everything a client sends is untrusted: the HTTP request, its headers, the
// JSON-RPC body and the tool arguments. The gateway trusts only the token
// digests it loaded and the [read.Reader] it was given. It never sees the
// Temporal SDK or a Temporal credential: it imports the result types of
// package temporal/read and nothing else of Temporal, and a dependency test
// holds it to that.
//
// # The path of one call
//
// [Server.Handler] assembles the HTTP front and lists its links in the order
// a request passes them, with why each sits where it does; [NewServer]
// lists the MCP layer's receiving middleware (follow the request, audit,
// grants) in order, and the tool handlers in tools.go do the rest (argument
// bounds and query screening, the cache, the read, rendering). Each link is
// a file named by what it holds: recover.go, requestinfo.go,
// clientaddr.go, redaction.go, hostorigin.go, auth.go and auth_oauth.go,
// decode.go, ratelimit.go, refusals.go, then follow.go, audit.go,
// grants.go, tools.go, cache.go and render.go, each with its tests beside
// it. Mechanisms that need nothing of the gateway are leaf packages:
// rpcdecode (strict decoding), tokens (the tokens file and bearer parsing),
// limit (the buckets and the failed-auth limiter). Only POST /mcp is
// served. GET and DELETE on /mcp answer 405 (a stateless server has no
// stream to resume and no session to end); every other path is 404, and
// the admin paths (/healthz, /readyz, /metrics) live on a listener of their
// own ([Server.AdminHandler]). stdio takes the same path from the MCP server
// on, as principal "local".
//
// # Authentication
//
// A request needs exactly one Authorization header of the form
// "Bearer <token>", scheme spelled exactly so. The token's SHA-256 digest is
// looked up among the configured digests; the file of digests names a
// principal per line (see [github.com/porthole-dev/porthole/gateway/tokens.Set]).
// A valid token is admitted before the failed-auth limit is consulted, so
// failures from its address cannot lock it out. A refusal is 401 with
// WWW-Authenticate: Bearer (and error="invalid_token" when a token was sent)
// and a fixed body that says nothing about why. The principal reaches tool
// handlers the go-sdk's way, as TokenInfo.UserID, set by auth.RequireBearerToken
// with porthole's verifier.
//
// # Errors
//
// A tool that fails returns a tool error whose text is a fixed sentence for
// the failure's kind (not found, malformed, throttled, unavailable); the
// detail goes to the operations log only. A failed read is never an empty
// success.
package gateway
