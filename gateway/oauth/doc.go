// Package oauth makes porthole an OAuth 2.1 resource server, as the MCP
// authorization specification asks of an HTTP server: it validates the
// access tokens an authorization server issued for porthole, and says who
// is calling.
//
// # Trust model
//
// porthole trusts the issuers its operator names (PORTHOLE_OAUTH_ISSUER),
// and nothing a token says about where to find keys: the keys of an issuer
// are those its own metadata (RFC 8414, or OpenID Connect discovery) names
// in jwks_uri, fetched over HTTPS (HTTP only for a loopback issuer), and a
// token's jku, x5u, x5c or embedded jwk headers make it refused, never
// fetched. A JWT access token is accepted only when:
//
//   - it is signed with RS256, ES256 or EdDSA (never none, never an HMAC),
//     by a key of its issuer's key set, found by its kid (an unknown kid
//     makes porthole fetch the key set again, at most once a minute per
//     issuer: a key rotation is followed, a flood of made-up kids is not);
//   - iss is exactly a configured issuer, aud holds exactly porthole's
//     resource (PORTHOLE_PUBLIC_URL, RFC 8707), exp is present and not
//     past and nbf not ahead, with at most 30 s of leeway;
//   - typ, when present, is at+jwt (RFC 9068) or JWT;
//   - the principal claim (sub by default) holds a value that fits the
//     principal-name rule.
//
// Any other token (opaque) is asked about at the introspection endpoint
// (RFC 7662) when one is configured; a positive answer is held for at most
// 30 s, and never past the token's exp.
//
// What porthole knows of a caller is an Identity: a principal of its own
// namespace ("oauth:<issuer alias>:<claim value>", which no static
// principal can be: the tokens file's names hold no colon), the issuer,
// subject, client id and token id for the audit record, and its scopes and
// selected claims for grants. A token is never passed on (to Temporal or an
// upstream) and never logged.
//
// # Failure
//
// Every refusal is an error wrapping ErrInvalidToken (the client gets 401)
// whose text is for the operations log. An issuer whose metadata or keys
// cannot be had (down, slow, garbage, thousands of keys) makes its tokens
// refused, with the reason in Problem, until it answers; static tokens are
// not this package's concern and keep working. Memory is bounded: tokens
// are capped in size, key sets in number of keys, metadata and key set
// documents in bytes, and the caches of validated tokens in entries.
package oauth
